-- report critical-path, "segments": each step's path in time order; start_us
-- from the path's start, pct of the path.
SELECT c.step, c.seq, c.rank, c.kind, c.name, c.pg, coalesce(g.dim, c.pg) AS dim,
       round((c.start_ns - t.t0) / 1e3, 3) AS start_us, round((c.end_ns - c.start_ns) / 1e3, 3) AS dur_us,
       round(c.compute_ns / 1e3, 3) AS compute_us,
       CASE WHEN c.kind = 'work' THEN round((c.end_ns - c.start_ns - c.compute_ns) / 1e3, 3) END AS host_us,
       round(100.0 * (c.end_ns - c.start_ns) / nullif(t.total, 0), 2) AS pct
FROM critical_path c
JOIN (SELECT step, min(start_ns) AS t0, sum(end_ns - start_ns) AS total FROM critical_path GROUP BY step) t
  ON t.step = c.step
LEFT JOIN process_groups g ON g.pg = c.pg
ORDER BY c.step, c.seq;

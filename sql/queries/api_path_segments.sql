-- /api/path/{step}: the step's critical path (critical_path), times
-- relative to ?2 (the timeline's origin).
SELECT c.seq, c.rank, c.kind, c.name, c.pg, coalesce(g.dim, c.pg) AS dim,
       c.start_ns - ?2 AS start_ns, c.end_ns - ?2 AS end_ns, c.compute_ns
FROM critical_path c
LEFT JOIN process_groups g ON g.pg = c.pg
WHERE c.step = ?1
ORDER BY c.seq;

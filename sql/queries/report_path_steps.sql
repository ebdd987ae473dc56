-- report critical-path, "steps": per step, the path's length (the step's
-- duration as the rank that ended it last saw it) and its largest shares:
-- a rank's compute (its computation kernels ran) or host time (the CPU,
-- launch gaps, an idle GPU) in a phase, or a collective's transfer
-- (analysis/cross_rank/critical_path.h).
WITH parts AS (
    SELECT step, rank, 'compute' AS what, name, compute_ns AS ns FROM critical_path WHERE kind = 'work'
    UNION ALL
    SELECT step, rank, 'host', name, end_ns - start_ns - compute_ns FROM critical_path WHERE kind = 'work'
    UNION ALL
    SELECT c.step, NULL, 'comm', c.name || coalesce(' on ' || coalesce(g.dim, c.pg), ''), c.end_ns - c.start_ns
    FROM critical_path c LEFT JOIN process_groups g ON g.pg = c.pg WHERE c.kind = 'comm'
),
agg AS (
    SELECT step, rank, what, name, sum(ns) AS ns FROM parts GROUP BY step, rank, what, name HAVING sum(ns) > 0
),
tot AS (
    SELECT step, sum(end_ns - start_ns) AS total, count(*) AS segments,
           count(DISTINCT rank) AS ranks FROM critical_path GROUP BY step
),
ranked AS (
    SELECT a.*, t.total, row_number() OVER (PARTITION BY a.step ORDER BY a.ns DESC, a.rank, a.name) AS k
    FROM agg a JOIN tot t ON t.step = a.step
)
SELECT t.step, round(t.total / 1e6, 3) AS path_ms, t.segments, t.ranks,
       (SELECT group_concat(part, ', ') FROM (
            SELECT printf('%.1f %% %s', 100.0 * r.ns / r.total,
                          CASE r.what WHEN 'comm' THEN r.name || ' (transfer)'
                                      ELSE 'rank ' || r.rank || ' ' || r.name || ' (' || r.what || ')' END) AS part
            FROM ranked r WHERE r.step = t.step AND r.k <= 4 ORDER BY r.k)) AS summary
FROM tot t
ORDER BY t.step;

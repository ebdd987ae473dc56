-- /api/path: each step with a critical path, its extent relative to ?1 (the
-- timeline's origin) and its length.
SELECT step, min(start_ns) - ?1 AS start_ns, max(end_ns) - ?1 AS end_ns, sum(end_ns - start_ns) AS path_ns
FROM critical_path
GROUP BY step
ORDER BY step;

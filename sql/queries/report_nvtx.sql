-- report nvtx: record_function / NVTX ranges stitched across ranks
-- (analysis/cross_rank/nvtx_stitch.c); times in us after the first stitched range.
SELECT s.str AS name, n.path, n.step, n.occurrence, n.ranks,
       round((n.first_enter_ns - (SELECT min(first_enter_ns) FROM nvtx_stitched)) / 1000.0, 3) AS first_enter_us,
       round((n.last_enter_ns - (SELECT min(first_enter_ns) FROM nvtx_stitched)) / 1000.0, 3) AS last_enter_us,
       round(n.skew_ns / 1000.0, 3) AS skew_us,
       n.late_rank,
       round(n.gpu_ns / 1000.0, 3) AS gpu_us,
       n.gpu_ops
FROM nvtx_stitched n
LEFT JOIN strings s ON s.id = n.name
ORDER BY n.first_enter_ns, n.id;

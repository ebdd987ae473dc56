-- report temporal: HTA's temporal breakdown per rank (?1 = mode).
SELECT rank, idle_us, compute_us, non_compute_us, kernel_us,
       idle_pct, compute_pct, non_compute_pct
FROM a_temporal
WHERE mode = ?1 AND has_gpu
ORDER BY rank;

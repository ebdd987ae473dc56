-- report kernels: the ?2 longest kernels per rank by total time (?1 = mode).
SELECT rank, name, kernel_type, count, sum_us, mean_us, min_us, max_us, std_us
FROM (SELECT k.rank, s.str AS name, k.class AS kernel_type, k.count, k.sum_us,
             round(k.mean_us, 3) AS mean_us, k.min_us, k.max_us, round(k.std_us, 3) AS std_us,
             row_number() OVER (PARTITION BY k.rank ORDER BY k.sum_us DESC, s.str) AS pos
      FROM a_kernels k LEFT JOIN strings s ON s.id = k.name
      WHERE k.mode = ?1)
WHERE pos <= ?2
ORDER BY rank, sum_us DESC, name;

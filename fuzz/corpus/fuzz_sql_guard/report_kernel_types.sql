-- report kernels: HTA's kernel-type breakdown summed over the ranks (?1 = mode),
-- disjoint labels such as "COMPUTATION overlapping COMMUNICATION".
SELECT label AS kernel_type, sum(us) AS sum_us,
       round(100.0 * sum(us) / (SELECT sum(us) FROM a_kernel_labels WHERE mode = ?1), 1) AS percentage
FROM a_kernel_labels
WHERE mode = ?1
GROUP BY label
HAVING sum(us) > 0
ORDER BY sum(us) DESC;

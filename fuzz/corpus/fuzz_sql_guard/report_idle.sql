-- report idle: GPU idle time per stream by cause, with HTA's ratios (?1 = mode).
SELECT rank, stream, host_wait_us, kernel_wait_us, other_us,
       round(1.0 * host_wait_us / nullif(host_wait_us + kernel_wait_us + other_us, 0), 2) AS host_wait_ratio,
       round(1.0 * kernel_wait_us / nullif(host_wait_us + kernel_wait_us + other_us, 0), 2) AS kernel_wait_ratio,
       round(1.0 * other_us / nullif(host_wait_us + kernel_wait_us + other_us, 0), 2) AS other_ratio
FROM a_idle
WHERE mode = ?1
ORDER BY rank, stream;

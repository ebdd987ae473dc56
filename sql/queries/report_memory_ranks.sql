-- report memory, "ranks": per rank and device (-1 the CPU), the peak of
-- allocated and reserved bytes over the run, and the step and phase where
-- allocated peaked (the first such cell in time) (memory_peaks,
-- analysis/cross_rank/memory_peaks.h).
WITH cells AS (
    SELECT *, row_number() OVER (PARTITION BY rank, device ORDER BY allocated_bytes DESC, peak_ns) AS k
    FROM memory_peaks
)
SELECT rank, device, sum(samples) AS samples,
       max(allocated_bytes) AS peak_allocated_bytes,
       round(max(allocated_bytes) / 1048576.0, 1) AS peak_allocated_mib,
       max(reserved_bytes) AS peak_reserved_bytes,
       round(max(reserved_bytes) / 1048576.0, 1) AS peak_reserved_mib,
       max(CASE WHEN k = 1 THEN step END) AS peak_step,
       max(CASE WHEN k = 1 THEN phase END) AS peak_phase,
       max(CASE WHEN k = 1 THEN peak_ns END) AS peak_ns
FROM cells
GROUP BY rank, device
ORDER BY rank, device;

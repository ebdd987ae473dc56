-- report memory, "steps": per rank, device and ProfilerStep, the peaks of
-- allocated and reserved bytes and the phase where allocated peaked.
WITH cells AS (
    SELECT *, row_number() OVER (PARTITION BY rank, device, step ORDER BY allocated_bytes DESC, peak_ns) AS k
    FROM memory_peaks WHERE step IS NOT NULL
)
SELECT rank, device, step,
       max(allocated_bytes) AS peak_allocated_bytes,
       round(max(allocated_bytes) / 1048576.0, 1) AS peak_allocated_mib,
       max(reserved_bytes) AS peak_reserved_bytes,
       max(CASE WHEN k = 1 THEN phase END) AS peak_phase
FROM cells
GROUP BY rank, device, step
ORDER BY rank, device, step;

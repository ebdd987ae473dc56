-- report memory, "phases": per rank, device and phase (forward, backward,
-- optimizer, other), the largest allocated peak over the steps and its
-- mean over the steps that have the phase.
SELECT rank, device, phase, count(step) AS steps,
       max(allocated_bytes) AS peak_allocated_bytes,
       round(max(allocated_bytes) / 1048576.0, 1) AS peak_allocated_mib,
       CAST(round(avg(CASE WHEN step IS NOT NULL THEN allocated_bytes END)) AS INTEGER) AS mean_step_peak_bytes,
       max(reserved_bytes) AS peak_reserved_bytes
FROM memory_peaks
GROUP BY rank, device, phase
ORDER BY rank, device, CASE phase WHEN 'forward' THEN 0 WHEN 'backward' THEN 1 WHEN 'optimizer' THEN 2 ELSE 3 END;

-- /api/ranks: each rank's identity and clock model.
SELECT rank, host, pid, world_size, backend, rank_source,
       clock_offset_ns AS offset_ns, clock_drift_ppm AS drift_ppm, clock_method AS method,
       clock_uncertainty_ns AS uncertainty_ns, complete
FROM ranks
ORDER BY rank;

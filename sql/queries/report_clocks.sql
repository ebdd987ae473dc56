-- report clocks: each rank's clock model (sign convention in ARCHITECTURE.md).
SELECT rank, clock_offset_ns AS offset_ns, clock_drift_ppm AS drift_ppm,
       clock_method AS method, clock_uncertainty_ns AS uncertainty_ns
FROM ranks
ORDER BY rank;

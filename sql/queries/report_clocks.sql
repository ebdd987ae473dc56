-- report clocks: each rank's clock model (sign convention: docs/ANALYSES.md section 4)
-- and its check against the collectives' exits (clock_checks, written by
-- analysis/cross_rank/clock_refine.c): samples used, the median exit difference to the
-- reference rank before and after, their scatter, and clock condition
-- violations left after alignment (repaired in the matched records).
-- The clock steps are added from report_clocks_steps.sql.
SELECT r.rank, r.clock_offset_ns AS offset_ns, r.clock_drift_ppm AS drift_ppm,
       r.clock_method AS method, r.clock_uncertainty_ns AS uncertainty_ns,
       k.samples AS check_samples,
       round(k.before_ns / 1000.0, 3) AS exit_lag_before_us,
       round(k.after_ns / 1000.0, 3) AS exit_lag_after_us,
       round(k.resid_ns / 1000.0, 3) AS exit_scatter_us,
       k.violations
FROM ranks r
LEFT JOIN clock_checks k ON k.rank = r.rank
ORDER BY r.rank;

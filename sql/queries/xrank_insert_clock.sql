-- One rank's clock check against collectives (analysis/cross_rank/clock_refine.c).
INSERT OR REPLACE INTO clock_checks (rank, reference, samples, before_ns, after_ns, resid_ns,
                                     fit_offset_ns, fit_drift_ppm, fit_ref_ns, applied,
                                     violations, repair_max_ns)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12);

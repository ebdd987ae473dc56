-- One rank's row, rewritten at each commit as its clock and facts may
-- change (store/analysis_rows.c).
INSERT OR REPLACE INTO ranks (rank, host, pid, world_size, backend, rank_source, base_time_ns,
                              clock_offset_ns, clock_drift_ppm, clock_ref_ns, clock_method,
                              clock_uncertainty_ns, complete, batches, pg_config, device_props,
                              nccl_version, trace_meta, trace_flags)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19);

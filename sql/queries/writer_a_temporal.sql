-- One rank's temporal breakdown under mode ?1 (store/analysis_rows.c).
INSERT INTO a_temporal (mode, rank, has_gpu, idle_us, compute_us, non_compute_us, kernel_us,
                        idle_pct, compute_pct, non_compute_pct)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10);

-- One kernel name's statistics on a rank under mode ?1 (store/analysis_rows.c).
INSERT INTO a_kernels (mode, rank, name, class, count, sum_us, min_us, max_us, mean_us, std_us)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10);

-- One stream's idle time by cause under mode ?1 (store/analysis_rows.c).
INSERT INTO a_idle (mode, rank, stream, host_wait_us, kernel_wait_us, other_us)
VALUES (?1, ?2, ?3, ?4, ?5, ?6);

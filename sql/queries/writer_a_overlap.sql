-- One rank's communication/computation overlap under mode ?1
-- (store/analysis_rows.c).
INSERT INTO a_overlap (mode, rank, comm_us, overlap_us, overlap_pct)
VALUES (?1, ?2, ?3, ?4, ?5);

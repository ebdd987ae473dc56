-- How many events of one file were skipped, and why (store/analysis_rows.c).
INSERT INTO skipped (rank, file, reason, count) VALUES (?1, ?2, ?3, ?4);

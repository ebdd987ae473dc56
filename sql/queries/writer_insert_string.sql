-- One row of the strings dimension table (store/analysis_rows.c).
INSERT INTO strings (id, str) VALUES (?1, ?2);

-- One source file of a rank, written by _finish (store/analysis_rows.c).
INSERT INTO files (rank, path, batches, slices) VALUES (?1, ?2, ?3, ?4);

-- One track, rewritten at each commit as its name may change
-- (store/analysis_rows.c).
INSERT OR REPLACE INTO tracks (id, rank, kind, pid, tid, name) VALUES (?1, ?2, ?3, ?4, ?5, ?6);

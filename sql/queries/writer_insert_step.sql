-- One ProfilerStep of a batch (store/rows.c); a step a rank sends twice
-- keeps its first row.
INSERT INTO steps (rank, number, slice, ts, dur) VALUES (?1, ?2, ?3, ?4, ?5)
ON CONFLICT (rank, number) DO NOTHING;

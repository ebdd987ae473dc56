-- One step of a batch (store/rows.c); a step a rank sends twice keeps its
-- first row. ?3 slice is NULL for inferred steps; ?6 source.
INSERT INTO steps (rank, number, slice, ts, dur, source) VALUES (?1, ?2, ?3, ?4, ?5, ?6)
ON CONFLICT (rank, number) DO NOTHING;

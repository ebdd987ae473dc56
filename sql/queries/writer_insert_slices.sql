-- The head of the slice insert: store/rows.c appends SLICE_ROWS tuples of
-- 14 parameters (one per column below) to it. The id is left to SQLite.
INSERT INTO slices (track, ts, dur, name, cat, cat_name, depth, parent, correlation,
                    external_id, bytes, iteration, args, flags)
VALUES

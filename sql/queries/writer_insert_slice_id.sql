-- One slice with its id given: an index file of a sharded ingest stores only
-- some slices (store/rows.c, index mode), so SQLite cannot count the ids.
-- ?1..?14 as writer_insert_slices.sql, ?15 the id.
INSERT INTO slices (track, ts, dur, name, cat, cat_name, depth, parent, correlation,
                    external_id, bytes, iteration, args, flags, id)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15);

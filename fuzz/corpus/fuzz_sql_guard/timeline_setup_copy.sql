-- Timeline sources on a file still being written (a live run: the writer
-- builds slices_track_ts only at the end). A temp copy with that index
-- stands in; the server rebuilds it when the file changes, at most every
-- few seconds, so its cost follows the run's size, not the request rate.
DROP VIEW IF EXISTS temp.lod_src;
DROP VIEW IF EXISTS temp.lod_rows;
DROP TABLE IF EXISTS temp.lod_copy;
CREATE TEMP TABLE lod_copy AS
SELECT s.id, s.track, s.ts, s.dur, s.depth, s.name, s.cat, c.coll
FROM main.slices s
LEFT JOIN (SELECT slice, min(id) AS coll FROM main.collectives GROUP BY slice) c ON c.slice = s.id;
CREATE INDEX temp.lod_copy_track_ts ON lod_copy (track, ts, dur, id);
CREATE INDEX temp.lod_copy_id ON lod_copy (id);
CREATE TEMP VIEW lod_src AS SELECT id, track, ts, dur FROM temp.lod_copy;
CREATE TEMP VIEW lod_rows AS SELECT id, track, ts, dur, depth, name, cat, coll FROM temp.lod_copy;

-- Timeline sources on a finished file (slices_track_ts exists): temp views
-- over the file's tables, so the timeline's range scans use its indexes.
-- lod_src is what the level-of-detail pyramids are built from (index-only);
-- lod_rows adds what a drawn slice needs, with its collective row if any.
DROP VIEW IF EXISTS temp.lod_src;
DROP VIEW IF EXISTS temp.lod_rows;
DROP TABLE IF EXISTS temp.lod_copy;
CREATE TEMP VIEW lod_src AS
SELECT id, track, ts, dur FROM main.slices;
CREATE TEMP VIEW lod_rows AS
SELECT s.id, s.track, s.ts, s.dur, s.depth, s.name, s.cat,
       (SELECT min(c.id) FROM main.collectives c WHERE c.slice = s.id) AS coll
FROM main.slices s;

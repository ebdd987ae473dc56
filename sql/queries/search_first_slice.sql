-- /api/search: the first slice named ?1 (a string id) in storage order, the
-- lowest id: slices(name) has no index (indexes.sql), so this scans until it
-- finds one. Columns: id, rank, ts, dur.
WITH f AS (SELECT id, track, ts, dur FROM slices WHERE name = ?1 ORDER BY id LIMIT 1)
SELECT f.id, t.rank, f.ts, f.dur FROM f JOIN tracks t ON t.id = f.track;

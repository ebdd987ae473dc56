-- Narrow slices of one track starting in [?2, ?3) and shorter than ?4 ns:
-- the slices drawn one by one in a timeline window (the collective column
-- is filled from timeline_colls.sql).
SELECT id, ts, dur, depth, name, cat, 0
FROM lod_rows
WHERE track = ?1 AND ts >= ?2 AND ts < ?3 AND dur < ?4
ORDER BY ts;

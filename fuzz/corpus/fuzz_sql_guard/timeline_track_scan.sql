-- One track's slices in time order, for its level-of-detail pyramid
-- (index-only on slices_track_ts).
SELECT ts, dur, id FROM lod_src WHERE track = ?1 ORDER BY ts;

-- One track's slices in time order with what drawing needs, kept in the
-- server's memory while its budget allows (index-only when slices_track_ts
-- covers depth, name and cat; else a look-up per slice, in index order).
SELECT ts, dur, id, depth, name, cat FROM lod_rows WHERE track = ?1 ORDER BY ts;

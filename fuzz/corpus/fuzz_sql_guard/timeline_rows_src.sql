-- Narrow slices of one track starting in [?2, ?3) and shorter than ?4 ns,
-- position only (index-only on slices_track_ts): a fine window counts
-- every one but looks up the details of those it draws one by one.
SELECT id, ts, dur FROM lod_src WHERE track = ?1 AND ts >= ?2 AND ts < ?3 AND dur < ?4 ORDER BY ts;

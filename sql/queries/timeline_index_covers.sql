-- Whether slices_track_ts also holds what drawing a slice needs (depth,
-- name, cat): 3 when it does, and a fine window then reads its slices in
-- one index-only range scan instead of a look-up per drawn slice.
SELECT count(*) AS n FROM pragma_index_info('slices_track_ts') WHERE name IN ('depth', 'name', 'cat');

-- htamerge export: one track's slices, parents before their children
-- (start, then longer first); ?1 = track id. Uses slices_track_ts.
SELECT s.id, s.ts, s.dur, n.str AS name, c.name AS cat, cn.str AS cat_name, s.depth, s.correlation,
       s.external_id, s.bytes, s.iteration, s.args
FROM slices s
LEFT JOIN strings n ON n.id = s.name
LEFT JOIN categories c ON c.id = s.cat
LEFT JOIN strings cn ON cn.id = s.cat_name
WHERE s.track = ?1
ORDER BY s.ts, s.dur DESC, s.id

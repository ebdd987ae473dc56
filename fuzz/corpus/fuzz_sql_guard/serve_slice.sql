-- One slice with its names resolved (base tables: a live file has no
-- v_slices yet). ts relative to ?2 (the timeline's origin); collective is
-- its collectives row, if any.
SELECT s.id, t.rank, t.kind, s.track, tn.str AS track_name, s.ts - ?2 AS ts, s.dur,
       n.str AS name, coalesce(cn.str, c.name) AS category, s.depth, s.parent,
       s.correlation, s.external_id, s.bytes, s.iteration, s.args,
       (SELECT min(k.id) FROM collectives k WHERE k.slice = s.id) AS collective
FROM slices s
JOIN tracks t ON t.id = s.track
LEFT JOIN strings n ON n.id = s.name
LEFT JOIN strings tn ON tn.id = t.name
LEFT JOIN categories c ON c.id = s.cat
LEFT JOIN strings cn ON cn.id = s.cat_name
WHERE s.id = ?1;

-- /api/ranks: tracks in drawing order (as timeline_tracks.sql), names resolved.
SELECT t.id, t.rank, t.kind, t.pid, t.tid, s.str AS name
FROM tracks t
LEFT JOIN strings s ON s.id = t.name
ORDER BY t.rank, t.kind, t.pid, t.tid, t.id;

-- Rank ?1's slices that start or end in [?2, ?3] (around a backward clock
-- step) and carry a sequence number (CUPTI correlation, else Kineto's
-- External id), per track in sequence order (merger/live.c
-- place_sequences). Columns: track, 1 when ordered by External id, slice
-- id, ts (raw + applied offset).
SELECT s.track, s.correlation IS NULL AS by_external_id, s.id, s.ts
FROM slices s
JOIN tracks t ON t.id = s.track
WHERE t.rank = ?1 AND (s.ts BETWEEN ?2 AND ?3 OR s.ts + s.dur BETWEEN ?2 AND ?3)
  AND coalesce(s.correlation, s.external_id) IS NOT NULL
ORDER BY s.track, 2, coalesce(s.correlation, s.external_id), s.ts;

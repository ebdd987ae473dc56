-- /api/search: the first slice named ?1 (a string id) in storage order, the
-- lowest id, as the writer noted it when it finished the file
-- (name_first_slices; search_first_slice.sql scans for it in a file
-- without). Columns: id, rank, ts, dur.
SELECT s.id, t.rank, s.ts, s.dur
FROM name_first_slices f
JOIN slices s ON s.id = f.slice
JOIN tracks t ON t.id = s.track
WHERE f.name = ?1;

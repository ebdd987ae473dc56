-- /api/search: the names whose slices a text finds: at most 5 strings that
-- hold it (case-insensitive), in text order (the same in a sharded ingest's
-- index as in one file, whose string ids differ), file paths left out (the
-- index names its files HOST:PATH, and no slice is named by a path).
-- ?1: the text, 2 bytes or more. Columns: id, str.
SELECT id, str FROM strings
WHERE length(?1) >= 2 AND instr(lower(str), lower(?1)) > 0 AND str NOT IN (SELECT path FROM files)
ORDER BY str
LIMIT 5;

-- /api/search on a sharded ingest's index: the place in the run's storage
-- order (files.id: the writers store files in the order of the list) of
-- rank ?1's file number ?2 (0-based, search_slice_file.sql). Columns: file.
SELECT id AS file FROM files WHERE rank = ?1 ORDER BY id LIMIT 1 OFFSET ?2;

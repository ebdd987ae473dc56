-- /api/search on a sharded ingest's index, on a shard: the file slice ?1
-- came from, named as the index knows it: its rank and its order among the
-- rank's files (search_file_order.sql). A writer stores each file's slices
-- after the previous file's, ids from 1 (store/rows.c), so the slice is in
-- the first file whose running total of slices reaches its id.
-- Columns: rank, ord.
WITH f AS (
    SELECT rank, row_number() OVER (PARTITION BY rank ORDER BY id) - 1 AS ord,
           sum(slices) OVER (ORDER BY id) AS upto
    FROM files
)
SELECT rank, ord FROM f WHERE upto >= ?1 ORDER BY upto LIMIT 1;

-- The shard that holds a rank of a sharded ingest's index (query/shards.c):
-- its path (relative to the index's folder) and size when written.
SELECT s.path, s.bytes, s.host
FROM rank_shards r JOIN shards s ON s.id = r.shard
WHERE r.rank = ?1;

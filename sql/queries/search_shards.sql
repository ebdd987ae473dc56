-- /api/search on a sharded ingest's index: each shard with a rank of it (to
-- open it by) and its first file in the run's storage order (files.id):
-- searched in that order, a shard whose first file comes after the first
-- slice found cannot hold an earlier one. Columns: shard, rank, first_file.
-- HTA's straggler method over the shards opens each by its rank too.
SELECT r.shard, min(r.rank) AS rank, coalesce(min(f.id), 9223372036854775807) AS first_file
FROM rank_shards r
LEFT JOIN files f ON f.rank = r.rank
GROUP BY r.shard
ORDER BY first_file, r.shard;

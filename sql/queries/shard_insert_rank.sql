-- Which shard holds a rank (shard_tables.sql).
INSERT INTO rank_shards (rank, shard) VALUES (?1, ?2);

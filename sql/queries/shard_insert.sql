-- One shard of a sharded ingest's index (shard_tables.sql).
INSERT INTO shards (id, host, path, ranks, nranks, slices, rows, bytes, first_ns, end_ns)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10);

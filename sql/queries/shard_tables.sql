-- The index of a sharded ingest (merger/ingest_shards.c): its shards, one
-- normal htamerge file per host holding every row of the host's ranks, and
-- which shard holds each rank. Only an index has these tables (and meta
-- key 'shards', their count); the slices it keeps are those collectives and
-- steps point to (and every slice of a batch with CUDA graph events). A
-- shard's meta names its index ('shard_of', the file name) and host
-- ('shard_host').
CREATE TABLE shards (
    id      INTEGER PRIMARY KEY,  -- shard id
    host    TEXT,                 -- the host whose ranks it holds
    path    TEXT,                 -- the file, relative to the index's folder ("run.db.d/HOST.db")
    ranks   TEXT,                 -- its ranks, comma-separated
    nranks  INTEGER,              -- how many
    slices  INTEGER,              -- slices it stores
    rows    INTEGER,              -- slices, collectives and counters it stores
    bytes   INTEGER,              -- its size when written: a shard of another size was replaced
    first_ns INTEGER,             -- its first slice's start, aligned ns (the run's origin is the least)
    end_ns  INTEGER               -- its last slice end
);
CREATE TABLE rank_shards (
    rank  INTEGER PRIMARY KEY,    -- -> ranks.rank
    shard INTEGER                 -- -> shards.id
);

-- htamerge export of a sharded ingest's shard: the slice of each collective,
-- named by its rank and its order among that rank's collectives (the
-- index's collectives are the same rows in the same order:
-- export_index_members.sql). Columns: rank, ord, slice id, ts, dur, track.
WITH k AS (
    SELECT id, rank, slice, row_number() OVER (PARTITION BY rank ORDER BY id) - 1 AS ord FROM collectives
)
SELECT k.rank, k.ord, s.id AS slice, s.ts, s.dur, s.track
FROM k
JOIN slices s ON s.id = k.slice
ORDER BY k.rank, k.ord

-- htamerge export of a sharded ingest's index: the members of each matched
-- collective instance, each named by its rank and its order among that
-- rank's collectives (its shard's export_collective_ends.sql row); their
-- slices are in the shards. Columns: instance, op, rank, ord.
WITH k AS (
    SELECT id, rank, row_number() OVER (PARTITION BY rank ORDER BY id) - 1 AS ord FROM collectives
)
SELECT ci.id AS instance, ci.op, k.rank, k.ord
FROM collective_instances ci
JOIN collective_instance_ranks m ON m.instance = ci.id
JOIN k ON k.id = m.collective
ORDER BY ci.id

-- Rank ?1's GPU-stream collectives that have a seq, each with the exit of
-- the same collective (pg, seq) on rank 0, whose times are final: which side
-- of a repaired clock step each was on (merger/live.c place_collectives).
-- Columns: slice, enter_ns, exit_ns (raw + applied offset), rank 0's exit.
WITH k AS (
    SELECT c.rank, c.slice, c.pg, c.seq, c.enter_ns, c.exit_ns
    FROM collectives c
    JOIN slices s ON s.id = c.slice
    JOIN tracks t ON t.id = s.track
    WHERE t.kind = 'gpu_stream' AND c.seq IS NOT NULL AND c.rank IN (0, ?1)
)
SELECT a.slice, a.enter_ns, a.exit_ns,
       (SELECT min(b.exit_ns) FROM k b WHERE b.rank = 0 AND b.pg IS a.pg AND b.seq = a.seq) AS rank0_exit_ns
FROM k a
WHERE a.rank = ?1;

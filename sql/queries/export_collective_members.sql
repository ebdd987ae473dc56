-- htamerge export: the slices of each matched collective instance, in the
-- order the ranks entered. Columns: instance, op, pg, seq, rank, slice id,
-- ts, dur, track.
SELECT ci.id AS instance, ci.op, ci.pg, ci.seq, c.rank, s.id AS slice, s.ts, s.dur, s.track
FROM collective_instances ci
JOIN collective_instance_ranks m ON m.instance = ci.id
JOIN collectives c ON c.id = m.collective
JOIN slices s ON s.id = c.slice
ORDER BY ci.id, s.ts, c.rank

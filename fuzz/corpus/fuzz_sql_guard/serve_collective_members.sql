-- The rows of one collective instance on every rank: those with the same
-- (pg, seq) as collectives row ?1, or that row alone when it has no seq.
-- Times relative to ?2 (the timeline's origin); track is where it is drawn.
SELECT c.id, c.rank, c.op, c.pg, c.pg_desc, c.seq, c.slice, s.track, t.kind AS track_kind,
       c.enter_ns - ?2 AS enter_ns, c.exit_ns - ?2 AS exit_ns, c.exit_ns - c.enter_ns AS dur_ns,
       c.in_nelems, c.out_nelems, c.dtype, c.group_size
FROM collectives c0
JOIN collectives c ON c.id = c0.id OR (c0.seq IS NOT NULL AND c.pg IS c0.pg AND c.seq = c0.seq)
LEFT JOIN slices s ON s.id = c.slice
LEFT JOIN tracks t ON t.id = s.track
WHERE c0.id = ?1
ORDER BY c.rank, c.enter_ns;

-- Collective matching (analysis/cross_rank/match.c): every collectives row with what
-- decides how it is keyed and timed. dims: the first input's dimensions
-- ("Input Dims" of gloo:/nccl: annotations) when the row has no size.
SELECT c.id, c.rank, c.pg, c.op, c.seq, c.comms_id, c.in_nelems, c.group_size,
       c.enter_ns, c.exit_ns, t.kind = 'gpu_stream' AS gpu, s.track, s.iteration,
       s.external_id, n.str AS slice_name,
       CASE WHEN c.in_nelems IS NULL AND json_valid(s.args)
            THEN json_extract(s.args, '$."Input Dims"[0]') END AS dims
FROM collectives c
JOIN slices s ON s.id = c.slice
JOIN tracks t ON t.id = s.track
LEFT JOIN strings n ON n.id = s.name
ORDER BY c.rank, c.enter_ns, c.id;

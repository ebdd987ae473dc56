-- CUDA graph kernels (analysis/cross_rank/graph_kernels.c): the kernels a graph ran
-- (CUPTI's kernel records put "graph node id" in their args), by rank and time.
-- Columns: rank, id, ts, correlation, name, graph, node (named for store/columns.h).
SELECT t.rank, s.id, s.ts, s.correlation, s.name,
       json_extract(s.args, '$."graph id"') AS graph,
       json_extract(s.args, '$."graph node id"') AS node
FROM slices s
JOIN tracks t ON t.id = s.track
WHERE t.kind = 'gpu_stream' AND instr(s.args, '"graph node id"') > 0 AND json_valid(s.args)
ORDER BY t.rank, s.ts, s.id;

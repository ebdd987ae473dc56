-- CUDA graph kernels (analysis/cross_rank/graph_kernels.c): the graph nodes live capture saw
-- made or cloned, by rank and node id. CUPTI reports an instantiated graph's node twice, made
-- and then cloned (H200, CUDA 13): the clone, which names the node made at capture, comes first.
-- Columns: rank, id, track, ts, node, original, graph (named for store/columns.h).
SELECT t.rank, s.id, s.track, s.ts,
       json_extract(s.args, '$."graph node id"') AS node,
       json_extract(s.args, '$."original graph node id"') AS original,
       json_extract(s.args, '$."graph id"') AS graph
FROM slices s
JOIN tracks t ON t.id = s.track
WHERE s.cat = (SELECT id FROM categories WHERE name = 'cuda_graph') AND json_valid(s.args)
  AND json_extract(s.args, '$."graph node id"') IS NOT NULL
ORDER BY t.rank, node, original IS NULL, s.id;

-- CUDA graph kernels (analysis/cross_rank/graph_kernels.c): the graph nodes live capture saw
-- made or cloned, by rank and node id, each with the CUDA call on its thread that was
-- running when it was made (the earliest begun within 10 ms that had not yet ended: the
-- captured launch; NULL when that call was not recorded).
-- Columns: rank, id, track, ts, node, original, graph, call (named for store/columns.h).
SELECT t.rank, s.id, s.track, s.ts,
       json_extract(s.args, '$."graph node id"') AS node,
       json_extract(s.args, '$."original graph node id"') AS original,
       json_extract(s.args, '$."graph id"') AS graph,
       (SELECT c.id FROM slices c
        WHERE c.track = s.track AND c.ts BETWEEN s.ts - 10000000 AND s.ts AND c.ts + c.dur >= s.ts
          AND c.cat IN (SELECT id FROM categories WHERE name IN ('cuda_runtime', 'cuda_driver'))
        ORDER BY c.ts, c.id LIMIT 1) AS call
FROM slices s
JOIN tracks t ON t.id = s.track
WHERE s.cat = (SELECT id FROM categories WHERE name = 'cuda_graph') AND json_valid(s.args)
  AND json_extract(s.args, '$."graph node id"') IS NOT NULL
ORDER BY t.rank, node, s.id;

-- CUDA graph kernels (analysis/cross_rank/graph_kernels.c): the CUDA calls that share a
-- correlation id with a graph's kernels (cudaGraphLaunch), by rank and correlation, a
-- graph launch before other calls of the same id.
-- Columns: rank, id, track, ts, correlation, graph_launch (named for store/columns.h).
SELECT t.rank, s.id, s.track, s.ts, s.correlation, coalesce(instr(n.str, 'GraphLaunch') > 0, 0) AS graph_launch
FROM slices s
JOIN tracks t ON t.id = s.track
LEFT JOIN strings n ON n.id = s.name
WHERE t.kind = 'cpu_thread'
  AND s.cat IN (SELECT id FROM categories WHERE name IN ('cuda_runtime', 'cuda_driver'))
  AND s.correlation IN (SELECT correlation FROM slices WHERE instr(args, '"graph node id"') > 0)
ORDER BY t.rank, s.correlation, graph_launch DESC, s.ts, s.id;

-- CUDA graph kernels (analysis/cross_rank/graph_kernels.c): the CUDA calls on the threads
-- that made graph nodes, by rank, track and start: a node made by stream capture was made
-- inside the captured launch. One scan (a live run's finish has no slice index left).
-- Columns: rank, id, track, ts, end_ts (named for store/columns.h).
SELECT t.rank, s.id, s.track, s.ts, s.ts + s.dur AS end_ts
FROM slices s
JOIN tracks t ON t.id = s.track
WHERE s.cat IN (SELECT id FROM categories WHERE name IN ('cuda_runtime', 'cuda_driver'))
  AND s.track IN (SELECT track FROM slices WHERE cat = (SELECT id FROM categories WHERE name = 'cuda_graph'))
ORDER BY t.rank, s.track, s.ts, s.id;

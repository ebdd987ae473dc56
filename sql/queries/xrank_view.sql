-- Cross-rank analyses (analysis/cross_rank/cross_rank.c): one scan of the slices for the
-- GPU ops, CUDA launch calls and annotation ranges of every rank, and the CUDA graph
-- nodes made (counted: graph_kernels.c reads them when there are any).
-- Columns: rank, id, track, on a GPU stream, cat, ts, end, correlation,
-- name, iteration (named for store/columns.h).
SELECT t.rank, s.id, s.track, t.kind = 'gpu_stream' AS gpu, s.cat, s.ts, s.ts + s.dur AS end_ts,
       s.correlation, s.name, s.iteration
FROM slices s
JOIN tracks t ON t.id = s.track
WHERE s.cat IN (SELECT id FROM categories
                WHERE name IN ('kernel', 'gpu_memcpy', 'gpu_memset', 'cuda_runtime',
                               'cuda_driver', 'user_annotation', 'nvtx', 'cuda_graph'));

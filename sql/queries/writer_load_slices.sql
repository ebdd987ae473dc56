-- One rank's slices with their tracks, to re-run the analyses on stored data.
-- The args of NVTX ranges (16) only: their domain names the steps of hooks.
SELECT s.ts, s.dur, s.name, s.cat, s.correlation, s.external_id, s.bytes, s.flags,
       CASE t.kind WHEN 'gpu_stream' THEN 1 ELSE 0 END AS gpu, t.pid, t.tid, s.id,
       CASE WHEN s.cat = 16 THEN s.args END AS nvtx_args
FROM tracks t JOIN slices s ON s.track = t.id
WHERE t.rank = ?1
ORDER BY s.id;

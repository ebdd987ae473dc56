-- One rank's slices with their tracks, to re-run the analyses on stored data.
-- The args of NVTX ranges (16) only: their domain names the steps of hooks.
-- Called once per span of ids the rank's batches took (?2 to ?3): the table
-- has no index by track yet, and a scan of it per rank grew with the ranks.
SELECT s.ts, s.dur, s.name, s.cat, s.correlation, s.external_id, s.bytes, s.flags,
       CASE t.kind WHEN 'gpu_stream' THEN 1 ELSE 0 END AS gpu, t.pid, t.tid, s.id,
       CASE WHEN s.cat = 16 THEN s.args END AS nvtx_args
FROM tracks t JOIN slices s ON s.track = t.id
WHERE t.rank = ?1 AND s.id BETWEEN ?2 AND ?3
ORDER BY s.id;

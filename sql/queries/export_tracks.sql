-- htamerge export: every track with its rank and name, in the order the
-- export lists them: per rank the CPU threads (ingest order), then per GPU
-- device its streams by stream id.
SELECT t.id, t.rank, t.kind, t.pid, t.tid, s.str AS name
FROM tracks t
LEFT JOIN strings s ON s.id = t.name
ORDER BY t.rank,
         t.kind = 'gpu_stream',
         CASE WHEN t.kind = 'gpu_stream' THEN t.pid END,
         CASE WHEN t.kind = 'gpu_stream' THEN t.tid ELSE t.id END

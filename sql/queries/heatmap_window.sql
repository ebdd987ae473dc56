-- What a rank did in [?2, ?3), as rank_activity counts it (see
-- analysis/cross_rank/rank_activity.h): on GPU streams its kernels and
-- copies (kind 1, name for the communication test); its matched
-- collectives not timed by a kernel (kind 2: gloo, CPU ops); on a rank
-- without GPU streams also its annotated work (kind 0: user annotations and
-- NVTX ranges, not the step ranges). ?4: the longest interval, so that the
-- (track, ts) index bounds the scans from below too.
WITH gpu AS (SELECT id FROM tracks WHERE rank = ?1 AND kind = 'gpu_stream')
SELECT 1 AS kind, s.ts, s.ts + s.dur AS end_ns, CASE WHEN s.cat = 4 THEN s.name END AS name
FROM gpu JOIN slices s ON s.track = gpu.id
WHERE s.cat IN (4, 5, 6) AND s.ts < ?3 AND s.ts >= ?2 - ?4 AND s.ts + s.dur > ?2
UNION ALL
SELECT 2, enter_ns, exit_ns, NULL
FROM collective_instance_ranks
WHERE rank = ?1 AND source <> 'gpu' AND enter_ns < ?3 AND exit_ns > ?2
UNION ALL
SELECT 0, s.ts, s.ts + s.dur, NULL
FROM tracks t JOIN slices s ON s.track = t.id
WHERE NOT EXISTS (SELECT 1 FROM gpu) AND t.rank = ?1 AND t.kind = 'cpu_thread' AND s.cat IN (2, 16)
  AND s.ts < ?3 AND s.ts >= ?2 - ?4 AND s.ts + s.dur > ?2
  AND coalesce((SELECT str FROM strings WHERE id = s.name), '') NOT GLOB 'ProfilerStep#*'
  AND coalesce((SELECT str FROM strings WHERE id = s.name), '') <> 'step';

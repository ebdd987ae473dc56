-- htamerge export: CPU launch -> GPU op links. Each kernel, memcpy or
-- memset with a correlation id is paired with the CPU slice of the same rank
-- that has the same id: the latest one starting at or before the GPU op,
-- else (clock error) the first one after it. Columns: GPU slice id, ts,
-- dur, track; CPU slice id, ts, dur, track; correlation. ?1: the GPU
-- tracks exported (a JSON array of track ids): a rank chosen among many
-- does not pay for every rank's links.
SELECT g.id AS gpu_id, g.ts AS gpu_ts, g.dur AS gpu_dur, g.track AS gpu_track,
       c.id AS cpu_id, c.ts AS cpu_ts, c.dur AS cpu_dur, c.track AS cpu_track, g.correlation
FROM (SELECT s.id, s.ts, s.dur, s.track, s.correlation,
             coalesce((SELECT c.id FROM slices c JOIN tracks ct ON ct.id = c.track
                       WHERE c.correlation = s.correlation AND ct.rank = t.rank
                         AND ct.kind = 'cpu_thread' AND c.ts <= s.ts
                       ORDER BY c.ts DESC, c.id LIMIT 1),
                      (SELECT c.id FROM slices c JOIN tracks ct ON ct.id = c.track
                       WHERE c.correlation = s.correlation AND ct.rank = t.rank
                         AND ct.kind = 'cpu_thread' AND c.ts > s.ts
                       ORDER BY c.ts, c.id LIMIT 1)) AS cpu
      FROM slices s
      JOIN tracks t ON t.id = s.track AND t.kind = 'gpu_stream'
      WHERE s.track IN (SELECT value FROM json_each(?1))
        AND s.correlation IS NOT NULL
        AND s.cat IN (SELECT id FROM categories
                      WHERE name IN ('kernel', 'gpu_memcpy', 'gpu_memset'))) g
JOIN slices c ON c.id = g.cpu
ORDER BY g.id

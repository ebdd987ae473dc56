-- report stragglers --method hta, first pass: the extent HTA's threshold and
-- normalisation use (hta/analyzers/straggler.py), per step, over every event
-- of the selected steps (ProfilerStep >= 0) of the file's ranks. ?1: a JSON
-- array of step numbers, or NULL for all. Per step, so that the caller
-- takes the least start, the greatest end and the number of steps over
-- several files (the shards of a sharded ingest) as over one.
SELECT iteration, min(ts) AS t_min, max(ts + dur) AS t_max
FROM slices
WHERE iteration IS NOT NULL AND iteration >= 0
  AND (?1 IS NULL OR iteration IN (SELECT value FROM json_each(?1)))
GROUP BY iteration;

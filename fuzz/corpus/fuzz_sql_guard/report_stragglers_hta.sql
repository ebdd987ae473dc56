-- report stragglers --method hta: the inputs of HTA's get_potential_stragglers
-- (hta/analyzers/straggler.py): communication kernels named ncclKernel* on a
-- stream > 0, in a ProfilerStep > 0, lasting at least 1 % of the mean
-- iteration time, where t_min, t_max and the iteration count are taken over
-- every event of the selected steps on every rank. ?1: a JSON array of step
-- numbers, or NULL for all. Sorted so that the last row of each
-- (rank, stream, iteration, name) group is the one HTA keeps.
WITH sel AS (
    SELECT ts, dur, iteration FROM slices
    WHERE iteration IS NOT NULL AND iteration >= 0
      AND (?1 IS NULL OR iteration IN (SELECT value FROM json_each(?1)))
), b AS (
    SELECT min(ts) AS t_min, max(ts + dur) AS t_max, count(DISTINCT iteration) AS n_iters FROM sel
)
SELECT t.rank, t.tid AS stream, s.iteration, n.str AS name, s.ts, s.dur, b.t_min, b.t_max, b.n_iters
FROM b, slices s
JOIN tracks t ON t.id = s.track
JOIN strings n ON n.id = s.name
WHERE t.kind = 'gpu_stream' AND t.tid > 0 AND s.iteration > 0
  AND (?1 IS NULL OR s.iteration IN (SELECT value FROM json_each(?1)))
  AND substr(n.str, 1, 10) = 'ncclKernel'
  AND b.n_iters > 0 AND s.dur >= (b.t_max - b.t_min) * 0.01 / b.n_iters
ORDER BY t.rank, t.tid, s.iteration, n.str, s.ts;

-- report stragglers --method hta: the inputs of HTA's get_potential_stragglers
-- (hta/analyzers/straggler.py): communication kernels named ncclKernel* on a
-- stream > 0, in a ProfilerStep > 0, lasting at least 1 % of the mean
-- iteration time, where t_min (?2), t_max (?3) and the iteration count (?4)
-- are taken over every event of the selected steps on every rank
-- (report_stragglers_hta_extent.sql). ?1: a JSON array of step numbers, or
-- NULL for all. Sorted so that the last row of each
-- (rank, stream, iteration, name) group is the one HTA keeps.
SELECT t.rank, t.tid AS stream, s.iteration, n.str AS name, s.ts, s.dur
FROM slices s
JOIN tracks t ON t.id = s.track
JOIN strings n ON n.id = s.name
WHERE t.kind = 'gpu_stream' AND t.tid > 0 AND s.iteration > 0
  AND (?1 IS NULL OR s.iteration IN (SELECT value FROM json_each(?1)))
  AND substr(n.str, 1, 10) = 'ncclKernel'
  AND ?4 > 0 AND s.dur >= (?3 - ?2) * 0.01 / ?4
ORDER BY t.rank, t.tid, s.iteration, n.str, s.ts;

-- One rank's ProfilerSteps with the id of their slice.
SELECT number, ts, dur, slice, source
FROM steps
WHERE rank = ?1
ORDER BY number;

-- Cross-rank analyses: the ProfilerSteps of every rank, in order.
SELECT rank, number, ts, ts + dur AS end_ts, coalesce(dropped, 0) AS dropped
FROM steps
ORDER BY rank, number;

-- Cross-rank analyses: the ProfilerSteps of every rank, in order.
SELECT rank, number, ts, ts + dur, coalesce(dropped, 0)
FROM steps
ORDER BY rank, number;

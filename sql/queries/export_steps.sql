-- htamerge export: ProfilerStep windows, for --steps.
SELECT rank, number, ts, dur FROM steps ORDER BY number, rank

-- htamerge export: the (rank, device) pairs that have counters; -1 is the
-- host. A device may have memory samples but no stream of its own.
SELECT DISTINCT rank, device FROM counters ORDER BY rank, device

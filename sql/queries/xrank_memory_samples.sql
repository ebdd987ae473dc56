-- Every rank's memory samples for the memory peaks
-- (analysis/cross_rank/memory_peaks.c), by rank, device and time; at one
-- instant Kineto writes both counters, allocated first.
SELECT c.rank, c.device, c.ts, c.value, n.str = 'Total Reserved' AS reserved
FROM counters c
JOIN strings n ON n.id = c.name
WHERE n.str IN ('Total Allocated', 'Total Reserved')
ORDER BY c.rank, c.device, c.ts, c.id;

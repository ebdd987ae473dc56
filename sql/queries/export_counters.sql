-- htamerge export: counter samples (memory), one series per rank, device
-- and name. Columns: rank, device (-1 = CPU), name, ts, value.
SELECT c.rank, c.device, n.str AS name, c.ts, c.value
FROM counters c
LEFT JOIN strings n ON n.id = c.name
ORDER BY c.rank, c.device, c.name, c.ts

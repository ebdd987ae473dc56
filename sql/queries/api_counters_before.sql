-- /api/counters: what each of a rank's memory counters read when the window
-- ?1 began (its last sample before; the bare column takes max(ts)'s row).
-- ?2: the rank.
SELECT c.device, n.str AS name, c.value, max(c.ts) AS ts
FROM counters c
JOIN strings n ON n.id = c.name
WHERE c.rank = ?2 AND c.ts < ?1 AND n.str IN ('Total Allocated', 'Total Reserved')
GROUP BY c.device, n.str;

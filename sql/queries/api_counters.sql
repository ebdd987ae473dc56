-- /api/counters: one rank's memory counters in [?1, ?2) (absolute ns), the
-- largest value of each of ?3 pixel columns per device and counter.
-- ?4: the rank.
SELECT c.device, n.str AS name, CAST((c.ts - ?1) * ?3 / (?2 - ?1) AS INTEGER) AS col, max(c.value) AS value
FROM counters c
JOIN strings n ON n.id = c.name
WHERE c.rank = ?4 AND c.ts >= ?1 AND c.ts < ?2 AND n.str IN ('Total Allocated', 'Total Reserved')
GROUP BY c.device, n.str, col
ORDER BY c.device, n.str, col;

-- report summary: what the Python hooks cost each rank by their own clock:
-- the mean of the counter "htamerge/hooks ns per step" they publish every
-- 64 steps, against the rank's mean step. The capture budget gives CUPTI's
-- windows what is left of it after twice this share (man htamerge, CAPTURE
-- BUDGET).
SELECT c.rank AS rank,
       round(avg(c.value) / 1e3, 1) AS hooks_us_per_step,
       round(s.step_ms, 3) AS step_ms,
       round(avg(c.value) / 1e4 / s.step_ms, 2) AS share_pct
FROM strings n JOIN counters c ON c.name = n.id
LEFT JOIN (SELECT rank, avg(dur) / 1e6 AS step_ms FROM steps GROUP BY rank) s ON s.rank = c.rank
WHERE n.str = 'htamerge/hooks ns per step'
GROUP BY c.rank
ORDER BY c.rank;

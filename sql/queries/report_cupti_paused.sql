-- report: whether live CUPTI capture paused (cupti-range, --cupti-window):
-- the number of pauses, i.e. samples of the counter "htamerge/cupti
-- recording" at 0. The counters table is small; this decides whether the
-- costlier report_cupti_pauses runs at all.
SELECT count(*) AS pauses
FROM counters c
JOIN strings s ON s.id = c.name
WHERE s.str = 'htamerge/cupti recording' AND c.value = 0;

-- One rank's "htamerge/cupti recording" samples (live capture that paused
-- CUPTI: 0 = paused from ts on, 1 = recording again), so that the analyses
-- re-run on stored data leave the pauses out of GPU idle time.
SELECT ts, value, device
FROM counters
WHERE rank = ?1 AND name = (SELECT id FROM strings WHERE str = 'htamerge/cupti recording')
ORDER BY ts;

-- report_window.sql for files from before steps.source: every step is a
-- ProfilerStep.
SELECT r.rank AS rank, min(s.number) AS first, max(s.number) AS last, count(s.number) AS steps,
       'profiler' AS source
FROM ranks r LEFT JOIN steps s ON s.rank = r.rank AND (?1 = 'all_steps' OR s.dropped IS NOT 1)
GROUP BY r.rank
ORDER BY r.rank;

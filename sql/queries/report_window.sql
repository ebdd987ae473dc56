-- Each rank's steps the per-rank figures cover: the steps the HTA rule
-- keeps (?1 = 'hta') or all of them (?1 = 'all_steps'), and their source.
-- Files from before steps.source use report_window_profiler.sql. Used by
-- query/window.c.
SELECT r.rank AS rank, min(s.number) AS first, max(s.number) AS last, count(s.number) AS steps,
       coalesce(max(s.source), 'profiler') AS source
FROM ranks r LEFT JOIN steps s ON s.rank = r.rank AND (?1 = 'all_steps' OR s.dropped IS NOT 1)
GROUP BY r.rank
ORDER BY r.rank;

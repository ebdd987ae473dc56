-- For a file without rank_activity: the longest GPU op, annotation and
-- collective of the whole file, which bounds the scans of
-- heatmap_window.sql from below (one pass over the slices per request).
SELECT max(coalesce((SELECT max(dur) FROM slices WHERE cat IN (2, 4, 5, 6, 16)), 0),
           coalesce((SELECT max(exit_ns - enter_ns) FROM collectives), 0)) AS n;

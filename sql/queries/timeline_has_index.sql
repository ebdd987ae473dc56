-- Whether the file has the index the timeline's range scans need.
SELECT count(*) AS n FROM main.sqlite_master WHERE type = 'index' AND name = 'slices_track_ts';

-- Whether the file has rank_activity (files from before it have none, and
-- live runs fill it when they finish: /api/heatmap then reads slices).
SELECT count(*) AS n FROM pragma_table_info('rank_activity') WHERE name = 'longest_ns';

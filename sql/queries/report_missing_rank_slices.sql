-- An empty stand-in for a file written before rank_slices (query/topics.c):
-- its summaries count the slices instead.
CREATE TEMP TABLE IF NOT EXISTS rank_slices (rank INTEGER PRIMARY KEY, slices INTEGER);

-- Every rank, for /api/heatmap without ?ranks=.
SELECT rank FROM ranks ORDER BY rank;

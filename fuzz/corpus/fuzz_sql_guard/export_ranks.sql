-- htamerge export: host name of each rank, for the process names.
SELECT rank, host FROM ranks ORDER BY rank

-- Tracks in drawing order: per rank, CPU threads before GPU streams.
SELECT id, rank FROM tracks ORDER BY rank, kind, pid, tid, id;

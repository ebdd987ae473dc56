-- Drops a rank's stored steps before they are found again over all its
-- files (merger/rank_files.c): ?1 rank; ?2 = 1 keeps its ProfilerSteps
-- (source NULL in rows from before the column).
DELETE FROM steps
WHERE rank = ?1 AND (?2 = 0 OR coalesce(source, 'profiler') != 'profiler');

-- Where one step came from (steps.source; NULL in rows stored before the
-- column: ProfilerSteps). ?1 rank, ?2 number. Used by query/window.c.
SELECT coalesce(source, 'profiler') AS source
FROM steps
WHERE rank = ?1 AND number = ?2;

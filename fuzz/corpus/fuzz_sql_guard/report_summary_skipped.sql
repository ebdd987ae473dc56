-- report summary: events the reader skipped, by file and reason.
SELECT rank, file, reason, count
FROM skipped
WHERE count > 0
ORDER BY rank, file, reason;

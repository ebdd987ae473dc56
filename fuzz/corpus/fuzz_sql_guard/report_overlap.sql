-- report overlap: communication time overlapped by computation (?1 = mode).
SELECT rank, comm_us, overlap_us, overlap_pct
FROM a_overlap
WHERE mode = ?1
ORDER BY rank;

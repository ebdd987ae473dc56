-- Every rank's stitched NVTX ranges, for the timeline's NVTX row: where the
-- range lies on that rank, its name and path (nesting), and the stitched
-- range's late rank and skew. Sorted in C (rank, depth, enter).
SELECT r.rank, r.stitched, r.enter_ns, r.exit_ns, n.name, n.path, n.late_rank, n.skew_ns
FROM nvtx_stitched_ranks r
JOIN nvtx_stitched n ON n.id = r.stitched
WHERE r.enter_ns IS NOT NULL AND r.exit_ns IS NOT NULL;

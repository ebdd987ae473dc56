-- One stitched NVTX range ?1 on every rank (/api/nvtx/{id}), times relative
-- to ?2 (the timeline's origin); lag_ns: how long after the first rank this
-- rank entered.
SELECT n.id, s.str AS name, n.path, n.step, n.occurrence, n.ranks, n.skew_ns, n.late_rank,
       n.gpu_ns, n.gpu_ops, r.rank, r.slice, r.enter_ns - ?2 AS enter_ns, r.exit_ns - ?2 AS exit_ns,
       r.exit_ns - r.enter_ns AS dur_ns, r.enter_ns - n.first_enter_ns AS lag_ns,
       r.gpu_ns AS rank_gpu_ns, r.gpu_ops AS rank_gpu_ops
FROM nvtx_stitched n
JOIN nvtx_stitched_ranks r ON r.stitched = n.id
LEFT JOIN strings s ON s.id = n.name
WHERE n.id = ?1
ORDER BY r.rank;

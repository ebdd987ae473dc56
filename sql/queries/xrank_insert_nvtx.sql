-- One stitched range (analysis/cross_rank/nvtx_stitch.c).
INSERT INTO nvtx_stitched (name, path, step, occurrence, ranks, first_enter_ns, last_enter_ns,
                           late_rank, skew_ns, min_exit_ns, max_exit_ns, gpu_ns, gpu_ops)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13);

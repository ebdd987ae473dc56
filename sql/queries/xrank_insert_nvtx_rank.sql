-- One rank of a stitched range (analysis/cross_rank/nvtx_stitch.c).
INSERT INTO nvtx_stitched_ranks (stitched, rank, slice, enter_ns, exit_ns, gpu_start_ns,
                                 gpu_end_ns, gpu_ns, gpu_ops)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9);

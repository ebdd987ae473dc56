-- One step's breakdown (analysis/cross_rank/step_breakdown.c, phase_gpu.c).
INSERT OR REPLACE INTO step_breakdown (rank, step, dur_ns, forward_ns, backward_ns, optimizer_ns,
                                       compute_ns, exposed_comm_ns, other_ns, source,
                                       forward_gpu_ns, backward_gpu_ns, optimizer_gpu_ns, other_gpu_ns)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14);

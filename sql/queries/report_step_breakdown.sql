-- report steps: each rank's steps broken down MLPerf style
-- (analysis/cross_rank/step_breakdown.c), in ms and % of the step, and
-- the GPU time of the work each phase launched (phase_gpu.c).
SELECT rank, step, round(dur_ns / 1e6, 3) AS step_ms,
       round(forward_ns / 1e6, 3) AS forward_ms, round(backward_ns / 1e6, 3) AS backward_ms,
       round(optimizer_ns / 1e6, 3) AS optimizer_ms, round(compute_ns / 1e6, 3) AS compute_ms,
       round(exposed_comm_ns / 1e6, 3) AS exposed_comm_ms, round(other_ns / 1e6, 3) AS other_ms,
       round(100.0 * forward_ns / nullif(dur_ns, 0), 2) AS forward_pct,
       round(100.0 * backward_ns / nullif(dur_ns, 0), 2) AS backward_pct,
       round(100.0 * optimizer_ns / nullif(dur_ns, 0), 2) AS optimizer_pct,
       round(100.0 * compute_ns / nullif(dur_ns, 0), 2) AS compute_pct,
       round(100.0 * exposed_comm_ns / nullif(dur_ns, 0), 2) AS exposed_comm_pct,
       round(100.0 * other_ns / nullif(dur_ns, 0), 2) AS other_pct,
       round(forward_gpu_ns / 1e6, 3) AS forward_gpu_ms, round(backward_gpu_ns / 1e6, 3) AS backward_gpu_ms,
       round(optimizer_gpu_ns / 1e6, 3) AS optimizer_gpu_ms, round(other_gpu_ns / 1e6, 3) AS other_gpu_ms,
       source
FROM step_breakdown
ORDER BY rank, step;

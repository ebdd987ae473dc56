-- Views over the schema: names resolved, analyses in the shapes `htamerge
-- report` prints. Created at the end of the load (store/writer.c). The
-- analysis views show HTA's definitions (mode 'hta'); query the a_* tables
-- for mode 'all_steps'. Times as in schema.sql: ns, analyses in us.
-- v_comms, v_comms_exposed, v_critical_path, v_critical_path_steps, v_memory and
-- v_graph_kernels are the report topics' own queries (sql/queries/report_comms*.sql,
-- report_path_*.sql, report_memory_ranks.sql, report_graph_kernels.sql), made views
-- beside these (store/report_views.c).

-- Slices with their rank, track and names resolved.
CREATE VIEW v_slices AS
SELECT s.id,
       t.rank,
       t.kind,
       s.track,
       t.pid,                                             -- process id, or device index for a GPU stream
       CASE t.kind WHEN 'cpu_thread' THEN t.tid END AS tid,
       CASE t.kind WHEN 'gpu_stream' THEN t.tid END AS stream,
       tn.str AS track_name,
       s.ts,
       s.dur,
       s.ts + s.dur AS end_ts,
       n.str AS name,
       s.cat,
       coalesce(cn.str, c.name) AS category,
       s.depth,
       s.parent,
       s.correlation,
       s.external_id,
       s.bytes,
       s.iteration,
       s.args
FROM slices s
JOIN tracks t ON t.id = s.track
LEFT JOIN strings n ON n.id = s.name
LEFT JOIN strings tn ON tn.id = t.name
LEFT JOIN categories c ON c.id = s.cat
LEFT JOIN strings cn ON cn.id = s.cat_name;

-- Each rank's clock model (report clocks), with its check against the
-- collectives' exits (clock_checks; NULL for the reference rank).
--   SELECT rank, method, uncertainty_ns, violations FROM v_clocks;
CREATE VIEW v_clocks AS
SELECT r.rank,
       r.clock_offset_ns AS offset_ns,
       r.clock_drift_ppm AS drift_ppm,
       r.clock_method AS method,
       r.clock_uncertainty_ns AS uncertainty_ns,
       r.base_time_ns,
       r.clock_ref_ns AS ref_ns,
       r.complete,
       k.samples AS check_samples,
       k.before_ns AS check_before_ns,
       k.after_ns AS check_after_ns,
       k.resid_ns AS check_resid_ns,
       k.violations
FROM ranks r
LEFT JOIN clock_checks k ON k.rank = r.rank;

-- Temporal breakdown per rank (report temporal).
CREATE VIEW v_temporal AS
SELECT rank, idle_us, compute_us, non_compute_us, kernel_us,
       idle_pct, compute_pct, non_compute_pct, has_gpu
FROM a_temporal
WHERE mode = 'hta';

-- Communication/computation overlap per rank (report overlap).
CREATE VIEW v_overlap AS
SELECT rank, comm_us, overlap_us, overlap_pct
FROM a_overlap
WHERE mode = 'hta';

-- Idle time per rank and stream, with each cause's share of the stream's
-- idle time (HTA's idle_time_ratio; NULL when the stream was never idle).
CREATE VIEW v_idle AS
SELECT rank, stream, host_wait_us, kernel_wait_us, other_us,
       host_wait_us + kernel_wait_us + other_us AS idle_us,
       1.0 * host_wait_us / nullif(host_wait_us + kernel_wait_us + other_us, 0) AS host_wait_ratio,
       1.0 * kernel_wait_us / nullif(host_wait_us + kernel_wait_us + other_us, 0) AS kernel_wait_ratio,
       1.0 * other_us / nullif(host_wait_us + kernel_wait_us + other_us, 0) AS other_ratio
FROM a_idle
WHERE mode = 'hta';

-- GPU time per kernel class and rank.
CREATE VIEW v_kernel_class AS
SELECT rank, class, union_us, comp_overlap_comm_us
FROM a_kernel_class
WHERE mode = 'hta';

-- Kernel statistics per rank, names resolved; pct = share of the rank's
-- summed kernel time.
CREATE VIEW v_kernels AS
SELECT k.rank, s.str AS name, k.class, k.count, k.sum_us, k.min_us, k.max_us,
       k.mean_us, k.std_us,
       100.0 * k.sum_us / nullif(sum(k.sum_us) OVER (PARTITION BY k.rank), 0) AS pct
FROM a_kernels k
LEFT JOIN strings s ON s.id = k.name
WHERE k.mode = 'hta';

-- Collective rows with the duration and the carrying slice resolved, and,
-- on the row that times a matched call, its instance and wait states
-- (instance NULL: a row merged into another, e.g. the CPU op of a kernel).
--   SELECT rank, count(*) FROM v_collectives WHERE instance IS NOT NULL GROUP BY rank;
CREATE VIEW v_collectives AS
SELECT c.id, c.rank, c.pg, c.pg_desc, c.op, c.seq, c.comms_id,
       c.in_nelems, c.out_nelems, c.group_size, c.dtype, c.pg_ranks,
       c.enter_ns, c.exit_ns, c.exit_ns - c.enter_ns AS dur_ns,
       c.slice, t.kind AS track_kind, n.str AS slice_name,
       m.instance, m.late, m.wait_ns, m.completion_ns, m.blame_ns
FROM collectives c
LEFT JOIN slices s ON s.id = c.slice
LEFT JOIN tracks t ON t.id = s.track
LEFT JOIN strings n ON n.id = s.name
LEFT JOIN collective_instance_ranks m ON m.collective = c.id;

-- Straggler evidence per rank over the matched collectives the straggler
-- analysis counts (analysis/cross_rank/stragglers.c; Scalasca's wait states on aligned
-- clocks): instances the rank took part in, how often it entered last,
-- the wait it caused the others (blame_us) and its own wait (wait_us).
-- The verdict is in straggler_verdicts (step NULL: the whole run).
--   SELECT rank, late_fraction, blame_us FROM v_stragglers ORDER BY blame_us DESC LIMIT 1;
CREATE VIEW v_stragglers AS
SELECT m.rank,
       count(*) AS instances,
       sum(m.late) AS late_count,
       1.0 * sum(m.late) / count(*) AS late_fraction,
       sum(m.blame_ns) / 1000.0 AS blame_us,
       sum(m.wait_ns) / 1000.0 AS wait_us
FROM collective_instance_ranks m
JOIN collective_instances i ON i.id = m.instance
WHERE i.analysed = 1
GROUP BY m.rank;

-- The same per ProfilerStep, with that step's verdict.
--   SELECT step, rank, blame_us FROM v_stragglers_steps WHERE late_count > 0 ORDER BY step;
CREATE VIEW v_stragglers_steps AS
SELECT i.step, m.rank,
       count(*) AS instances,
       sum(m.late) AS late_count,
       1.0 * sum(m.late) / count(*) AS late_fraction,
       sum(m.blame_ns) / 1000.0 AS blame_us,
       sum(m.wait_ns) / 1000.0 AS wait_us,
       (SELECT v.straggler FROM straggler_verdicts v WHERE v.step = i.step) AS step_straggler
FROM collective_instance_ranks m
JOIN collective_instances i ON i.id = m.instance
WHERE i.analysed = 1 AND i.step IS NOT NULL
GROUP BY i.step, m.rank;

-- Matched collectives (report collectives), times in us from the first.
--   SELECT op, count(*), avg(skew_us) FROM v_collective_instances GROUP BY op;
CREATE VIEW v_collective_instances AS
SELECT i.id, i.pg, i.op, i.seq, i.match, i.step, i.size, i.group_size, i.ranks, i.analysed,
       i.late_rank, i.skew_ns / 1000.0 AS skew_us,
       (i.max_exit_ns - i.first_enter_ns) / 1000.0 AS span_us,
       (i.max_exit_ns - i.min_exit_ns) / 1000.0 AS exit_spread_us,
       i.first_enter_ns, i.last_enter_ns, i.min_exit_ns, i.max_exit_ns,
       (SELECT sum(m.wait_ns) FROM collective_instance_ranks m WHERE m.instance = i.id) / 1000.0 AS wait_us
FROM collective_instances i;

-- Stitched NVTX / annotation ranges across ranks (report nvtx).
--   SELECT path, avg(skew_us), max(skew_us) FROM v_nvtx GROUP BY path ORDER BY 2 DESC;
CREATE VIEW v_nvtx AS
SELECT n.id, s.str AS name, n.path, n.step, n.occurrence, n.ranks, n.late_rank,
       n.skew_ns / 1000.0 AS skew_us,
       n.first_enter_ns, n.last_enter_ns, n.min_exit_ns, n.max_exit_ns,
       n.gpu_ns / 1000.0 AS gpu_us, n.gpu_ops
FROM nvtx_stitched n
LEFT JOIN strings s ON s.id = n.name;

-- Step breakdown per rank in ms and % of the step (report steps).
--   SELECT rank, avg(exposed_comm_pct) FROM v_step_breakdown GROUP BY rank;
CREATE VIEW v_step_breakdown AS
SELECT rank, step, dur_ns / 1e6 AS step_ms, source,
       forward_ns / 1e6 AS forward_ms, backward_ns / 1e6 AS backward_ms,
       optimizer_ns / 1e6 AS optimizer_ms, compute_ns / 1e6 AS compute_ms,
       exposed_comm_ns / 1e6 AS exposed_comm_ms, other_ns / 1e6 AS other_ms,
       100.0 * forward_ns / nullif(dur_ns, 0) AS forward_pct,
       100.0 * backward_ns / nullif(dur_ns, 0) AS backward_pct,
       100.0 * optimizer_ns / nullif(dur_ns, 0) AS optimizer_pct,
       100.0 * compute_ns / nullif(dur_ns, 0) AS compute_pct,
       100.0 * exposed_comm_ns / nullif(dur_ns, 0) AS exposed_comm_pct,
       100.0 * other_ns / nullif(dur_ns, 0) AS other_pct,
       forward_gpu_ns / 1e6 AS forward_gpu_ms, backward_gpu_ns / 1e6 AS backward_gpu_ms,
       optimizer_gpu_ns / 1e6 AS optimizer_gpu_ms, other_gpu_ns / 1e6 AS other_gpu_ms
FROM step_breakdown;

-- ProfilerStep ranges per rank with the step analysis.
CREATE VIEW v_steps AS
SELECT rank, number, slice, ts, dur, dur / 1000.0 AS dur_us,
       gpu_busy_us, kernel_count, dropped
FROM steps;

-- HTA's kernel-type breakdown per rank (disjoint labels).
CREATE VIEW v_kernel_labels AS
SELECT rank, label, mask, us
FROM a_kernel_labels
WHERE mode = 'hta';

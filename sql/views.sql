-- Views over the schema: names resolved, analyses in the shapes `htamerge
-- report` prints. Created at the end of the load (merger/writer.c). The
-- analysis views show HTA's definitions (mode 'hta'); query the a_* tables
-- for mode 'all_steps'. Times as in schema.sql: ns, analyses in us.

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

-- Each rank's clock model (report clocks).
CREATE VIEW v_clocks AS
SELECT rank,
       clock_offset_ns AS offset_ns,
       clock_drift_ppm AS drift_ppm,
       clock_method AS method,
       clock_uncertainty_ns AS uncertainty_ns,
       base_time_ns,
       clock_ref_ns AS ref_ns,
       complete
FROM ranks;

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

-- Collective rows with the duration and the carrying slice resolved.
CREATE VIEW v_collectives AS
SELECT c.id, c.rank, c.pg, c.pg_desc, c.op, c.seq, c.comms_id,
       c.in_nelems, c.out_nelems, c.group_size, c.dtype, c.pg_ranks,
       c.enter_ns, c.exit_ns, c.exit_ns - c.enter_ns AS dur_ns,
       c.slice, t.kind AS track_kind, n.str AS slice_name
FROM collectives c
LEFT JOIN slices s ON s.id = c.slice
LEFT JOIN tracks t ON t.id = s.track
LEFT JOIN strings n ON n.id = s.name;

-- Straggler evidence per rank, straight from `collectives` (the matcher's
-- collective_instances will refine it). An instance is one (pg, seq) with a
-- known seq seen on at least two ranks; a rank arrives at its earliest enter
-- among its rows for the instance (CPU op or kernel: every rank of a run has
-- the same kinds of rows). The rank arriving last is late when it arrived
-- strictly after another; it is blamed for the skew (last - first arrival).
CREATE VIEW v_stragglers AS
WITH arrival AS (
    SELECT pg, seq, rank, min(enter_ns) AS enter_ns
    FROM collectives
    WHERE seq IS NOT NULL
    GROUP BY pg, seq, rank
),
instance AS (
    SELECT rank,
           count(*) OVER w AS nranks,
           max(enter_ns) OVER w - min(enter_ns) OVER w AS skew_ns,
           row_number() OVER (PARTITION BY pg, seq ORDER BY enter_ns DESC, rank) AS pos
    FROM arrival
    WINDOW w AS (PARTITION BY pg, seq)
)
SELECT rank,
       count(*) AS instances,
       sum(pos = 1 AND skew_ns > 0) AS late_count,
       1.0 * sum(pos = 1 AND skew_ns > 0) / count(*) AS late_fraction,
       sum(CASE WHEN pos = 1 THEN skew_ns ELSE 0 END) / 1000.0 AS blame_us
FROM instance
WHERE nranks >= 2
GROUP BY rank;

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

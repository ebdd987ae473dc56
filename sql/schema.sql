-- htamerge database schema, version 1 (meta.schema_version).
-- This file is the product's durable interface: tools and users query these
-- tables directly. Change it only by adding; bump schema_version when a
-- reader would need to know. Applied by store/writer.c to a new database;
-- indexes.sql and views.sql are applied at the end of the load.
--
-- Conventions:
--   * Times (*_ns, ts, enter/exit) are int64 nanoseconds since the Unix
--     epoch on rank 0's clock after alignment: aligned = raw + base_time_ns
--     + clock_offset_ns + clock_drift_ppm * 1e-6 * (raw - clock_ref_ns), raw
--     being the rank's own trace-clock ns (see ranks). When a trace has no
--     baseTimeNanoseconds, base_time_ns is NULL and times are trace-clock ns
--     plus the offset: not epoch times, but still comparable across ranks
--     once an offset is known.
--   * Durations (dur, *_ns) are ns; analysis results (*_us) are microseconds,
--     as HTA reports them.
--   * Columns holding an id of `strings` say "-> strings.id". NULL means
--     absent or unknown; the writer never stores -1 for "absent".
--   * Primary keys and the few UNIQUE keys exist during the load; all other
--     indexes are built by indexes.sql after it.

-- Key/value facts about the file and the run that produced it.
CREATE TABLE meta (
    key   TEXT PRIMARY KEY,   -- schema_version, created_by, htamerge_version, command_line, created_at, status, ...
    value TEXT                -- the value as text
);
INSERT INTO meta (key, value) VALUES ('schema_version', '1');

-- One row per rank that took part: identity, the clock model that maps its
-- raw times to the aligned clock, and whether everything it produced arrived.
CREATE TABLE ranks (
    rank                 INTEGER PRIMARY KEY,  -- global rank (0-based)
    host                 TEXT,     -- host name
    pid                  INTEGER,  -- host process id of the profiled program
    world_size           INTEGER,  -- number of ranks the rank reported
    backend              TEXT,     -- distributed backend (nccl, gloo, ...)
    rank_source          TEXT,     -- where the rank number came from: distributedInfo, file name, mpi, ...
    base_time_ns         INTEGER,  -- Unix ns of the rank's trace time 0 (Kineto baseTimeNanoseconds); NULL if the trace had none
    clock_offset_ns      INTEGER,  -- correction added to raw times to put them on rank 0's clock (0 for rank 0)
    clock_drift_ppm      REAL,     -- clock rate error, parts per million, applied relative to clock_ref_ns
    clock_ref_ns         INTEGER,  -- raw time at which the drift term is zero
    clock_method         TEXT,     -- how the offset was found: mpi, collectives, base_time, none
    clock_uncertainty_ns INTEGER,  -- estimated error of the aligned times; NULL if unknown
    complete             INTEGER,  -- 1 if all of the rank's data arrived, 0 if it died or was cut short
    batches              INTEGER,  -- number of batches stored for the rank
    pg_config            TEXT,     -- process-group configuration as JSON (distributedInfo.pg_config)
    device_props         TEXT,     -- GPU properties as JSON (deviceProperties)
    nccl_version         TEXT,     -- NCCL version string
    trace_meta           TEXT,     -- other top-level trace fields as a JSON object
    trace_flags          INTEGER,  -- bits (HM_INFO_F_*): 1 = some ts had a fraction of a us or was missing (HTA then rounds events inward to whole us)
    clock_step_ns        INTEGER DEFAULT 0,  -- a step of the rank's clock during the run (NTP stepping it), repaired: the change of its reading (< 0: back); 0 if none
    clock_step_at_ns     INTEGER   -- when the step happened, aligned ns; NULL if none
);

-- Source files read per rank (offline ingest); live capture has none.
CREATE TABLE files (
    id      INTEGER PRIMARY KEY,  -- file id
    rank    INTEGER,              -- -> ranks.rank
    path    TEXT,                 -- path as given to htamerge
    batches INTEGER,              -- batches the file produced
    slices  INTEGER               -- slices stored from the file
);

-- Events a reader saw but did not keep, counted per rank, file and reason.
-- Rows exist only for non-zero counts.
CREATE TABLE skipped (
    rank   INTEGER,  -- -> ranks.rank
    file   TEXT,     -- source file path; NULL for live capture
    reason TEXT,     -- no_dur, bad_value, no_cat, unsupported_ph, negative_dur, or unreadable_file (a whole file the reader refused; count = files) (hm_skip_name)
    count  INTEGER   -- number of events skipped
);

-- Interned strings: slice, track, counter and kernel names.
CREATE TABLE strings (
    id  INTEGER PRIMARY KEY,  -- string id (never 0: absent strings are NULL)
    str TEXT NOT NULL         -- the text
);

-- The first slice (lowest id, the first stored) of each slice name, so
-- that a search by name need not scan slices, which have no index on
-- name (indexes.sql). Written when the file is finished
-- (meta.name_first_slices = 'complete'); a file finished without it, or
-- still being written, is scanned instead.
CREATE TABLE name_first_slices (
    name  INTEGER PRIMARY KEY, -- strings.id of slices.name
    slice INTEGER NOT NULL     -- slices.id
);

-- Event categories (enum hm_cat of common/record.h): the values of slices.cat.
CREATE TABLE categories (
    id   INTEGER PRIMARY KEY,  -- enum hm_cat value; 0 is "other"
    name TEXT NOT NULL         -- category text as Kineto writes it (cpu_op, kernel, cuda_runtime, ...)
);

-- Timelines: one per CPU thread and per GPU stream of a rank.
CREATE TABLE tracks (
    id   INTEGER PRIMARY KEY,  -- track id
    rank INTEGER,              -- -> ranks.rank
    kind TEXT,                 -- cpu_thread or gpu_stream
    pid  INTEGER,              -- process id (cpu_thread) or device index (gpu_stream)
    tid  INTEGER,              -- thread id (cpu_thread) or stream id (gpu_stream)
    name INTEGER               -- thread name or "stream N" -> strings.id; NULL if unknown
);

-- Timed events on a track. Nesting (depth, parent) is computed within each
-- batch the writer received (one trace file offline, a few seconds of a live
-- capture): a slice that began in an earlier batch is not a parent. A slice
-- whose span only partly overlaps the open one is not nested in it. Within a
-- batch, ids follow (track, ts, longer first): a parent's id is below its
-- children's, and one batch's slices of a track are neighbours on disk.
CREATE TABLE slices (
    id          INTEGER PRIMARY KEY,  -- slice id
    track       INTEGER,  -- -> tracks.id
    ts          INTEGER,  -- start, aligned ns
    dur         INTEGER,  -- duration, ns (>= 0)
    name        INTEGER,  -- -> strings.id; NULL if unnamed
    cat         INTEGER,  -- category -> categories.id
    cat_name    INTEGER,  -- original category text -> strings.id, only when cat is 0 (other)
    depth       INTEGER,  -- nesting depth on its track, 0 = top level
    parent      INTEGER,  -- enclosing slice -> slices.id; NULL at depth 0
    correlation INTEGER,  -- CUPTI correlation id linking a launch to its GPU work; NULL if absent
    external_id INTEGER,  -- Kineto "External id" linking a CPU op to its launches; NULL if absent
    bytes       INTEGER,  -- bytes moved or set by memcpy/memset; NULL otherwise
    iteration   INTEGER,  -- ProfilerStep number containing the slice; NULL if none
    args        TEXT,     -- remaining event arguments as a compact JSON object; NULL if none
    flags       INTEGER   -- bits (HM_SLICE_F_*): 1 = the source named a stream (Kineto args.stream), which HTA requires of GPU work
);

-- Sampled values (memory counters): one row per sample.
CREATE TABLE counters (
    id     INTEGER PRIMARY KEY,  -- sample id
    rank   INTEGER,  -- -> ranks.rank
    device INTEGER,  -- device index; -1 is the CPU
    name   INTEGER,  -- counter name ("Total Allocated", ...) -> strings.id
    ts     INTEGER,  -- aligned ns
    value  REAL      -- sampled value (bytes for memory counters)
);

-- Collective calls as each rank saw them: one row per rank per collective
-- slice (a CPU record_param_comms op and its NCCL kernel are two rows).
CREATE TABLE collectives (
    id         INTEGER PRIMARY KEY,  -- collective row id
    rank       INTEGER,  -- -> ranks.rank
    slice      INTEGER,  -- the slice carrying the metadata -> slices.id
    pg         TEXT,     -- process group name ("Process Group Name")
    pg_desc    TEXT,     -- process group description
    op         TEXT,     -- collective name: allreduce, allgather, ...
    seq        INTEGER,  -- per-process-group sequence number; NULL if absent
    comms_id   TEXT,     -- NCCL communicator id; NULL if absent
    in_nelems  INTEGER,  -- input element count; NULL if absent
    out_nelems INTEGER,  -- output element count; NULL if absent
    group_size INTEGER,  -- ranks in the process group; NULL if absent
    dtype      TEXT,     -- element type
    pg_ranks   TEXT,     -- global ranks of the group as text, e.g. "[0, 1]"
    enter_ns   INTEGER,  -- aligned start (the slice's ts)
    exit_ns    INTEGER   -- aligned end (the slice's ts + dur)
);

-- Collectives matched across ranks (analysis/cross_rank/match.c): one row per instance.
-- A rank's rows of one call (record_param_comms CPU op, NCCL kernel,
-- gloo:/nccl: annotation) count once, timed by the GPU kernel where there is
-- one, else by the CPU range. Keys, in order: (pg, seq); (comms_id, seq);
-- else the k-th call of the same (pg, op, size) within the same ProfilerStep.
CREATE TABLE collective_instances (
    id             INTEGER PRIMARY KEY,  -- instance id
    pg             TEXT,     -- process group name ("comm:<id>" when keyed by a communicator id); NULL if unknown
    op             TEXT,     -- collective name, normalised: lower case, no '_' (allreduce, allgatherbase, ...)
    seq            INTEGER,  -- sequence number within the process group; for match = 'order' the 0-based index of the call among the same (pg, op, size) in its step
    match          TEXT,     -- how the ranks were matched: pg_seq, comms_id, order
    step           INTEGER,  -- ProfilerStep number the call belongs to; NULL if none
    size           INTEGER,  -- elements (In msg nelems, or the product of the first input's dims); NULL if unknown
    group_size     INTEGER,  -- ranks expected (process group size); NULL if unknown
    ranks          INTEGER,  -- ranks present in the trace
    analysed       INTEGER,  -- 1 if the straggler analysis counts it (two or more ranks, not point-to-point)
    first_enter_ns INTEGER,  -- earliest aligned enter over the ranks
    last_enter_ns  INTEGER,  -- latest aligned enter over the ranks
    late_rank      INTEGER,  -- rank that entered last -> ranks.rank; NULL when all entered at once or alone
    skew_ns        INTEGER,  -- last_enter_ns - first_enter_ns (arrival skew)
    min_exit_ns    INTEGER,  -- earliest aligned exit
    max_exit_ns    INTEGER   -- latest aligned exit
);

-- Membership of a matched collective: one row per rank present, with
-- Scalasca's wait states (docs/ANALYSES.md section 3) on aligned clocks.
CREATE TABLE collective_instance_ranks (
    instance      INTEGER,  -- -> collective_instances.id
    rank          INTEGER,  -- -> ranks.rank
    collective    INTEGER,  -- the row that gives the times -> collectives.id
    source        TEXT,     -- what timed it: gpu (kernel), cpu (CPU op), annotation (gloo:/nccl: range)
    enter_ns      INTEGER,  -- aligned enter of this rank (after any clock condition repair)
    exit_ns       INTEGER,  -- aligned exit of this rank (after any clock condition repair)
    repair_ns     INTEGER,  -- forward shift the clock condition repair applied to the exit (0 if none)
    late          INTEGER,  -- 1 if this rank entered last (and strictly after another rank)
    wait_ns       INTEGER,  -- wait at NxN: last_enter_ns - enter_ns
    completion_ns INTEGER,  -- NxN completion: exit_ns - min_exit_ns
    blame_ns      INTEGER   -- on the late rank's row: the waits of all the others, which it caused; else 0
);

-- Straggler verdicts (analysis/cross_rank/stragglers.c): one row for the whole run
-- (step NULL) and one per ProfilerStep. The rule is in analysis/cross_rank/stragglers.h.
CREATE TABLE straggler_verdicts (
    step        INTEGER,  -- ProfilerStep number; NULL for the whole run
    straggler   INTEGER,  -- the rank that stands out -> ranks.rank; NULL when none does
    candidate   INTEGER,  -- the rank with the most blame, straggler or not; NULL without blame
    instances   INTEGER,  -- analysed instances
    late_count  INTEGER,  -- instances the candidate entered last
    blame_share REAL,     -- candidate's blame / all blame (0..1); NULL without blame
    evidence    TEXT      -- one sentence saying why
);

-- Clock checks against collectives (analysis/cross_rank/clock_refine.c), one row per
-- rank other than the reference: for offline ingest the fit that refined the
-- clock, for live runs how well the MPI ping-pong model agrees with the
-- collectives' exits.
CREATE TABLE clock_checks (
    rank          INTEGER PRIMARY KEY,  -- -> ranks.rank
    reference     INTEGER,  -- rank the exits were compared with
    samples       INTEGER,  -- matched blocking instances used
    before_ns     INTEGER,  -- median of (reference exit - this rank's exit) before refinement
    after_ns      INTEGER,  -- the same after refinement (live: with the MPI model)
    resid_ns      INTEGER,  -- robust scatter (1.4826 x MAD) of those differences after refinement
    fit_offset_ns INTEGER,  -- correction fitted from the exits, at fit_ref_ns
    fit_drift_ppm REAL,     -- drift fitted from the exits (0 when not significant)
    fit_ref_ns    INTEGER,  -- aligned ns at which fit_offset_ns holds
    applied       INTEGER,  -- 1 if the data was re-timed with the fit (ranks.clock_method = collectives)
    violations    INTEGER,  -- instances where this rank left before the last rank entered (after the fit)
    repair_max_ns INTEGER   -- largest forward shift the controlled-logical-clock repair applied
);

-- NVTX (and user annotation) ranges matched across ranks by name path and
-- occurrence within their step. Filled by analysis/cross_rank/nvtx_stitch.c.
CREATE TABLE nvtx_stitched (
    id             INTEGER PRIMARY KEY,  -- stitched range id
    name           INTEGER,  -- range name -> strings.id
    path           TEXT,     -- enclosing range names and its own, joined by '/', e.g. train_step/backward (ProfilerStep#N left out)
    step           INTEGER,  -- ProfilerStep number; NULL outside steps
    occurrence     INTEGER,  -- n-th occurrence of the path within the step on each rank (0-based)
    ranks          INTEGER,  -- ranks that have this occurrence
    first_enter_ns INTEGER,  -- earliest aligned enter
    last_enter_ns  INTEGER,  -- latest aligned enter
    late_rank      INTEGER,  -- rank that entered last -> ranks.rank; NULL when all entered at once or alone
    skew_ns        INTEGER,  -- last_enter_ns - first_enter_ns
    min_exit_ns    INTEGER,  -- earliest aligned exit
    max_exit_ns    INTEGER,  -- latest aligned exit
    gpu_ns         INTEGER,  -- GPU time of the work launched inside, summed over ranks
    gpu_ops        INTEGER   -- GPU ops launched inside, summed over ranks
);

-- Membership of a stitched range: one row per rank present. GPU projection
-- as Nsight Systems' nvtx_gpu_proj_sum: the GPU ops whose launch call lies
-- inside the range on the same thread.
CREATE TABLE nvtx_stitched_ranks (
    stitched     INTEGER,  -- -> nvtx_stitched.id
    rank         INTEGER,  -- -> ranks.rank
    slice        INTEGER,  -- the range's slice -> slices.id
    enter_ns     INTEGER,  -- aligned enter
    exit_ns      INTEGER,  -- aligned exit
    gpu_start_ns INTEGER,  -- start of the first GPU op launched inside; NULL if none
    gpu_end_ns   INTEGER,  -- end of the last GPU op launched inside; NULL if none
    gpu_ns       INTEGER,  -- summed duration of the GPU ops launched inside
    gpu_ops      INTEGER   -- number of those GPU ops
);

-- Step breakdown per rank, MLPerf style (analysis/cross_rank/step_breakdown.c): each
-- instant of a ProfilerStep goes to exactly one bucket, first match wins:
-- exposed communication (communication running, no computation kernel),
-- the forward / backward / optimizer annotation the CPU is inside, compute
-- (a computation kernel running), else other. The buckets add up to dur_ns.
CREATE TABLE step_breakdown (
    rank            INTEGER,  -- -> ranks.rank
    step            INTEGER,  -- ProfilerStep number
    dur_ns          INTEGER,  -- the step's duration
    forward_ns      INTEGER,  -- inside a forward annotation (forward, fwd, ...)
    backward_ns     INTEGER,  -- inside a backward annotation (backward, bwd, ...)
    optimizer_ns    INTEGER,  -- inside an optimizer annotation (optimizer, optimizer_step, opt_step, ...)
    compute_ns      INTEGER,  -- computation kernels running outside those annotations
    exposed_comm_ns INTEGER,  -- communication (NCCL kernels, or CPU collective ranges on ranks without them) while no computation kernel runs
    other_ns        INTEGER,  -- the rest: data loading, host work, idle
    source          TEXT,     -- annotations (phase names found in the step) or kernels (kernel classes only)
    forward_gpu_ns   INTEGER, -- GPU busy time (union) of the work launched, on any thread, while inside a forward annotation
    backward_gpu_ns  INTEGER, -- likewise for backward (autograd launches from its own threads)
    optimizer_gpu_ns INTEGER, -- likewise for optimizer
    other_gpu_ns     INTEGER, -- GPU work launched in the step outside the three; the four sum to steps.gpu_busy_us give or take overlap between them
    PRIMARY KEY (rank, step)
);

-- process_groups and comm_exposed (communication by process group) and
-- critical_path are in sql/queries/writer_tables_added.sql, so that re-analysing a file written
-- before them creates them too (store/in_place.c).

-- Steps per rank: ProfilerStep#N ranges, or where a rank has none, steps
-- from another source (column source, analysis/step_source.h); the analysis
-- columns are filled from the HTA-definition results (a_* mode 'hta').
CREATE TABLE steps (
    rank         INTEGER,  -- -> ranks.rank
    number       INTEGER,  -- N of ProfilerStep#N
    slice        INTEGER,  -- the step's slice -> slices.id; NULL if unknown
    ts           INTEGER,  -- aligned start of the CPU range
    dur          INTEGER,  -- duration, ns
    gpu_busy_us  INTEGER,  -- union of GPU work launched in the step, us; NULL until analysed
    kernel_count INTEGER,  -- GPU kernels launched in the step; NULL until analysed
    dropped      INTEGER,  -- 1 if HTA's rule drops it (the last step); NULL until analysed
    source       TEXT,     -- profiler (ProfilerStep#N), hooks (NVTX "step" ranges in domain htamerge, numbered 1.. in order), nvtx (user ranges with a step-like name), inferred (cut from the period of the collective, NVTX or kernel stream; slice NULL)
    PRIMARY KEY (rank, number)
);

-- Analysis results per rank. mode is 'hta' (HTA's definitions, dropping the
-- last ProfilerStep) or 'all_steps' (keeping it); the v_* views show 'hta'.

-- Temporal breakdown of GPU time.
CREATE TABLE a_temporal (
    mode            TEXT,     -- hta or all_steps
    rank            INTEGER,  -- -> ranks.rank
    has_gpu         INTEGER,  -- 0 if the rank has no GPU events (the other columns then say nothing)
    idle_us         INTEGER,  -- kernel_us minus the union of GPU events
    compute_us      INTEGER,  -- union of computation kernels
    non_compute_us  INTEGER,  -- kernel_us - compute_us - idle_us
    kernel_us       INTEGER,  -- last GPU event end - first GPU event start
    idle_pct        REAL,     -- idle_us / kernel_us * 100; NULL if undefined
    compute_pct     REAL,     -- compute_us / kernel_us * 100; NULL if undefined
    non_compute_pct REAL,     -- non_compute_us / kernel_us * 100; NULL if undefined
    PRIMARY KEY (mode, rank)
);

-- Communication hidden behind computation.
CREATE TABLE a_overlap (
    mode        TEXT,     -- hta or all_steps
    rank        INTEGER,  -- -> ranks.rank
    comm_us     INTEGER,  -- union of communication kernels
    overlap_us  INTEGER,  -- |union(comp) & union(comm)|
    overlap_pct REAL,     -- overlap_us / comm_us * 100; NULL when comm_us is 0 (HTA prints NaN)
    PRIMARY KEY (mode, rank)
);

-- Idle time between GPU events, per stream, by cause.
CREATE TABLE a_idle (
    mode           TEXT,     -- hta or all_steps
    rank           INTEGER,  -- -> ranks.rank
    stream         INTEGER,  -- GPU stream id (tracks.tid of a gpu_stream track)
    host_wait_us   INTEGER,  -- gaps where the launch came after the previous event ended
    kernel_wait_us INTEGER,  -- other gaps shorter than 30 us
    other_us       INTEGER,  -- remaining gaps
    PRIMARY KEY (mode, rank, stream)
);

-- GPU time per kernel class (union of the class's kernels).
CREATE TABLE a_kernel_class (
    mode                 TEXT,     -- hta or all_steps
    rank                 INTEGER,  -- -> ranks.rank
    class                TEXT,     -- COMMUNICATION, MEMORY or COMPUTATION
    union_us             INTEGER,  -- union of the class's kernel intervals
    comp_overlap_comm_us INTEGER,  -- |union(COMPUTATION) & union(COMMUNICATION)| of the rank (same on each class row)
    PRIMARY KEY (mode, rank, class)
);

-- HTA's kernel-type breakdown: GPU time per rank split into disjoint labels
-- by which kernel classes run at the same time.
CREATE TABLE a_kernel_labels (
    mode  TEXT,     -- hta or all_steps
    rank  INTEGER,  -- -> ranks.rank
    label TEXT,     -- COMPUTATION, COMMUNICATION, MEMORY, or e.g. "COMPUTATION overlapping COMMUNICATION"
    mask  INTEGER,  -- the label as class bits: 1 COMPUTATION, 2 COMMUNICATION, 4 MEMORY
    us    INTEGER,  -- time covered by exactly these classes
    PRIMARY KEY (mode, rank, label)
);

-- Kernel statistics per rank and kernel name.
CREATE TABLE a_kernels (
    mode    TEXT,     -- hta or all_steps
    rank    INTEGER,  -- -> ranks.rank
    name    INTEGER,  -- kernel name -> strings.id
    class   TEXT,     -- COMMUNICATION, MEMORY or COMPUTATION
    count   INTEGER,  -- number of launches
    sum_us  INTEGER,  -- total duration
    min_us  INTEGER,  -- shortest
    max_us  INTEGER,  -- longest
    mean_us REAL,     -- mean duration
    std_us  REAL,     -- standard deviation of the duration
    PRIMARY KEY (mode, rank, name)
);

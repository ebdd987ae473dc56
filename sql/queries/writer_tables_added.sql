-- Tables added to the schema (sql/schema.sql) after its first version, as
-- IF NOT EXISTS: run when a file is created and when an older one is
-- re-analysed in place (store/writer.c, store/in_place.c).
-- Process groups the matched collectives name (analysis/cross_rank/comm_groups.c).
CREATE TABLE IF NOT EXISTS process_groups (
    pg          TEXT PRIMARY KEY,  -- group name as collective_instances.pg ("comm:<id>" for an NCCL communicator)
    dim         TEXT,     -- parallelism dimension from the name or description: fsdp, dp, tp, pp, ep, cp, world; NULL if none
    description TEXT,     -- "Process Group Description" (torch), NULL if absent
    ranks       TEXT,     -- global ranks as text, e.g. "[0, 2]"; NULL if absent
    size        INTEGER,  -- ranks in the group; NULL if unknown
    calls       INTEGER   -- matched collectives on it
);

-- Communication per rank, step and process group (comm_groups.c): the
-- time the group's collectives ran (union) and its exposed part (no
-- computation kernel running on the rank; split evenly where several
-- groups are exposed at once, so a step's rows add up).
CREATE TABLE IF NOT EXISTS comm_exposed (
    rank       INTEGER,  -- -> ranks.rank
    step       INTEGER,  -- step number; NULL: a rank without steps, its whole run
    pg         TEXT,     -- -> process_groups.pg; "(unkeyed)" for collectives without a group
    comm_ns    INTEGER,  -- union of the group's collectives on the rank in the step
    exposed_ns INTEGER   -- the part when no computation kernel ran
);

-- The critical path of each step across ranks
-- (analysis/cross_rank/critical_path.h): its segments in time order.
CREATE TABLE IF NOT EXISTS critical_path (
    step       INTEGER,  -- step number
    seq        INTEGER,  -- 0 for the earliest segment
    rank       INTEGER,  -- the rank whose work or exit it is -> ranks.rank
    kind       TEXT,     -- work (the rank's own time) or comm (a collective's transfer after its last rank entered)
    name       TEXT,     -- work: forward, backward, optimizer or other (the CPU's phase); comm: the op
    pg         TEXT,     -- comm: its process group -> process_groups.pg; NULL otherwise
    start_ns   INTEGER,  -- aligned
    end_ns     INTEGER,
    compute_ns INTEGER,  -- work: time a computation kernel of the rank ran inside it (the rest is host: CPU, launch gaps)
    instance   INTEGER   -- comm: -> collective_instances.id
);

-- Each rank's activity in equal time buckets over the run
-- (analysis/cross_rank/rank_activity.h): what whole-run views draw (the
-- viewer's heat map, /api/heatmap) instead of reading slices.
CREATE TABLE IF NOT EXISTS rank_activity (
    rank      INTEGER PRIMARY KEY,  -- -> ranks.rank
    origin_ns INTEGER,  -- aligned start of bucket 0 (the same for every rank)
    bucket_ns INTEGER,  -- bucket width
    buckets   INTEGER,  -- buckets in each blob
    busy      BLOB,     -- a byte per bucket: its share (0..255) in which the rank worked: a kernel or copy on any of its GPU streams; without GPU streams, annotated work or a collective
    comm      BLOB,     -- a byte per bucket: its share in which the rank communicated: communication kernels; without GPU streams, collectives
    longest_ns INTEGER  -- the longest interval counted: bounds the scan of a window's slices from below
);

-- Each rank's stored slices, counted while writing (store/analysis_rows.c),
-- so that summaries need not count a large file's slices. Written when the
-- run or ingest finishes: a live run has no rows until then.
CREATE TABLE IF NOT EXISTS rank_slices (
    rank   INTEGER PRIMARY KEY,  -- -> ranks.rank
    slices INTEGER               -- its rows of slices
);

-- GPU (and CPU) memory peaks per rank, device, step and phase
-- (analysis/cross_rank/memory_peaks.h), from the memory counters
-- (Kineto's [memory] events: Total Allocated, Total Reserved).
CREATE TABLE IF NOT EXISTS memory_peaks (
    rank            INTEGER,  -- -> ranks.rank
    device          INTEGER,  -- device index; -1 is the CPU
    step            INTEGER,  -- ProfilerStep number; NULL outside every step
    phase           TEXT,     -- forward, backward, optimizer (the innermost such annotation open), or other
    samples         INTEGER,  -- memory samples in this cell
    allocated_bytes INTEGER,  -- the largest Total Allocated sampled
    reserved_bytes  INTEGER,  -- the largest Total Reserved sampled
    peak_ns         INTEGER   -- aligned time of the allocated peak (the first, where it repeats)
);

-- Kernels a CUDA graph ran (live CUPTI capture; analysis/cross_rank/graph_kernels.h), each
-- with the CPU-side context of its graph's launch and of its node's capture. Filled when
-- some rank recorded graph nodes being made (slices of category cuda_graph, which CUPTI's
-- resource callbacks give on the creating thread); empty otherwise (Kineto traces).
-- Phases are forward, backward or optimizer (annotations of those names open at the time,
-- on any thread of the rank, as the step breakdown reads them), NULL for none.
CREATE TABLE IF NOT EXISTS graph_kernels (
    slice         INTEGER PRIMARY KEY,  -- the kernel -> slices.id
    rank          INTEGER,  -- -> ranks.rank
    graph_id      INTEGER,  -- graph id of the kernel record (args "graph id")
    node_id       INTEGER,  -- graph node id of the kernel record (args "graph node id"): a node of the executable graph
    capture_node  INTEGER,  -- the node made at capture (or by explicit creation) that node_id was cloned from; node_id itself when made so; NULL when its making was not recorded
    capture_graph INTEGER,  -- graph id of the graph capture_node was made in
    capture_slice INTEGER,  -- its "graph node created" slice -> slices.id
    capture_call  INTEGER,  -- the CUDA call on the same thread that made it (the captured launch) -> slices.id; NULL when that call was not recorded
    capture_range INTEGER,  -- the innermost annotation (NVTX, record_function, the hooks' phases) open on the making thread then -> slices.id; NULL: none
    capture_phase TEXT,     -- the phase open then
    launch        INTEGER,  -- the graph's launch call (cudaGraphLaunch; its correlation id is the kernel's) -> slices.id; NULL when not recorded
    launch_range  INTEGER,  -- the innermost annotation open around the launch on its thread -> slices.id; NULL: none
    launch_phase  TEXT,     -- the phase open at the launch
    phase         TEXT      -- what the step breakdown charges the kernel's GPU time to: launch_phase, else capture_phase (a replay in a step but in no finer phase)
);

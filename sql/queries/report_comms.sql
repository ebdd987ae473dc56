-- report comms: communication by process group, op and message size, from
-- the collectives matched across ranks (collective_instances). Per row:
--   pg, dim          the group (its name, or "comm:<id>" for an NCCL
--                    communicator) and its parallelism dimension
--                    (process_groups.dim; else the name);
--   size_bucket      message size class (bytes as nccl-tests count them:
--                    all_gather the gathered output, others the input);
--   calls, ranks     matched calls, and ranks per call (most of them);
--   bytes            mean bytes per call;
--   time_us          mean time from the last rank's enter to the last exit:
--                    the transfer once every rank is there, without the wait;
--   total_ms         the sum of that time;
--   algbw_gbps       bytes / time (GB/s, 1e9), over all the calls;
--   busbw_gbps       algbw x the nccl-tests bus factor of the op for n ranks:
--                    all_reduce 2(n-1)/n; all_gather, reduce_scatter,
--                    all_to_all (n-1)/n; broadcast, reduce 1; else none;
--   wait_ms          Scalasca's wait at NxN summed over the calls' ranks;
--   skew_us          mean arrival skew (last enter - first enter);
--   late_rank        the rank that entered last most often, and how often.
-- Gloo calls seen through htamerge's Python hooks end when the caller saw
-- the work done (the end of the backward that waited on it), so their time
-- is an upper bound and their bandwidth a lower one.
-- A call's dtype and bytes are read from its members on its first 8 ranks:
-- every rank of a call has the same ones (an uneven all_to_all: the largest
-- of those 8), and at 1,024 ranks reading every member's collectives row,
-- wide with its group's rank list, read most of the file (0.7 s for 16 calls).
WITH members AS (
    SELECT instance, collective, row_number() OVER (PARTITION BY instance ORDER BY rank) AS pos
    FROM collective_instance_ranks
),
facts AS (    -- per instance: dtype and bytes from its first members
    SELECT r.instance, min(c.dtype) AS dtype, max(nullif(s.bytes, -1)) AS sbytes
    FROM members r
    JOIN collectives c ON c.id = r.collective
    LEFT JOIN slices s ON s.id = c.slice
    WHERE r.pos <= 8
    GROUP BY r.instance
),
m AS (        -- and the wait of all its ranks
    SELECT w.instance, f.dtype, f.sbytes, w.wait_ns
    FROM (SELECT instance, sum(wait_ns) AS wait_ns FROM collective_instance_ranks GROUP BY instance) w
    LEFT JOIN facts f ON f.instance = w.instance
),
inst AS (
    SELECT i.id, coalesce(i.pg, '(unkeyed)') AS pg, i.op, i.step, i.size, i.skew_ns, i.late_rank,
           coalesce(i.group_size, i.ranks) AS n, i.ranks,
           max(i.max_exit_ns - i.last_enter_ns, 0) AS xfer_ns, m.wait_ns,
           lower(coalesce(m.dtype, '')) AS dt, m.sbytes, coalesce(g.dim, i.pg, '(unkeyed)') AS dim
    FROM collective_instances i
    LEFT JOIN m ON m.instance = i.id
    LEFT JOIN process_groups g ON g.pg = i.pg
    WHERE i.ranks >= 2
),
sized AS (
    SELECT *,
           coalesce(sbytes, size * CASE
               WHEN dt LIKE '%float64%' OR dt LIKE '%double%' OR dt LIKE '%int64%' OR dt LIKE '%long%' THEN 8
               WHEN dt LIKE '%bfloat16%' OR dt LIKE '%float16%' OR dt LIKE '%half%' OR dt LIKE '%bf16%' THEN 2
               WHEN dt LIKE '%float8%' OR dt LIKE '%fp8%' OR dt LIKE '%int8%' OR dt LIKE '%char%'
                    OR dt LIKE '%bool%' OR dt LIKE '%byte%' THEN 1
               WHEN dt LIKE '%float%' OR dt LIKE '%int%' THEN 4
           END) * CASE WHEN op LIKE 'allgather%' AND sbytes IS NULL THEN n ELSE 1 END AS bytes,
           CASE
               WHEN op LIKE 'allreduce%' THEN 2.0 * (n - 1) / n
               WHEN op LIKE 'allgather%' OR op LIKE 'reducescatter%' OR op LIKE 'alltoall%' THEN 1.0 * (n - 1) / n
               WHEN op IN ('broadcast', 'reduce') THEN 1.0
           END AS bus_factor
    FROM inst
),
bucketed AS (
    SELECT *,
           CASE
               WHEN bytes IS NULL THEN 'unknown'
               WHEN bytes < 1024 THEN '< 1 KiB'
               WHEN bytes < 65536 THEN '1-64 KiB'
               WHEN bytes < 1048576 THEN '64 KiB-1 MiB'
               WHEN bytes < 16777216 THEN '1-16 MiB'
               WHEN bytes < 268435456 THEN '16-256 MiB'
               ELSE '>= 256 MiB'
           END AS size_bucket,
           CASE
               WHEN bytes IS NULL THEN 6 WHEN bytes < 1024 THEN 0 WHEN bytes < 65536 THEN 1
               WHEN bytes < 1048576 THEN 2 WHEN bytes < 16777216 THEN 3 WHEN bytes < 268435456 THEN 4 ELSE 5
           END AS bucket_order
    FROM sized
),
late AS (
    SELECT pg, op, size_bucket, late_rank, count(*) AS k,
           row_number() OVER (PARTITION BY pg, op, size_bucket ORDER BY count(*) DESC, late_rank) AS pick
    FROM bucketed WHERE late_rank IS NOT NULL
    GROUP BY pg, op, size_bucket, late_rank
)
SELECT b.pg, b.dim, b.op, b.size_bucket, count(*) AS calls,
       (SELECT n FROM bucketed x WHERE x.pg = b.pg AND x.op = b.op AND x.size_bucket = b.size_bucket
        GROUP BY n ORDER BY count(*) DESC, n LIMIT 1) AS ranks,
       CAST(round(avg(b.bytes)) AS INTEGER) AS bytes,
       round(avg(b.xfer_ns) / 1e3, 3) AS time_us,
       round(sum(b.xfer_ns) / 1e6, 3) AS total_ms,
       round(sum(b.bytes) * 1.0 / nullif(sum(CASE WHEN b.bytes IS NOT NULL THEN b.xfer_ns END), 0), 3) AS algbw_gbps,
       round(sum(b.bytes * b.bus_factor) / nullif(sum(CASE WHEN b.bytes IS NOT NULL THEN b.xfer_ns END), 0), 3)
           AS busbw_gbps,
       round(sum(b.wait_ns) / 1e6, 3) AS wait_ms,
       round(avg(b.skew_ns) / 1e3, 3) AS skew_us,
       l.late_rank, coalesce(l.k, 0) AS late_count
FROM bucketed b
LEFT JOIN late l ON l.pg = b.pg AND l.op = b.op AND l.size_bucket = b.size_bucket AND l.pick = 1
GROUP BY b.pg, b.op, b.size_bucket
ORDER BY sum(b.xfer_ns) DESC, b.pg, b.op, min(b.bucket_order);

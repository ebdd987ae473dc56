-- /api/windows: the capture windows of the ranks in ?3 (a JSON array of
-- ranks; NULL: every rank) that overlap [?1, ?2) (absolute ns), from two
-- counters live capture writes (device -1):
--   "htamerge/cupti recording" at 0: CUPTI records no GPU activity from ts
--     on (kind paused) until a sample at 1; recorded before a rank's first
--     sample (report_cupti_pauses.sql reads the same counter);
--   "htamerge/capture window" at 1: a full-capture window (kind capture)
--     from ts on, until a sample at 0.
-- A sample is active when it opens its kind's window; an edge is a sample
-- whose state differs from the one before it (a repeat changes nothing). A
-- window runs from an active edge to the next edge; with none, to the
-- rank's last event (the latest end among its tracks' last 16 slices in
-- lod_src, the timeline's slices), or to ?4 (the run's end) when the rank
-- has no event after the window began (none is drawn if neither is later).
-- Both counters are written only when their state changes, so each rank's
-- series are read whole: through counters_rank_name_ts in a finished file,
-- through one automatic index in a live one (the writer builds indexes at
-- the end), never a scan per rank. Rows by rank, kind, start;
-- query/capture_windows.c merges and bounds them.
WITH names AS MATERIALIZED (
    SELECT id, str = 'htamerge/cupti recording' AS paused
    FROM strings
    WHERE str IN ('htamerge/cupti recording', 'htamerge/capture window')
),
samples AS (
    SELECT c.rank, c.name, n.paused, c.id, c.ts, (c.value != 0) != n.paused AS active,
           lag((c.value != 0) != n.paused, 1, 0) OVER (PARTITION BY c.rank, c.name ORDER BY c.ts, c.id) AS was
    FROM names n
    CROSS JOIN ranks r
    CROSS JOIN counters c
    WHERE c.rank = r.rank AND c.name = n.id
      AND (?3 IS NULL OR r.rank IN (SELECT value FROM json_each(?3)))
),
edges AS MATERIALIZED (
    SELECT rank, paused, ts, active, lead(ts) OVER (PARTITION BY rank, name ORDER BY ts, id) AS next_ts
    FROM samples
    WHERE active != was
),
rank_end AS MATERIALIZED (   -- only the ranks with a window still open
    SELECT t.rank, max((SELECT max(x.ts + x.dur)
                        FROM (SELECT ts, dur FROM lod_src WHERE track = t.id ORDER BY ts DESC LIMIT 16) x)) AS end_ns
    FROM tracks t
    WHERE t.rank IN (SELECT rank FROM edges WHERE active AND next_ts IS NULL AND ts < ?2)
    GROUP BY t.rank
),
windows AS (
    SELECT e.rank, CASE WHEN e.paused THEN 'paused' ELSE 'capture' END AS kind, e.ts AS start_ns,
           coalesce(e.next_ts, CASE WHEN re.end_ns > e.ts THEN re.end_ns ELSE max(e.ts, ?4) END) AS end_ns
    FROM edges e
    LEFT JOIN rank_end re ON re.rank = e.rank
    WHERE e.active AND e.ts < ?2
)
SELECT rank, kind, start_ns, end_ns
FROM windows
WHERE end_ns > start_ns AND end_ns > ?1
ORDER BY rank, kind, start_ns;

-- /api/search: what a query text names, best first: at most 12 hits
-- (search.c adds the slices of at most 5 names after them, search_names.sql).
-- ?1: the text; ?2: a number in it (rank, step or sequence), or NULL;
-- ?3: its word before a number ("rank", "step", a process group or an op),
-- or NULL. Times are absolute; the caller makes them relative.
-- kind: rank, step, collective, nvtx (stitched range).
WITH rank_hit AS (
    SELECT 'rank' AS kind, 'rank ' || rank AS label, rank, NULL AS t0, NULL AS t1, NULL AS id,
           NULL AS pg, NULL AS seq, 0 AS ord
    FROM ranks
    WHERE ?2 IS NOT NULL AND rank = ?2 AND (?3 IS NULL OR lower(?3) = 'rank')
),
step_hit AS (
    SELECT 'step', 'step ' || number || ' (' || count(*) || ' ranks)', NULL, min(ts), max(ts + dur), NULL,
           NULL, NULL, 1
    FROM steps
    WHERE ?2 IS NOT NULL AND number = ?2 AND (?3 IS NULL OR lower(?3) = 'step')
    GROUP BY number
),
coll_hit AS (
    SELECT 'collective', op || ' · pg ' || coalesce(pg, '?') || ' · seq ' || seq
               || CASE WHEN late_rank IS NOT NULL THEN ' · late rank ' || late_rank ELSE '' END,
           late_rank, first_enter_ns, max_exit_ns, id, pg, seq, 2
    FROM collective_instances
    WHERE ?2 IS NOT NULL AND seq = ?2 AND ?3 IS NOT NULL AND lower(?3) NOT IN ('rank', 'step')
      AND (pg = ?3 OR op = replace(lower(?3), '_', ''))
    LIMIT 10
),
nvtx_hit AS (
    SELECT 'nvtx', coalesce(n.path, s.str) || CASE WHEN n.step IS NOT NULL THEN ' · step ' || n.step ELSE '' END
               || CASE WHEN n.late_rank IS NOT NULL THEN ' · late rank ' || n.late_rank ELSE '' END,
           n.late_rank, n.first_enter_ns, n.max_exit_ns, n.id, NULL, NULL, 3
    FROM strings s JOIN nvtx_stitched n ON n.name = s.id
    WHERE ?2 IS NULL AND length(?1) >= 2 AND instr(lower(s.str), lower(?1)) > 0
    ORDER BY n.first_enter_ns
    LIMIT 10
)
SELECT kind, label, rank, t0, t1, id, pg, seq FROM (
    SELECT * FROM rank_hit UNION ALL SELECT * FROM step_hit UNION ALL SELECT * FROM coll_hit
    UNION ALL SELECT * FROM nvtx_hit
)
ORDER BY ord;

-- report collectives (server): one row per instance, a (pg, seq) seen on at
-- least two ranks, from `collectives` (the matcher's collective_instances
-- may refine it). A rank arrives at its earliest row of the instance, as in
-- v_stragglers; late_rank is the last to arrive (NULL when all arrived
-- together). id is a collectives row of the instance, for
-- /api/collective/{id}; start_ns is the first arrival, aligned ns.
WITH arrival AS (
    SELECT pg, seq, rank, max(op) AS op, min(enter_ns) AS enter_ns, max(exit_ns) AS exit_ns,
           min(id) AS id
    FROM collectives
    WHERE seq IS NOT NULL
    GROUP BY pg, seq, rank
),
ordered AS (
    SELECT *, row_number() OVER (PARTITION BY pg, seq ORDER BY enter_ns DESC, rank) AS pos
    FROM arrival
)
SELECT pg, max(op) AS op, seq, count(*) AS ranks,
       (max(enter_ns) - min(enter_ns)) / 1000.0 AS skew_us,
       CASE WHEN max(enter_ns) > min(enter_ns) THEN max(CASE WHEN pos = 1 THEN rank END) END AS late_rank,
       (max(exit_ns) - min(enter_ns)) / 1000.0 AS span_us,
       min(id) AS id,
       min(enter_ns) AS start_ns
FROM ordered
GROUP BY pg, seq
HAVING count(*) >= 2
ORDER BY min(enter_ns), pg, seq;

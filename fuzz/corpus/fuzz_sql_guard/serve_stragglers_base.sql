-- report stragglers (server) on a file still being written, which has no
-- views yet: the definition of v_stragglers (views.sql) over `collectives`.
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
       sum(pos = 1 AND skew_ns > 0) AS late_count,
       count(*) AS instances,
       1.0 * sum(pos = 1 AND skew_ns > 0) / count(*) AS late_fraction,
       sum(CASE WHEN pos = 1 THEN skew_ns ELSE 0 END) / 1000.0 AS blame_us
FROM instance
WHERE nranks >= 2
GROUP BY rank
ORDER BY rank;

-- report comms, "exposed": per process group, the time its collectives ran
-- and the part when no computation kernel ran on the rank (comm_exposed,
-- analysis/cross_rank/comm_groups.h), summed over ranks and steps, and the
-- rank where it was most exposed.
WITH per_rank AS (
    SELECT pg, rank, sum(comm_ns) AS comm_ns, sum(exposed_ns) AS exposed_ns
    FROM comm_exposed GROUP BY pg, rank
)
SELECT p.pg, coalesce(g.dim, p.pg) AS dim, count(*) AS ranks,
       round(sum(p.comm_ns) / 1e6, 3) AS comm_ms,
       round(sum(p.exposed_ns) / 1e6, 3) AS exposed_ms,
       round(100.0 * sum(p.exposed_ns) / nullif(sum(p.comm_ns), 0), 2) AS exposed_pct,
       (SELECT q.rank FROM per_rank q WHERE q.pg = p.pg ORDER BY q.exposed_ns DESC, q.rank LIMIT 1) AS most_exposed_rank,
       round(max(p.exposed_ns) / 1e6, 3) AS most_exposed_ms
FROM per_rank p
LEFT JOIN process_groups g ON g.pg = p.pg
GROUP BY p.pg
ORDER BY sum(p.exposed_ns) DESC, p.pg;

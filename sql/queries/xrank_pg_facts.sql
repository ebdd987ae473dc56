-- Each process group the matched collectives name, with what its rows say
-- of it (analysis/cross_rank/comm_groups.c).
SELECT i.pg AS pg, count(*) AS calls, max(i.group_size) AS size,
       (SELECT max(c.pg_desc) FROM collectives c WHERE c.pg = i.pg) AS description,
       (SELECT max(c.pg_ranks) FROM collectives c WHERE c.pg = i.pg) AS ranks
FROM collective_instances i
WHERE i.pg IS NOT NULL
GROUP BY i.pg;

-- report steps, "comm_by_pg": each step's communication per process group
-- (comm_exposed): the time it ran and its exposed part, which add up over
-- the groups to the step's exposed communication.
SELECT e.rank, e.step, e.pg, coalesce(g.dim, e.pg) AS dim,
       round(e.comm_ns / 1e6, 3) AS comm_ms, round(e.exposed_ns / 1e6, 3) AS exposed_ms
FROM comm_exposed e
LEFT JOIN process_groups g ON g.pg = e.pg
ORDER BY e.rank, e.step, e.exposed_ns DESC, e.pg;

-- One rank's communication on one group in one step (comm_groups.c).
INSERT INTO comm_exposed (rank, step, pg, comm_ns, exposed_ns) VALUES (?1, ?2, ?3, ?4, ?5);

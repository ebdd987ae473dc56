-- One rank of a matched collective with its wait states (analysis/cross_rank/match.c).
INSERT INTO collective_instance_ranks (instance, rank, collective, source, enter_ns, exit_ns,
                                       repair_ns, late, wait_ns, completion_ns, blame_ns)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11);

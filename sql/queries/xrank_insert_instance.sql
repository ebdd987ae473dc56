-- One matched collective (analysis/cross_rank/match.c).
INSERT INTO collective_instances (pg, op, seq, match, step, size, group_size, ranks, analysed,
                                  first_enter_ns, last_enter_ns, late_rank, skew_ns,
                                  min_exit_ns, max_exit_ns)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15);

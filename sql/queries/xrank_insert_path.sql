-- One segment of a step's critical path (analysis/cross_rank/critical_path.c).
INSERT INTO critical_path (step, seq, rank, kind, name, pg, start_ns, end_ns, compute_ns, instance)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10);

-- One process group (analysis/cross_rank/comm_groups.c).
INSERT OR REPLACE INTO process_groups (pg, dim, description, ranks, size, calls)
VALUES (?1, ?2, ?3, ?4, ?5, ?6);

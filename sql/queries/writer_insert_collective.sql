-- One collective of a batch (store/rows.c), its times aligned.
INSERT INTO collectives (rank, slice, pg, pg_desc, op, seq, comms_id, in_nelems,
                         out_nelems, group_size, dtype, pg_ranks, enter_ns, exit_ns)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14);

-- One kernel class's busy time on a rank under mode ?1 (store/analysis_rows.c).
INSERT INTO a_kernel_class (mode, rank, class, union_us, comp_overlap_comm_us)
VALUES (?1, ?2, ?3, ?4, ?5);

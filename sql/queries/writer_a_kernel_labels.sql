-- Time under one combination of kernel classes (mask) on a rank under
-- mode ?1 (store/analysis_rows.c).
INSERT INTO a_kernel_labels (mode, rank, label, mask, us)
VALUES (?1, ?2, ?3, ?4, ?5);

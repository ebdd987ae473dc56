-- Stores one step's analysis (mode 'hta') in `steps`, adding the step when
-- the batches did not carry it. Used by mrg_writer_add_analysis.
-- ?1 rank, ?2 number, ?3 ts (aligned), ?4 dur, ?5 gpu_busy_us,
-- ?6 kernel_count, ?7 dropped, ?8 source.
INSERT INTO steps (rank, number, ts, dur, gpu_busy_us, kernel_count, dropped, source)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
ON CONFLICT (rank, number) DO UPDATE
SET gpu_busy_us = excluded.gpu_busy_us,
    kernel_count = excluded.kernel_count,
    dropped = excluded.dropped,
    source = excluded.source;

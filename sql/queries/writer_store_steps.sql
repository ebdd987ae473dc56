-- One step found over a rank read back (store/readback.c,
-- mrg_writer_store_steps): ?1 rank, ?2 number, ?3 ts (aligned), ?4 dur,
-- ?5 source; no slice.
INSERT OR REPLACE INTO steps (rank, number, ts, dur, source) VALUES (?1, ?2, ?3, ?4, ?5);

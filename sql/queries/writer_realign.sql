-- Applies a rank's final clock model to what was written with its start
-- offset. hm_realign(t) and hm_realign_rank() are C functions registered
-- for the duration of one call (merger/writer.c, mrg_writer_realign).
UPDATE slices SET ts = hm_realign(ts), dur = hm_realign(ts + dur) - hm_realign(ts)
WHERE track IN (SELECT id FROM tracks WHERE rank = hm_realign_rank());
UPDATE counters SET ts = hm_realign(ts) WHERE rank = hm_realign_rank();
UPDATE collectives SET enter_ns = hm_realign(enter_ns), exit_ns = hm_realign(exit_ns)
WHERE rank = hm_realign_rank();
UPDATE steps SET ts = hm_realign(ts), dur = hm_realign(ts + dur) - hm_realign(ts)
WHERE rank = hm_realign_rank();

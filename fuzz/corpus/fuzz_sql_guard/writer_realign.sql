-- Applies every rank's final clock model to what was written with its start
-- offset, in one pass per table. hm_realign(rank, t) and
-- hm_realign_track(track, t) are C functions registered for the duration of
-- one call (merger/writer.c, mrg_writer_realign_all); they return t itself
-- for ranks whose model is unchanged.
UPDATE slices SET ts = hm_realign_track(track, ts),
                  dur = hm_realign_track(track, ts + dur) - hm_realign_track(track, ts);
UPDATE counters SET ts = hm_realign(rank, ts);
UPDATE collectives SET enter_ns = hm_realign(rank, enter_ns), exit_ns = hm_realign(rank, exit_ns);
UPDATE steps SET ts = hm_realign(rank, ts), dur = hm_realign(rank, ts + dur) - hm_realign(rank, ts);

-- Applies every rank's final clock model to what was written with its start
-- offset, in one pass per table. hm_realign(rank, t [, row]) and
-- hm_realign_track(track, t [, row]) are C functions registered for the
-- duration of one call (store/writer.c, mrg_writer_realign_all); they
-- return t itself for ranks whose model is unchanged. row is the slice that
-- read t: a model with a repaired clock step tells apart slices that read
-- the same moment twice. hm_realign_end(rank, row, start, end) and
-- hm_realign_track_end(track, row, start, end) map an interval's end: one
-- that starts before the step and ends after it is mapped with the later
-- clock, and never before its start.
UPDATE slices SET ts = hm_realign_track(track, ts, id),
                  dur = hm_realign_track_end(track, id, ts, ts + dur) - hm_realign_track(track, ts, id);
UPDATE counters SET ts = hm_realign(rank, ts);
UPDATE collectives SET enter_ns = hm_realign(rank, enter_ns, slice),
                       exit_ns = hm_realign_end(rank, slice, enter_ns, exit_ns);
UPDATE steps SET ts = hm_realign(rank, ts, slice),
                 dur = hm_realign_end(rank, slice, ts, ts + dur) - hm_realign(rank, ts, slice);

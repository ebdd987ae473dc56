-- Indexes built after the load (store/writer.c, mrg_writer_finish): building
-- them once over sorted data is much faster than maintaining them per insert.
-- The exception is slices_track_ts in a fresh load, whose entries arrive in
-- its own order: store/load_index.c keeps it from the first row; and
-- slices_correlation, which ingest builds while the cross-rank analyses run
-- (analysis/cross_rank/overlap.c).
-- Each names the readers it serves.

-- Timeline windows and per-track scans (query server, analyses): covers the
-- time filter so only matching slices are fetched.
CREATE INDEX IF NOT EXISTS slices_track_ts ON slices (track, ts, dur);

-- Launch <-> GPU work links (CPU cuda_runtime event to its kernel).
CREATE INDEX IF NOT EXISTS slices_correlation ON slices (correlation) WHERE correlation IS NOT NULL;

-- Not indexed, on purpose: slices(name) and slices(parent) each cost about
-- as much to build as slices_track_ts (measured: +60% on _finish). Children
-- of a slice are found through slices_track_ts (same track, ts within the
-- parent's span); look-ups by name go through tables made for them (steps,
-- a_kernels, nvtx_stitched).

CREATE INDEX IF NOT EXISTS tracks_rank ON tracks (rank, kind);

-- Matching one collective across ranks, and the collective of a slice.
CREATE INDEX IF NOT EXISTS collectives_pg_seq ON collectives (pg, seq, rank);
CREATE INDEX IF NOT EXISTS collectives_slice ON collectives (slice);
CREATE INDEX IF NOT EXISTS collectives_rank ON collectives (rank, enter_ns);

CREATE INDEX IF NOT EXISTS collective_instances_pg_seq ON collective_instances (pg, seq);
CREATE INDEX IF NOT EXISTS collective_instance_ranks_instance ON collective_instance_ranks (instance, rank);
CREATE INDEX IF NOT EXISTS collective_instance_ranks_collective ON collective_instance_ranks (collective);

CREATE INDEX IF NOT EXISTS nvtx_stitched_ranks_stitched ON nvtx_stitched_ranks (stitched, rank);

-- Counter series of one rank.
CREATE INDEX IF NOT EXISTS counters_rank_name_ts ON counters (rank, name, ts);

CREATE INDEX IF NOT EXISTS files_rank ON files (rank);
CREATE INDEX IF NOT EXISTS skipped_rank ON skipped (rank);

-- steps.source for a file from before it: its steps are ProfilerSteps,
-- and NULL reads as profiler (store/in_place.c).
ALTER TABLE steps ADD COLUMN source TEXT;

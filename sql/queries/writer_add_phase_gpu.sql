-- The phases' GPU time for a file from before it (store/in_place.c); the
-- re-analysis fills them.
ALTER TABLE step_breakdown ADD COLUMN forward_gpu_ns INTEGER;
ALTER TABLE step_breakdown ADD COLUMN backward_gpu_ns INTEGER;
ALTER TABLE step_breakdown ADD COLUMN optimizer_gpu_ns INTEGER;
ALTER TABLE step_breakdown ADD COLUMN other_gpu_ns INTEGER;

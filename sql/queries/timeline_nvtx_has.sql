-- Whether the file has the stitched NVTX tables (older files and a live
-- run's file before stitching may not).
SELECT count(*) AS n FROM main.sqlite_master WHERE type = 'table' AND name IN ('nvtx_stitched', 'nvtx_stitched_ranks');

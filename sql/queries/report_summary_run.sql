-- report summary: run facts as key/value rows. The count of ranks is
-- rank_count: "ranks" is the summary's per-rank array. slices: the counts
-- stored when the run finished (rank_slices), else counted.
SELECT 'rank_count' AS key, count(*) AS value FROM ranks
UNION ALL SELECT 'world_size', max(world_size) FROM ranks
UNION ALL SELECT 'files', count(*) FROM files
UNION ALL SELECT 'slices', CASE WHEN (SELECT count(*) FROM rank_slices) = (SELECT count(*) FROM ranks)
                               THEN coalesce((SELECT sum(slices) FROM rank_slices), 0) ELSE (SELECT count(*) FROM slices) END
UNION ALL SELECT 'collectives', count(*) FROM collectives
UNION ALL SELECT 'skipped_events', coalesce(sum(count), 0) FROM skipped
UNION ALL SELECT 'created_by', value FROM meta WHERE key = 'created_by'
UNION ALL SELECT 'created_at', value FROM meta WHERE key = 'created_at'
UNION ALL SELECT 'run_status', value FROM meta WHERE key = 'run_status'
UNION ALL SELECT 'failed_programs', value FROM meta WHERE key = 'exit_codes' AND value <> ''
UNION ALL SELECT 'incomplete_ranks', group_concat(rank) FROM ranks WHERE NOT complete HAVING count(*) > 0
UNION ALL SELECT 'schema_version', value FROM meta WHERE key = 'schema_version';

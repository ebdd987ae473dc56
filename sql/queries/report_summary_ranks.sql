-- report summary: one line per rank (?1 = mode). Slices: the count stored
-- when the run finished, else counted (a live run, an older file).
SELECT r.rank, r.host, r.backend, r.rank_source,
       coalesce((SELECT slices FROM rank_slices c WHERE c.rank = r.rank),
                (SELECT count(*) FROM tracks t JOIN slices s ON s.track = t.id WHERE t.rank = r.rank)) AS slices,
       (SELECT count(*) FROM steps st WHERE st.rank = r.rank) AS steps,
       t.kernel_us, t.idle_pct, t.compute_pct, o.overlap_pct,
       (SELECT coalesce(sum(count), 0) FROM skipped k WHERE k.rank = r.rank) AS skipped_events
FROM ranks r
LEFT JOIN a_temporal t ON t.rank = r.rank AND t.mode = ?1
LEFT JOIN a_overlap o ON o.rank = r.rank AND o.mode = ?1
ORDER BY r.rank;

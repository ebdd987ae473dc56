-- htamerge export: the earliest aligned time of the file, the zero of the
-- exported timestamps. Slices are reached through slices_track_ts (one seek
-- per track instead of a scan); counters are few.
SELECT min(m) AS origin FROM (SELECT (SELECT min(ts) FROM slices WHERE track = t.id) AS m FROM tracks t
                    UNION ALL
                    SELECT min(ts) FROM counters)

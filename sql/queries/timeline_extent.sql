-- The run's extent for the timeline: earliest start, and the latest end
-- among each track's last 1000 slices (a scan of every slice for the exact
-- maximum costs seconds on a large file; a slice that starts earlier and
-- outlasts the last thousand is rare and still drawn once the window
-- reaches it).
SELECT min(lo) AS origin, max(hi) AS end_ns
FROM (SELECT (SELECT min(ts) FROM lod_src WHERE track = t.id) AS lo,
             (SELECT max(e) FROM (SELECT ts + dur AS e FROM lod_src WHERE track = t.id
                                  ORDER BY ts DESC LIMIT 1000)) AS hi
      FROM tracks t);

-- report: how much of the run live CUPTI capture did not record, over the
-- ranks that paused: each pause runs from a "htamerge/cupti recording"
-- sample at 0 to the rank's next sample at 1, or to the end of its last
-- slice. Columns: pauses, paused ns, the same ranks' spans in ns.
WITH rec AS (
    SELECT c.rank, c.ts, c.value
    FROM counters c
    JOIN strings s ON s.id = c.name
    WHERE s.str = 'htamerge/cupti recording'
),
paused_ranks AS (SELECT DISTINCT rank FROM rec WHERE value = 0),
span AS (
    SELECT t.rank, min(s.ts) AS t0, max(s.ts + s.dur) AS t1
    FROM slices s
    JOIN tracks t ON t.id = s.track
    WHERE t.rank IN (SELECT rank FROM paused_ranks)
    GROUP BY t.rank
),
pause AS (
    SELECT r.rank, r.ts AS p0,
           coalesce((SELECT min(r2.ts) FROM rec r2
                     WHERE r2.rank = r.rank AND r2.ts > r.ts AND r2.value = 1),
                    (SELECT t1 FROM span WHERE span.rank = r.rank)) AS p1
    FROM rec r
    WHERE r.value = 0
)
SELECT count(*) AS pauses, coalesce(sum(max(p1 - p0, 0)), 0) AS paused_ns,
       (SELECT sum(t1 - t0) FROM span) AS span_ns
FROM pause;

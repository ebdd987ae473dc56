-- report stragglers: the verdict of each ProfilerStep on its own, with the
-- most blamed rank's numbers. The blame is summed once per (step, rank) and
-- joined, not looked up per step (that was quadratic: 16 s for 7 800 steps).
WITH b AS (
    SELECT i.step, m.rank, sum(m.blame_ns) AS blame_ns
    FROM collective_instance_ranks m
    JOIN collective_instances i ON i.id = m.instance
    WHERE i.analysed = 1 AND i.step IS NOT NULL
    GROUP BY i.step, m.rank
)
SELECT v.step, v.straggler, v.candidate, v.late_count, v.instances,
       round(v.blame_share, 4) AS blame_share,
       round(b.blame_ns / 1000.0, 3) AS blame_us,
       v.evidence
FROM straggler_verdicts v
LEFT JOIN b ON b.step = v.step AND b.rank = v.candidate
WHERE v.step IS NOT NULL
ORDER BY v.step;

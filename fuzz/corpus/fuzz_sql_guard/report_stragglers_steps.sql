-- report stragglers: the verdict of each ProfilerStep on its own, with the
-- most blamed rank's numbers.
SELECT v.step, v.straggler, v.candidate, v.late_count, v.instances,
       round(v.blame_share, 4) AS blame_share,
       round((SELECT sum(m.blame_ns) FROM collective_instance_ranks m
              JOIN collective_instances i ON i.id = m.instance
              WHERE i.analysed = 1 AND i.step = v.step AND m.rank = v.candidate) / 1000.0, 3) AS blame_us,
       v.evidence
FROM straggler_verdicts v
WHERE v.step IS NOT NULL
ORDER BY v.step;

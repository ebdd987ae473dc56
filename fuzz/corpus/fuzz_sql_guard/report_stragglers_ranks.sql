-- report stragglers: per rank, over the analysed matched collectives: how
-- often it entered last, the wait it caused the others (blame) and its own.
SELECT m.rank,
       sum(m.late) AS late_count,
       count(*) AS instances,
       round(1.0 * sum(m.late) / count(*), 4) AS late_fraction,
       round(sum(m.blame_ns) / 1000.0, 3) AS blame_us,
       round(sum(m.wait_ns) / 1000.0, 3) AS wait_us
FROM collective_instance_ranks m
JOIN collective_instances i ON i.id = m.instance
WHERE i.analysed = 1
GROUP BY m.rank
ORDER BY m.rank;

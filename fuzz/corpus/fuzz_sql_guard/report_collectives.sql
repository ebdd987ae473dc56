-- report collectives: every matched collective; start_us is the first
-- enter in us after the first matched collective of the run.
SELECT i.pg, i.op, i.seq, i.match, i.step, i.size, i.ranks,
       round((i.first_enter_ns - (SELECT min(first_enter_ns) FROM collective_instances)) / 1000.0, 3) AS start_us,
       round(i.skew_ns / 1000.0, 3) AS skew_us,
       i.late_rank,
       round((i.max_exit_ns - i.first_enter_ns) / 1000.0, 3) AS span_us,
       round((i.max_exit_ns - i.min_exit_ns) / 1000.0, 3) AS exit_spread_us,
       round((SELECT sum(m.wait_ns) FROM collective_instance_ranks m WHERE m.instance = i.id) / 1000.0, 3) AS wait_us,
       i.id
FROM collective_instances i
ORDER BY i.first_enter_ns, i.id;

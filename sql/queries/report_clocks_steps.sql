-- report clocks, added to each rank: a step of its clock during a live run
-- (NTP stepping it), repaired by the merger (merger/clock.c
-- mrg_clock_split): the change of its reading in ns (0: none) and the
-- aligned moment. Files written before these columns existed have none:
-- query/report.c then gives null for both.
SELECT rank, clock_step_ns AS step_ns, clock_step_at_ns AS step_at_ns FROM ranks ORDER BY rank;

-- One straggler verdict (analysis/cross_rank/stragglers.c); step NULL = the whole run.
INSERT INTO straggler_verdicts (step, straggler, candidate, instances, late_count, blame_share, evidence)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7);

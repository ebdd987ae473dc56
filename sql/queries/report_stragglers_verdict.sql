-- report stragglers: the verdict for the whole run (analysis/cross_rank/stragglers.h
-- states the rule).
SELECT straggler, evidence
FROM straggler_verdicts
WHERE step IS NULL;

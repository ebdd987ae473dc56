-- report stragglers (server): per-rank evidence from the v_stragglers view.
SELECT rank, late_count, instances, late_fraction, blame_us
FROM v_stragglers
ORDER BY rank;

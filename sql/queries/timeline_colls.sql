-- The collectives row of each slice that carries one (the lowest id when
-- several do), by slice: kept in memory by the timeline, one look-up per
-- drawn slice instead of a correlated subquery per row read.
SELECT slice, min(id) AS coll FROM main.collectives WHERE slice IS NOT NULL GROUP BY slice ORDER BY slice;

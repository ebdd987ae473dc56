-- /api/collective/find?pg=&seq=: a collectives row of the instance (pg ?1, seq ?2).
SELECT min(id) AS id FROM collectives WHERE pg IS ?1 AND seq = ?2;

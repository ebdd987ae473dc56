-- The statements that drop every view of a reopened file, so that _finish
-- creates the views of this htamerge (store/in_place.c); NULL when none.
SELECT group_concat('DROP VIEW "' || name || '"', ';') AS drops
FROM sqlite_master
WHERE type = 'view';

-- /api/ranks: the slice categories the timeline's cat numbers refer to.
SELECT id, name FROM categories ORDER BY id;

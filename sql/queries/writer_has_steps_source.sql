-- Whether the file's steps table has the column source (files written
-- before it have not: store/in_place.c adds it when reopening them).
SELECT count(*) AS have FROM pragma_table_info('steps') WHERE name = 'source';

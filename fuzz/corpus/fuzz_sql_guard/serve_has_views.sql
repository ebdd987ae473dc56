-- Whether the file has its views (a live file gets them at the end).
SELECT count(*) FROM main.sqlite_master WHERE type = 'view' AND name = 'v_stragglers';

-- Sets meta key ?1 to ?2 (store/writer.c, and run_status of a failed live
-- run in store/in_place.c).
INSERT OR REPLACE INTO meta (key, value) VALUES (?1, ?2);

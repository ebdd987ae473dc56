-- One slice as the timeline draws it (the wide slices kept in memory, and
-- the narrow ones a fine window draws); the collective from timeline_colls.sql.
SELECT id, ts, dur, depth, name, cat, 0 FROM lod_rows WHERE id = ?1;

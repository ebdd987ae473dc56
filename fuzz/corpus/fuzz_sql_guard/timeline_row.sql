-- One slice as the timeline draws it (the wide slices kept in memory).
SELECT id, ts, dur, depth, name, cat, coll FROM lod_rows WHERE id = ?1;

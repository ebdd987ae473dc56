-- One counter sample of a batch (store/rows.c).
INSERT INTO counters (rank, device, name, ts, value) VALUES (?1, ?2, ?3, ?4, ?5);

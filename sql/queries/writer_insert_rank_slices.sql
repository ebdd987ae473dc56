INSERT OR REPLACE INTO rank_slices (rank, slices) VALUES (?1, ?2);

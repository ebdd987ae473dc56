INSERT INTO rank_activity (rank, origin_ns, bucket_ns, buckets, busy, comm, longest_ns)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7);

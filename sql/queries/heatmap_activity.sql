-- A rank's stored activity buckets (rank_activity), for /api/heatmap.
SELECT origin_ns, bucket_ns, buckets, busy, comm, longest_ns
FROM rank_activity
WHERE rank = ?1;

-- report memory, "highest": across ranks, the rank whose GPU memory peaked
-- highest (its largest allocated peak over its devices), and its margin
-- over the median rank's peak: the rank that runs out of memory first.
WITH per_rank AS (
    SELECT rank, max(allocated_bytes) AS peak FROM memory_peaks WHERE device >= 0 GROUP BY rank
),
ordered AS (
    SELECT peak, row_number() OVER (ORDER BY peak) AS i, count(*) OVER () AS n FROM per_rank
),
median AS (
    SELECT avg(peak) AS m FROM ordered WHERE i IN ((n + 1) / 2, (n + 2) / 2)
),
top AS (
    SELECT rank, peak FROM per_rank ORDER BY peak DESC, rank LIMIT 1
)
SELECT t.rank, (SELECT count(*) FROM per_rank) AS ranks,
       t.peak AS peak_allocated_bytes, round(t.peak / 1048576.0, 1) AS peak_allocated_mib,
       CAST(round(m.m) AS INTEGER) AS median_peak_bytes,
       CAST(round(t.peak - m.m) AS INTEGER) AS margin_bytes,
       round(100.0 * (t.peak - m.m) / nullif(m.m, 0), 1) AS margin_pct,
       (SELECT phase FROM memory_peaks p WHERE p.rank = t.rank AND p.device >= 0
        ORDER BY allocated_bytes DESC, peak_ns LIMIT 1) AS peak_phase
FROM top t, median m;

-- report steps: ProfilerStep iterations per rank.
SELECT rank, number AS step, ts AS start_ns, round(dur / 1000.0, 3) AS dur_us,
       gpu_busy_us, kernel_count, dropped
FROM steps
ORDER BY rank, number;

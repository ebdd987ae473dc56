-- report summary: what live capture counted as lost, per rank. The
-- collectors and the injection library store their running totals as
-- counters named "htamerge/..."; the last (largest) sample of each is the
-- rank's total. Only the counters that count data not recorded.
SELECT c.rank AS rank, substr(n.str, 10) AS what, CAST(max(c.value) AS INTEGER) AS count
FROM strings n JOIN counters c ON c.name = n.id
WHERE n.str IN ('htamerge/ring dropped records', 'htamerge/ring lost records',
                'htamerge/cupti dropped records', 'htamerge/cupti incomplete records',
                'htamerge/cupti buffers lost at detach', 'htamerge/nvtx lost ranges')
GROUP BY c.rank, n.str
HAVING max(c.value) > 0
ORDER BY c.rank, what;

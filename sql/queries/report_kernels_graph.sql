-- report kernels --by graph: per rank and graph (the graph id its kernel records name),
-- its launches (distinct correlation ids), kernels, distinct nodes, GPU time, the
-- kernels whose capture context is known, and the capture ranges and phases its nodes
-- were made in (the most kernels first).
WITH k AS (
    SELECT g.rank, g.graph_id, g.node_id, g.capture_node, g.capture_range, g.capture_phase, g.phase,
           s.dur, s.correlation
    FROM graph_kernels g JOIN slices s ON s.id = g.slice),
ranges AS (
    SELECT rank, graph_id, group_concat(name, ', ') AS capture_ranges
    FROM (SELECT k.rank, k.graph_id, n.str AS name, count(*) AS c
          FROM k JOIN slices r ON r.id = k.capture_range JOIN strings n ON n.id = r.name
          GROUP BY k.rank, k.graph_id, n.str ORDER BY c DESC, n.str)
    GROUP BY rank, graph_id),
phases AS (
    SELECT rank, graph_id, group_concat(phase, ', ') AS capture_phases
    FROM (SELECT rank, graph_id, capture_phase AS phase, count(*) AS c FROM k
          WHERE capture_phase IS NOT NULL GROUP BY rank, graph_id, capture_phase ORDER BY c DESC, phase)
    GROUP BY rank, graph_id)
SELECT k.rank, k.graph_id AS graph, count(DISTINCT k.correlation) AS launches, count(*) AS kernels,
       count(DISTINCT k.node_id) AS nodes, round(sum(k.dur) / 1e3, 3) AS gpu_us,
       sum(k.capture_node IS NOT NULL) AS captured, r.capture_ranges, p.capture_phases
FROM k
LEFT JOIN ranges r ON r.rank = k.rank AND r.graph_id = k.graph_id
LEFT JOIN phases p ON p.rank = k.rank AND p.graph_id = k.graph_id
GROUP BY k.rank, k.graph_id
ORDER BY k.rank, gpu_us DESC, k.graph_id;

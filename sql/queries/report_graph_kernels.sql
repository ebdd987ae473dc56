-- v_graph_kernels (store/report_views.c): each kernel a CUDA graph ran, names resolved:
-- the kernel, its graph and node, where its node was captured (the innermost range open
-- on the making thread, the captured call, the phase) and where the graph was launched
-- (the launch call, the innermost range around it, the phase), and the phase the step
-- breakdown charged.
SELECT g.rank, g.slice, kn.str AS kernel, k.ts, k.dur, g.graph_id, g.node_id, g.capture_node,
       g.capture_graph, crn.str AS capture_range, ccn.str AS capture_call, g.capture_phase,
       ln.str AS launch, lrn.str AS launch_range, g.launch_phase, g.phase
FROM graph_kernels g
JOIN slices k ON k.id = g.slice
LEFT JOIN strings kn ON kn.id = k.name
LEFT JOIN slices cr ON cr.id = g.capture_range LEFT JOIN strings crn ON crn.id = cr.name
LEFT JOIN slices cc ON cc.id = g.capture_call LEFT JOIN strings ccn ON ccn.id = cc.name
LEFT JOIN slices l ON l.id = g.launch LEFT JOIN strings ln ON ln.id = l.name
LEFT JOIN slices lr ON lr.id = g.launch_range LEFT JOIN strings lrn ON lrn.id = lr.name
ORDER BY g.rank, k.ts, g.slice;

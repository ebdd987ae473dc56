INSERT INTO graph_kernels (slice, rank, graph_id, node_id, capture_node, capture_graph, capture_slice,
                           capture_call, capture_range, capture_phase, launch, launch_range, launch_phase,
                           phase)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14);

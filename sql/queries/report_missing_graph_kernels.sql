-- An empty stand-in for a file written before graph_kernels (query/topics.c).
CREATE TEMP TABLE IF NOT EXISTS graph_kernels (slice INTEGER PRIMARY KEY, rank INTEGER, graph_id INTEGER,
                                               node_id INTEGER, capture_node INTEGER, capture_graph INTEGER,
                                               capture_slice INTEGER, capture_call INTEGER,
                                               capture_range INTEGER, capture_phase TEXT, launch INTEGER,
                                               launch_range INTEGER, launch_phase TEXT, phase TEXT);

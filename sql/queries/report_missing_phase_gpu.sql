-- A stand-in for the step_breakdown of a file written before the phases'
-- GPU time (temp, this connection only; query/topics.c): the file's rows,
-- those columns empty. A temp view comes first for an unqualified name.
CREATE TEMP VIEW IF NOT EXISTS step_breakdown AS
SELECT *, NULL AS forward_gpu_ns, NULL AS backward_gpu_ns, NULL AS optimizer_gpu_ns, NULL AS other_gpu_ns
FROM main.step_breakdown;

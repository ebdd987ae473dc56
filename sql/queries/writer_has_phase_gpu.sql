-- Whether the file's step_breakdown has the phases' GPU time (files
-- written before it have not: store/in_place.c adds the columns).
SELECT count(*) AS have FROM pragma_table_info('step_breakdown') WHERE name = 'forward_gpu_ns';

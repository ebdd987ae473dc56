"""Two ranks' torch.profiler traces with collectives on two process groups,
timed so that `report comms` can be checked by hand (tests/cli/test_comms.sh):

  pg 1 "mesh_tp", all_reduce of 1 048 576 floats (4 MiB), twice:
    seq 1: rank 0 [1000, 1500) us, rank 1 [1100, 1500): 400 us after the
           last enter, rank 0 waits 100 us, rank 1 late;
    seq 2: both [3000, 3300): 300 us;
  pg 2 "mesh_dp", all_gather of 131 072 bf16 a rank (512 KiB gathered):
    both [5000, 5200): 200 us.
Rank 0 also runs a computation kernel over [1200, 1400) and [5100, 5300),
so 200 us of its tp all_reduce and 100 us of its dp all_gather are hidden:
exposed tp 800 - 200 = 600 us, dp 200 - 100 = 100 us on rank 0; rank 1
hides nothing (700 and 200 us).

usage: gen_pg_traces.py OUT_DIR   (writes rank-0.pt.trace.json, rank-1...)
"""
import json, sys, os
out = sys.argv[1]
BASE = 1_700_000_000_000_000_000
def coll(name, ts, dur, pg, desc, op, seq, nelems, dtype, rank):
    return {"ph": "X", "cat": "cpu_op", "name": name, "pid": 100 + rank, "tid": 1, "ts": ts, "dur": dur,
            "args": {"Collective name": op, "In msg nelems": nelems, "Out msg nelems": nelems * (2 if op == "allgather" else 1),
                     "Group size": 2, "dtype": dtype, "Process Group Name": pg, "Process Group Description": desc,
                     "Process Group Ranks": "[0, 1]", "Seq": seq}}
# (pg, desc, op, seq, nelems, dtype, {rank: (ts, dur)})
calls = [("1", "mesh_tp", "allreduce", 1, 1048576, "Float", {0: (1000, 500), 1: (1100, 400)}),
         ("1", "mesh_tp", "allreduce", 2, 1048576, "Float", {0: (3000, 300), 1: (3000, 300)}),
         ("2", "mesh_dp", "allgather", 1, 131072, "BFloat16", {0: (5000, 200), 1: (5000, 200)})]
for r in (0, 1):
    ev = [{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 100 + r, "tid": 1, "ts": 0, "dur": 10000},
          {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#2", "pid": 100 + r, "tid": 1, "ts": 10000, "dur": 100}]
    for pg, desc, op, seq, n, dt, t in calls:
        ev.append(coll("record_param_comms", t[r][0], t[r][1], pg, desc, op, seq, n, dt, r))
    for k, (ts, dur) in enumerate(((1200, 200), (5100, 200)) if r == 0 else ()):
        ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 100 + r, "tid": 1,
                   "ts": ts - 50, "dur": 5, "args": {"correlation": 10 + k}})
        ev.append({"ph": "X", "cat": "kernel", "name": "gemm_kernel", "pid": 0, "tid": 7, "ts": ts, "dur": dur,
                   "args": {"stream": 7, "correlation": 10 + k, "device": 0}})
    d = {"schemaVersion": 1, "distributedInfo": {"backend": "nccl", "rank": r, "world_size": 2},
         "baseTimeNanoseconds": BASE, "traceEvents": ev}
    json.dump(d, open(os.path.join(out, "rank-%d.pt.trace.json" % r), "w"))

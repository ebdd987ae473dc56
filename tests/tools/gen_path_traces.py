"""Two ranks' torch.profiler traces whose critical path is known by
construction (tests/cli/test_critical_path.sh). Times in us; one step,
ProfilerStep#1 [0, 1000) on both ranks, then a short ProfilerStep#2.

  rank 0: forward [0, 300), kernel [50, 250); all_reduce enters at 300
          (waits for rank 1) and exits at 700; optimizer [700, 1000) on
          the CPU alone (no kernel: host-bound).
  rank 1: forward [0, 600) with a slow kernel [100, 550); all_reduce
          [600, 700); optimizer [700, 900).

Path (backwards from rank 0's end at 1000): rank 0 optimizer [700, 1000)
host 300; the all_reduce's transfer [600, 700) 100; rank 1, late, forward
[0, 600): compute 450, host 150. Shares: rank 1 forward compute 45 %,
rank 0 optimizer host 30 %, rank 1 forward host 15 %, transfer 10 %.

usage: gen_path_traces.py OUT_DIR
"""
import json
import os
import sys

BASE = 1_700_000_000_000_000_000


def main(out):
    for r in (0, 1):
        pid = 100 + r
        ev = [{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": pid, "tid": 1, "ts": 0,
               "dur": 1000},
              {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#2", "pid": pid, "tid": 1, "ts": 1000,
               "dur": 50}]
        fwd_end, kern, coll, opt_end = ((300, (50, 250), (300, 400), 1000) if r == 0
                                        else (600, (100, 550), (600, 100), 900))
        ev.append({"ph": "X", "cat": "user_annotation", "name": "forward", "pid": pid, "tid": 1, "ts": 0,
                   "dur": fwd_end})
        ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": pid, "tid": 1,
                   "ts": kern[0] - 20, "dur": 5, "args": {"correlation": 7}})
        ev.append({"ph": "X", "cat": "kernel", "name": "gemm_kernel", "pid": 0, "tid": 7, "ts": kern[0],
                   "dur": kern[1] - kern[0], "args": {"stream": 7, "correlation": 7, "device": 0}})
        ev.append({"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": pid, "tid": 1, "ts": coll[0],
                   "dur": coll[1],
                   "args": {"Collective name": "allreduce", "In msg nelems": 1024, "Out msg nelems": 1024,
                            "Group size": 2, "dtype": "Float", "Process Group Name": "0",
                            "Process Group Description": "default_pg", "Process Group Ranks": "[0, 1]",
                            "Seq": 1}})
        ev.append({"ph": "X", "cat": "user_annotation", "name": "optimizer", "pid": pid, "tid": 1, "ts": 700,
                   "dur": opt_end - 700})
        d = {"schemaVersion": 1, "distributedInfo": {"backend": "nccl", "rank": r, "world_size": 2},
             "baseTimeNanoseconds": BASE, "traceEvents": ev}
        with open(os.path.join(out, "rank-%d.pt.trace.json" % r), "w") as f:
            json.dump(d, f)


if __name__ == "__main__":
    main(sys.argv[1])

"""DDP training on every GPU with the NCCL backend, for the multi-GPU proof
(tests/gpu/run_multi.sh, issue 7): the MoE transformer of torch_train.py,
NVTX and record_function ranges train_step > forward / backward /
optimizer_step, and a torch.profiler schedule writing Kineto traces into
HTAMERGE_TRACE_DIR (their CPU side carries Process Group Name / Seq).

usage: ddp_train.py [--steps K] [--sleep-rank R --sleep-ms MS] [--no-profiler]
Rank R sleeps MS before each step's forward: the straggler. Prints
"EXPECT ..." (steps, allreduces seen by the DDP comm hook) and "RESULT ...".
"""
import argparse
import json
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_train import Model  # noqa: E402

nvtx = torch.cuda.nvtx
rf = torch.profiler.record_function


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--sleep-rank", type=int, default=-1)
    ap.add_argument("--sleep-ms", type=float, default=20)
    ap.add_argument("--no-profiler", action="store_true")
    a = ap.parse_args()
    env = os.environ   # under htamerge: torchrun's variables; plain mpirun: Open MPI's
    rank = int(env.get("RANK", env.get("OMPI_COMM_WORLD_RANK", 0)))
    world = int(env.get("WORLD_SIZE", env.get("OMPI_COMM_WORLD_SIZE", 1)))
    local = int(env.get("LOCAL_RANK", env.get("OMPI_COMM_WORLD_LOCAL_RANK", rank)))
    env.setdefault("RANK", str(rank))
    env.setdefault("WORLD_SIZE", str(world))
    env.setdefault("MASTER_ADDR", "127.0.0.1")
    env.setdefault("MASTER_PORT", "29561")
    torch.cuda.set_device(local)
    dist.init_process_group("nccl", device_id=torch.device("cuda", local))
    torch.manual_seed(0)
    # MoE experts that get no token this step have no gradient: DDP must look.
    model = DDP(Model().cuda(), device_ids=[local], bucket_cap_mb=8, find_unused_parameters=True)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    tok = torch.randint(0, 4096, (8, 257), device="cuda", generator=None)
    tdir = os.environ.get("HTAMERGE_TRACE_DIR", "/tmp/ddp_traces")
    os.makedirs(tdir, exist_ok=True)

    def write_trace(p):
        p.export_chrome_trace(os.path.join(tdir, "rank-%d.step-%d.pt.trace.json" % (rank, p.step_num)))

    prof = None
    if not a.no_profiler:
        prof = torch.profiler.profile(
            activities=[torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA],
            schedule=torch.profiler.schedule(wait=1, warmup=1, active=a.steps - 2, repeat=1),
            on_trace_ready=write_trace)
        prof.__enter__()
    times = []
    for step in range(a.warmup + a.steps):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        nvtx.range_push("train_step")
        with rf("train_step"):
            if rank == a.sleep_rank:
                time.sleep(a.sleep_ms / 1e3)
            nvtx.range_push("forward")
            with rf("forward"), torch.autocast("cuda", dtype=torch.bfloat16):
                logits = model(tok[:, :-1])
                loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), tok[:, 1:].reshape(-1))
            nvtx.range_pop()
            nvtx.range_push("backward")
            with rf("backward"):
                loss.backward()
            nvtx.range_pop()
            nvtx.range_push("optimizer_step")
            with rf("optimizer_step"):
                opt.step()
                opt.zero_grad(set_to_none=True)
            nvtx.range_pop()
        nvtx.range_pop()
        torch.cuda.synchronize()
        if step >= a.warmup:
            times.append((time.perf_counter() - t0) * 1e3)
            if prof is not None:
                prof.step()
    if prof is not None:
        prof.__exit__(None, None, None)
    dist.barrier()
    print("EXPECT rank=%d world=%d steps=%d sleep_rank=%d" % (rank, world, a.warmup + a.steps, a.sleep_rank))
    print("RESULT " + json.dumps({"rank": rank, "mean_step_ms": round(sum(times) / len(times), 3)}), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

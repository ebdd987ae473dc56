"""GPU memory that grows in a known way per phase, on every rank, for the
memory timeline (issue 19): the fixture tests/fixtures/gpu/memory4/ comes
from this script on the H200 (torch 2.x, one GPU shared by the ranks, gloo).

Each of N ranks trains 4 Linear(2048, 2048) layers (64 MiB of parameters)
on a batch of 512, in record_function ranges forward / backward /
optimizer, with SGD and momentum (64 MiB of buffers from the first step).
What differs by rank is known by construction: at the start of forward rank
r allocates a buffer of (r + 1) x 64 MiB, held like activations until the
end of backward. So forward's and backward's peaks of rank r are
r x 64 MiB above rank 0's, and the optimizer's peaks are equal on every
rank. A gloo all_reduce of a small CPU tensor per step gives the ranks
collectives to line up.

torch.profiler(profile_memory=True) records steps 2-4 (wait 1, warmup 1,
active 3) into OUT/rank<r>.*.pt.trace.json.gz, with its [memory] events.

usage: memory_phases.py OUT [--ranks N] [--steps K] [--no-profiler]
Under a launcher that sets RANK and WORLD_SIZE (mpirun -n N htamerge) each
process is one rank; --no-profiler runs without torch.profiler (OUT unused),
for htamerge's own memory samples.
Prints "RESULT rank=r peak_forward=... peak_backward=... peak_optimizer=..."
from torch.cuda.max_memory_allocated() reset at each phase, for checking.
"""
import argparse
import contextlib
import os

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.profiler import ProfilerActivity, profile, record_function, schedule, tensorboard_trace_handler

MIB = 1 << 20


def worker(rank, world, out, steps, port):
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.update(MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE=str(world))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.cuda.set_device(0)
    torch.manual_seed(0)
    model = torch.nn.Sequential(*[torch.nn.Linear(2048, 2048) for _ in range(4)]).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)
    x = torch.randn(512, 2048, device="cuda")
    token = torch.ones(16)
    peaks = {}
    prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], profile_memory=True,
                   schedule=schedule(wait=1, warmup=1, active=3, repeat=1),
                   on_trace_ready=tensorboard_trace_handler(out, worker_name=f"rank{rank}", use_gzip=True))
    if out is None:   # no profiler: what htamerge's hooks see of memory alone
        prof = contextlib.nullcontext(type("NoProfiler", (), {"step": lambda self: None})())
    with prof as prof:
        for _ in range(steps):
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            with record_function("forward"):
                held = torch.empty((rank + 1) * 64 * MIB, dtype=torch.uint8, device="cuda")
                loss = model(x).square().mean()
                torch.cuda.synchronize()
            peaks["forward"] = torch.cuda.max_memory_allocated()
            torch.cuda.reset_peak_memory_stats()
            with record_function("backward"):
                loss.backward()
                torch.cuda.synchronize()
                del held
            peaks["backward"] = torch.cuda.max_memory_allocated()
            torch.cuda.reset_peak_memory_stats()
            with record_function("optimizer"):
                opt.step()
                opt.zero_grad(set_to_none=True)
                torch.cuda.synchronize()
            peaks["optimizer"] = torch.cuda.max_memory_allocated()
            dist.all_reduce(token)
            prof.step()
    print(f"RESULT rank={rank} " + " ".join(f"peak_{k}={v}" for k, v in peaks.items()), flush=True)
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out", help="trace folder; '-' with --no-profiler")
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--no-profiler", action="store_true")
    a = ap.parse_args()
    out = None if a.no_profiler else a.out
    if out:
        os.makedirs(out, exist_ok=True)
    if "RANK" in os.environ:   # started by a launcher (htamerge under mpirun): this rank only
        worker(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), out, a.steps,
               int(os.environ.get("MASTER_PORT", 29500)))
    else:
        mp.spawn(worker, args=(a.ranks, out, a.steps, 29500 + os.getpid() % 1000), nprocs=a.ranks)


if __name__ == "__main__":
    main()

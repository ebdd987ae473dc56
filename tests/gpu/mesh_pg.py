# Two process groups on a 2 x 2 mesh of 4 ranks (gloo, CPU), for
# `report comms` on real torch traces (issue 18): each step a tensor-parallel
# all_reduce of activations on the "tp" groups (pairs 0-1 and 2-3), then a
# data-parallel all_reduce of gradients on the "dp" groups (0-2 and 1-3),
# and an all_gather on dp every 4 steps. Rank 3 computes 30 % longer, so it
# is late on its groups. With torch >= 2.2 the groups come from
# init_device_mesh (descriptions "mesh_dp", "mesh_tp"); before, from
# new_group. torch.profiler (CPU) writes each rank's trace to ./mesh_traces.
#   mpirun -n 4 htamerge -o mesh.db tests/gpu/mesh_pg.py [STEPS]
import os
import sys
import time

import torch
import torch.distributed as dist


def groups(rank):
    try:
        from torch.distributed.device_mesh import init_device_mesh
        mesh = init_device_mesh("cpu", (2, 2), mesh_dim_names=("dp", "tp"))
        return mesh.get_group("dp"), mesh.get_group("tp")
    except ImportError:
        dp = [dist.new_group([0, 2]), dist.new_group([1, 3])]
        tp = [dist.new_group([0, 1]), dist.new_group([2, 3])]
        return dp[rank % 2], tp[rank // 2]


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 12
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    dp, tp = groups(rank)
    act = torch.ones(256 * 1024)           # 1 MiB of float32
    grad = torch.ones(1024 * 1024)         # 4 MiB
    w = torch.randn(256, 256)
    sched = torch.profiler.schedule(wait=1, warmup=1, active=steps - 3, repeat=1)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], schedule=sched,
                                on_trace_ready=torch.profiler.tensorboard_trace_handler("./mesh_traces")) as prof:
        for step in range(steps):
            with torch.profiler.record_function("forward"):
                x = w
                for _ in range(40 if rank == 3 else 30):
                    x = torch.tanh(x @ w)
                dist.all_reduce(act, group=tp)
            with torch.profiler.record_function("backward"):
                dist.all_reduce(grad, group=dp)
                if step % 4 == 0:
                    out = [torch.empty(64 * 1024) for _ in range(2)]
                    dist.all_gather(out, torch.ones(64 * 1024), group=dp)
            prof.step()
    dist.barrier()
    if rank == 0:
        print("mesh: %d steps on a 2 x 2 mesh, torch %s" % (steps, torch.__version__))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

# A small DDP training script over gloo, annotated with record_function and
# profiled with torch.profiler, which writes its traces through
# tensorboard_trace_handler into a folder of its own choosing (./tb_log).
# Plain PyTorch: nothing here knows about htamerge.
import sys

import torch
import torch.distributed as dist
from torch.profiler import ProfilerActivity, profile, record_function, schedule, tensorboard_trace_handler

import tiny_ddp


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 30
    rank, ddp, opt, gen = tiny_ddp.setup()
    with profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=2, warmup=1, active=3, repeat=2),
                 on_trace_ready=tensorboard_trace_handler("tb_log")) as prof:
        for _ in range(steps):
            x, y = tiny_ddp.batch(gen)
            opt.zero_grad()
            with record_function("forward"):
                loss = torch.nn.functional.mse_loss(ddp(x), y)
            with record_function("backward"):
                loss.backward()
            with record_function("optimizer_step"):
                opt.step()
            prof.step()
    # Every rank here before any leaves the group, as ddp_plain.py does: once
    # on a loaded CI machine rank 0 of this script died of SIGABRT at the
    # end, the likely cause gloo (torch 1.13) aborting on connections its
    # peers had already closed while it still exported its last trace.
    total = torch.tensor([loss.item()])
    dist.all_reduce(total)
    print("rank %d loss %.6f mean %.6f" % (rank, loss.item(), total.item() / dist.get_world_size()))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

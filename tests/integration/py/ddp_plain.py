# A small DDP training script over gloo: no annotations, no profiler.
# Plain PyTorch: nothing here knows about htamerge. Arguments: steps (30),
# the rank that sleeps 20 ms each step (none), the exit status (0).
import sys
import time

import torch
import torch.distributed as dist

import tiny_ddp


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 30
    slow = int(sys.argv[2]) if len(sys.argv) > 2 else -1
    status = int(sys.argv[3]) if len(sys.argv) > 3 else 0
    rank, ddp, opt, gen = tiny_ddp.setup()
    for _ in range(steps):
        if rank == slow:
            time.sleep(0.02)
        x, y = tiny_ddp.batch(gen)
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(ddp(x), y)
        loss.backward()
        opt.step()
    total = torch.tensor([loss.item()])
    dist.all_reduce(total)
    print("rank %d loss %.6f mean %.6f" % (rank, loss.item(), total.item() / dist.get_world_size()))
    dist.destroy_process_group()
    sys.exit(status)


if __name__ == "__main__":
    main()

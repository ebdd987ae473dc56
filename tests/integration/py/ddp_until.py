# A small DDP training loop over gloo that trains until told to stop: the
# file named by argv[1] appearing (rank 0 looks; every rank learns it from
# an all_reduce, so all stop after the same step), or argv[2] steps.
# Plain PyTorch: nothing here knows about htamerge.
import os
import sys

import torch
import torch.distributed as dist

import tiny_ddp


def main():
    stop = sys.argv[1]
    most = int(sys.argv[2]) if len(sys.argv) > 2 else 20000
    rank, ddp, opt, gen = tiny_ddp.setup()
    for step in range(most):
        x, y = tiny_ddp.batch(gen)
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(ddp(x), y)
        loss.backward()
        opt.step()
        flag = torch.tensor([1.0 if rank == 0 and os.path.exists(stop) else 0.0])
        dist.all_reduce(flag, op=dist.ReduceOp.MAX)
        if flag.item() > 0:
            break
    print("rank %d stopped after step %d, loss %.6f" % (rank, step, loss.item()))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

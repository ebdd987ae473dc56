# The model, data and optimizer the test scripts share: a few Linear layers
# under DistributedDataParallel over gloo, seeded (TINY_COMPILE=1: the DDP
# model under torch.compile). Plain PyTorch.
import os
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def setup():
    """Joins the gloo group (torchrun's variables) and returns (rank,
    model, optimizer, generator)."""
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 64),
                                torch.nn.ReLU(), torch.nn.Linear(64, 1))
    ddp = DDP(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
    if os.environ.get("TINY_COMPILE") == "1":
        ddp = torch.compile(ddp)
    return rank, ddp, opt, torch.Generator().manual_seed(rank + 1)


def batch(gen):
    # Every rank waits 10 ms for its batch, as behind a real input pipeline:
    # four ranks on two cores otherwise spend the whole step competing for
    # them, and which one the scheduler runs last decides a balanced run's
    # "straggler" (the straggler runs sleep 20 ms more on rank 2).
    time.sleep(0.01)
    return torch.randn(16, 32, generator=gen), torch.randn(16, 1, generator=gen)

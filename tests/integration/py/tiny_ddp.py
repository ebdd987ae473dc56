# The model, data and optimizer the test scripts share: a few Linear layers
# under DistributedDataParallel over gloo, seeded. Plain PyTorch.
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
    return rank, ddp, torch.optim.SGD(ddp.parameters(), lr=0.01), torch.Generator().manual_seed(rank + 1)


def batch(gen):
    return torch.randn(16, 32, generator=gen), torch.randn(16, 1, generator=gen)

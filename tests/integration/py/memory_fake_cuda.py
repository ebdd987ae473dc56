# A CPU training loop whose "GPU memory" follows a known schedule, for the
# hooks' memory samples (tests/integration/test_memory_hooks.sh): torch.cuda's
# memory functions are replaced by a ledger the loop moves, as the caching
# allocator would. Plain PyTorch otherwise, no annotations; one process.
#   forward   +300 MiB, then -200 MiB  (peak base + 300, leaves base + 100)
#   backward  +400 MiB, then -500 MiB  (peak base + 500, leaves base)
#   optimizer  +50 MiB, then  -50 MiB
# With CUDA_UNINIT=1 is_initialized() stays False: the hooks sample nothing.
import os
import sys

import torch

MIB = 1 << 20


class Ledger:
    level = 1000 * MIB
    peak = level

    @classmethod
    def move(cls, n):
        cls.level += n
        cls.peak = max(cls.peak, cls.level)


torch.version.cuda = torch.version.cuda or "fake"   # a CUDA build, to the hooks
torch.cuda.is_initialized = lambda: os.environ.get("CUDA_UNINIT") != "1"
torch.cuda.current_device = lambda: 0
torch.cuda.memory_allocated = lambda device=None: Ledger.level
torch.cuda.memory_reserved = lambda device=None: 2048 * MIB
torch.cuda.max_memory_allocated = lambda device=None: Ledger.peak


class Spend(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        Ledger.move(300 * MIB)
        Ledger.move(-200 * MIB)
        return x * 2

    @staticmethod
    def backward(ctx, g):
        Ledger.move(400 * MIB)
        Ledger.move(-500 * MIB)
        return g * 2


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(8, 1)

    def forward(self, x):
        return Spend.apply(self.lin(x))   # after a parameter: its backward runs


class SGD(torch.optim.SGD):
    def step(self, closure=None):
        Ledger.move(50 * MIB)
        out = super().step(closure)
        Ledger.move(-50 * MIB)
        return out


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    torch.manual_seed(0)
    model = Model()
    opt = SGD(model.parameters(), lr=0.01)
    for _ in range(steps):
        opt.zero_grad()
        loss = model(torch.randn(4, 8)).square().mean()
        loss.backward()
        opt.step()
    print("peak", Ledger.peak)


if __name__ == "__main__":
    main()

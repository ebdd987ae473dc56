# The Python hooks' cost per training step, in one process: a small DDP
# (gloo, world size 1) CPU loop timed in interleaved blocks with the hooks
# recording and with them off (_htamerge_hooks disabled: every wrapper then
# passes straight through). Run it under htamerge so the hooks have a ring:
#   htamerge -o /tmp/cost.db bench/python_hooks_cost.py [STEPS_PER_BLOCK] [BLOCKS] [WIDTH]
# Prints one line per state: median and mean ms per step, and the
# difference in us per step.
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 50
    blocks = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    width = int(sys.argv[3]) if len(sys.argv) > 3 else 64
    hooks = sys.modules.get("_htamerge_hooks")
    if hooks is None or hooks._lib is None:
        print("the hooks are not installed: run under htamerge", file=sys.stderr)
        return 1
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29533")
    dist.init_process_group("gloo", rank=0, world_size=1)
    torch.manual_seed(0)
    layers = []
    for _ in range(4):
        layers += [torch.nn.Linear(width, width), torch.nn.ReLU()]
    model = DDP(torch.nn.Sequential(*layers, torch.nn.Linear(width, 1)))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(8, width), torch.randn(8, 1)

    def block():
        t0 = time.perf_counter_ns()
        for _ in range(n):
            opt.zero_grad()
            torch.nn.functional.mse_loss(model(x), y).backward()
            opt.step()
        return (time.perf_counter_ns() - t0) / n / 1e3

    per = {"on": [], "off": []}
    block()   # warm-up
    for i in range(blocks):
        for state in (("on", "off") if i % 2 == 0 else ("off", "on")):
            hooks._disabled = state == "off"
            per[state].append(block())
    hooks._disabled = False
    for state in ("off", "on"):
        v = per[state]
        print("RESULT %s: median %.1f us/step, mean %.1f us/step (%d blocks of %d steps)"
              % (state, statistics.median(v), statistics.mean(v), len(v), n))
    print("RESULT hooks cost: %.1f us/step (median difference)"
          % (statistics.median(per["on"]) - statistics.median(per["off"])))
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())

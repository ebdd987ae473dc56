# The Python hooks' cost per training step, in one process: a small DDP
# (gloo, world size 1) CPU loop timed in interleaved blocks with the hooks
# recording, on a DDP model built with them (its process group the hooks'
# forwarding one), and with them off (_htamerge_hooks disabled: every
# wrapper passes straight through) on a twin built without them (the real
# group); without DDP, one model in both states. Run it under htamerge so the hooks have a ring:
#   htamerge -o /tmp/cost.db bench/python_hooks_cost.py [STEPS_PER_BLOCK] [BLOCKS] [WIDTH] [ddp|single|manual]
# ddp (the default) pays for steps, phases and the gloo collectives; single
# (no DDP, no process group) for steps and phases alone, which is what a
# single-GPU or NCCL job pays (NCCL's collectives come from its plugin);
# manual the same with a hand-written update (clip_grad_norm_, then
# p.data.add_ per parameter, as PyTorch's word_language_model example does),
# whose steps the hooks find from the backward/forward pattern.
# Prints one line per state: median and mean wall us per step and median
# process CPU us per step (all threads: less sensitive to a loaded host),
# and the differences.
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
    kind = sys.argv[4] if len(sys.argv) > 4 else "ddp"
    ddp, manual = kind == "ddp", kind == "manual"
    hooks = sys.modules.get("_htamerge_hooks")
    if hooks is None or hooks._lib is None:
        print("the hooks are not installed: run under htamerge", file=sys.stderr)
        return 1
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29533")
    if ddp:
        dist.init_process_group("gloo", rank=0, world_size=1)
    def build():
        torch.manual_seed(0)
        layers = []
        for _ in range(4):
            layers += [torch.nn.Linear(width, width), torch.nn.ReLU()]
        model = torch.nn.Sequential(*layers, torch.nn.Linear(width, 1))
        if ddp:
            model = DDP(model)
        return model, torch.optim.SGD(model.parameters(), lr=0.01)

    # DDP needs a twin built without the hooks (its process group is chosen
    # when it is built); a plain model is the same object in both states,
    # so that no difference of layout between two models reads as cost.
    twins = {"on": build()}
    hooks._hold(True)
    twins["off"] = build() if ddp else twins["on"]
    hooks._hold(False)
    x, y = torch.randn(8, width), torch.randn(8, 1)

    def block(model, opt):
        t0, c0 = time.perf_counter_ns(), time.process_time_ns()
        for _ in range(n):
            opt.zero_grad()
            torch.nn.functional.mse_loss(model(x), y).backward()
            if manual:   # examples/word_language_model's update: no optimizer object
                torch.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
                for p in model.parameters():
                    p.data.add_(p.grad, alpha=-0.01)
            else:
                opt.step()
        return (time.perf_counter_ns() - t0) / n / 1e3, (time.process_time_ns() - c0) / n / 1e3

    per = {"on": [], "off": []}
    for state in ("on", "off"):   # warm-up
        hooks._hold(state == "off")
        block(*twins[state])
    for i in range(blocks):
        for state in (("on", "off") if i % 2 == 0 else ("off", "on")):
            hooks._hold(state == "off")
            per[state].append(block(*twins[state]))
    hooks._hold(False)
    med = {}
    for state in ("off", "on"):
        wall, cpu = [v[0] for v in per[state]], [v[1] for v in per[state]]
        med[state] = (statistics.median(wall), statistics.median(cpu))
        print("RESULT %s%s: wall median %.1f mean %.1f us/step, cpu median %.1f us/step (%d blocks of %d steps)"
              % ("" if ddp else kind + " ", state, med[state][0], statistics.mean(wall), med[state][1], len(wall), n))
    print("RESULT %shooks cost: wall %.1f us/step, cpu %.1f us/step (differences of the medians)"
          % ("" if ddp else kind + " ", med["on"][0] - med["off"][0], med["on"][1] - med["off"][1]))
    if ddp:
        dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""CUDA graphs from torch.compile(mode="reduce-overhead") in a plain training
loop, for checking that live capture gives every graph kernel its capture
context (issue 19; tests/gpu/graph_proof.sh). No annotations, no profiler,
nothing that knows htamerge: the Python hooks give the step / forward /
backward / optimizer ranges, and the forward and backward graphs that
cudagraph trees record in the first steps are replayed in the later ones.

A small MLP (1024 -> 2048 -> 2048 -> 10, ReLU) with its loss compiled in
one function, SGD with momentum (eager: outside the graphs), STEPS steps
(default 20) on one fixed random batch.

usage: graph_compile.py [--steps N] [--batch B]
Prints "RESULT {json}": torch's version, the steps, the mean step time of
the second half, the first and last loss, and what the database must show
("expect": graph kernels captured in forward and backward).
"""
import argparse
import json
import time

import torch
import torch.nn.functional as F


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--batch", type=int, default=512)
    args = ap.parse_args()
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(1024, 2048), torch.nn.ReLU(), torch.nn.Linear(2048, 2048),
                                torch.nn.ReLU(), torch.nn.Linear(2048, 10)).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=1e-2, momentum=0.9)
    x = torch.randn(args.batch, 1024, device="cuda")
    y = torch.randint(0, 10, (args.batch,), device="cuda")

    @torch.compile(mode="reduce-overhead")
    def loss_of(inp, target):
        return F.cross_entropy(model(inp), target)

    step_ms, losses = [], []
    for _ in range(args.steps):
        t0 = time.perf_counter()
        torch.compiler.cudagraph_mark_step_begin()
        opt.zero_grad(set_to_none=True)
        loss = loss_of(x, y)
        loss.backward()
        opt.step()
        losses.append(loss.item())   # synchronises
        step_ms.append((time.perf_counter() - t0) * 1e3)
    tail = step_ms[len(step_ms) // 2:]
    print("RESULT " + json.dumps({
        "program": "graph_compile", "torch": torch.__version__, "steps": args.steps,
        "mean_step_ms": round(sum(tail) / len(tail), 3), "first_loss": round(losses[0], 4),
        "last_loss": round(losses[-1], 4),
        "expect": {"graph_kernels": "> 0", "capture_phases": ["forward", "backward"],
                   "uncaptured_graph_kernels": 0}}), flush=True)


if __name__ == "__main__":
    main()

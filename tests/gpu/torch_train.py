"""A small MoE transformer training step (bf16 autocast, AdamW) with NVTX
ranges train_step / forward / backward / optimizer_step, for checking live
capture and measuring its overhead (tests/gpu/run_device.sh).

usage: torch_train.py [plain|profiler|profiler_early|ab|ab_profiler] [--warmup W] [--steps K] [--reps R]
                      [--batch B] [--seq T] [--d D] [--layers L]
Prints "EXPECT ..." (NVTX ranges pushed) and "RESULT ..." (mean step time
of each repetition of K steps, after W warm-up steps, in one process)."""
import argparse
import json
import os
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

nvtx = torch.cuda.nvtx


class MoE(nn.Module):
    def __init__(self, d, experts=4, hidden=4):
        super().__init__()
        self.gate = nn.Linear(d, experts)
        self.w1 = nn.ModuleList(nn.Linear(d, hidden * d) for _ in range(experts))
        self.w2 = nn.ModuleList(nn.Linear(hidden * d, d) for _ in range(experts))

    def forward(self, x):
        b, t, d = x.shape
        flat = x.reshape(-1, d)
        choice = self.gate(flat).argmax(-1)
        out = torch.zeros_like(flat)
        for e in range(len(self.w1)):
            idx = (choice == e).nonzero(as_tuple=True)[0]
            if idx.numel():
                y = self.w2[e](F.gelu(self.w1[e](flat[idx])))
                out.index_add_(0, idx, y.to(out.dtype))
        return out.reshape(b, t, d)


class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.n1, self.n2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
        self.moe = MoE(d)

    def forward(self, x):
        h = self.n1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.moe(self.n2(x))


class Model(nn.Module):
    def __init__(self, vocab=4096, d=512, layers=4, heads=8):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.blocks = nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.head = nn.Linear(d, vocab)

    def forward(self, tok):
        x = self.emb(tok)
        for b in self.blocks:
            x = b(x)
        return self.head(x)


def train_step(model, opt, tok, counts):
    nvtx.range_push("train_step")
    nvtx.range_push("forward")
    with torch.autocast("cuda", dtype=torch.bfloat16):
        logits = model(tok[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), tok[:, 1:].reshape(-1))
    nvtx.range_pop()
    nvtx.range_push("backward")
    loss.backward()
    nvtx.range_pop()
    nvtx.range_push("optimizer_step")
    opt.step()
    opt.zero_grad(set_to_none=True)
    nvtx.range_pop()
    nvtx.range_pop()
    counts["train_step"] += 1
    return loss


def timed_block(a, model, opt, tok, counts):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(a.steps):
        train_step(model, opt, tok, counts)
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / a.steps * 1e3


def ab(a, model, opt, tok, counts):
    """Mode ab: the cost of CUPTI records measured inside one process.

    Blocks of --steps steps alternate between cudaProfilerStop (off) and
    cudaProfilerStart (on), the order flipped every pair. Under `htamerge
    --capture ...,cupti-range` that turns CUPTI's activity records off and
    on; without htamerge the calls do nothing, so the same run is the
    control: its on/off ratio is the noise floor of the method. Mode
    ab_profiler runs torch.profiler (CPU+CUDA) in the "on" blocks instead."""
    off, on = [], []
    acts = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    for i in range(a.blocks):
        for state in ((0, 1) if i % 2 == 0 else (1, 0)):
            if a.mode == "ab_profiler":   # torch.profiler on for the "on" blocks; its start and export untimed
                prof = torch.profiler.profile(activities=acts) if state else None
                if prof:
                    prof.__enter__()
                (on if state else off).append(timed_block(a, model, opt, tok, counts))
                if prof:
                    prof.__exit__(None, None, None)
                continue
            (torch.cuda.profiler.start if state else torch.cuda.profiler.stop)()
            (on if state else off).append(timed_block(a, model, opt, tok, counts))
    torch.cuda.profiler.stop()
    ratios = [x / y for x, y in zip(on, off)]
    n = counts["train_step"]
    print("EXPECT train_step=%d forward=%d backward=%d optimizer_step=%d" % (n, n, n, n))
    print("RESULT " + json.dumps({"mode": a.mode, "under_htamerge": "HTAMERGE_RING" in os.environ,
                                  "off_ms": [round(x, 3) for x in off], "on_ms": [round(x, 3) for x in on],
                                  "mean_step_ms": round(sum(on) / len(on), 3),
                                  "mean_off_ms": round(sum(off) / len(off), 3),
                                  "ratio_mean": round(sum(ratios) / len(ratios), 5),
                                  "ratio_median": round(sorted(ratios)[len(ratios) // 2], 5)}), flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", nargs="?", default="plain")
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--blocks", type=int, default=12,
                    help="mode ab: pairs of --steps blocks, one with the CUDA profiler range off, one on")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=256)
    ap.add_argument("--d", type=int, default=512)
    ap.add_argument("--layers", type=int, default=4)
    a = ap.parse_args()
    prof = None
    acts = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    tdir = os.environ.get("HTAMERGE_TRACE_DIR", "/tmp/torch_train_traces")
    if a.mode == "profiler_early":   # the profiler takes CUPTI before CUDA starts
        prof = torch.profiler.profile(activities=acts)
        prof.__enter__()
    torch.manual_seed(0)
    model = Model(d=a.d, layers=a.layers).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    tok = torch.randint(0, 4096, (a.batch, a.seq + 1), device="cuda")
    counts = {"train_step": 0}
    for _ in range(a.warmup):
        train_step(model, opt, tok, counts)
    torch.cuda.synchronize()
    if a.mode == "profiler":
        prof = torch.profiler.profile(activities=acts)
        prof.__enter__()
    if a.mode in ("ab", "ab_profiler"):
        return ab(a, model, opt, tok, counts)
    reps = []
    for _ in range(a.reps):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(a.steps):
            train_step(model, opt, tok, counts)
        torch.cuda.synchronize()
        reps.append((time.perf_counter() - t0) / a.steps * 1e3)
    kineto_gpu = None
    if prof is not None:
        prof.__exit__(None, None, None)
        kineto_gpu = sum(1 for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA)
        os.makedirs(tdir, exist_ok=True)
        prof.export_chrome_trace(os.path.join(tdir, "rank-%s.pt.trace.json" % os.environ.get("RANK", "0")))
    n = counts["train_step"]
    print("EXPECT train_step=%d forward=%d backward=%d optimizer_step=%d" % (n, n, n, n))
    print("RESULT " + json.dumps({"mode": a.mode, "under_htamerge": "HTAMERGE_RING" in os.environ,
                                  "step_ms": [round(r, 3) for r in reps],
                                  "mean_step_ms": round(sum(reps) / len(reps), 3),
                                  "kineto_gpu_events": kineto_gpu}), flush=True)


if __name__ == "__main__":
    main()

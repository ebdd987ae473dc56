# What htamerge's default capture costs a training script, measured inside
# one process, so that the drift between processes (10-15 % between plain
# runs of a launch-bound loop on the H200 VM) does not swamp a 2 % budget.
#
#   htamerge -o X.db bench/inprocess_ab.py [--block 50] [--warmup 300] [--hooks-only 1] [--null 1] -- SCRIPT [ARGS...]
#
# runs SCRIPT unmodified (runpy) and, once the capture plan has settled on
# steps, alternates blocks of --block iterations between two states:
#   on     htamerge as it runs by default: the Python hooks record steps,
#          phases and memory, and CUPTI attaches for the budget's windows;
#   quiet  the hooks pass straight through and CUPTI is detached: what is
#          left of htamerge in the process is the collector's ring and the
#          injection library's idle NVTX/NCCL entry points.
# An iteration is the time from one backward() call to the next, the same
# measure in both states. The first two iterations after each switch are
# left out of both (a real run has no such switches), and so are the
# iterations over 5x the median (an evaluation between epochs). Blocks
# alternate on/quiet, so slow drift of the machine falls on both alike.
#
# The windows are planned over the hooks' step numbers, which advance only
# in "on" blocks, so those blocks hold the windows in the share the budget
# gives them: on/quiet is the cost of the hooks plus the windows. What it
# cannot see: a cost CUPTI might leave after a detach (both states are
# after the start-up attach), and the collector's effect on the machine.
#
# --hooks-only 1 starts the blocks after the warm-up whatever the plan: for
# runs without CUPTI (on the CPU, or --capture nvtx,nccl,kineto), where
# on/quiet is the hooks' cost alone.
#
# --null 1 switches nothing, only the labels: the method's own check (its
# ratio should be 1 within its interval).
#
# Prints "AB_RESULT {json}": mean iteration in each state, their ratio, and a
# 95 % interval for it from resampling the block pairs; and the median CPU
# time of the program's thread per iteration in each state.
import gc
import json
import os
import random
import runpy
import sys
import time


def parse(argv):
    block, warmup, hooks_only, null = 50, 300, False, False
    while argv and argv[0] != "--":
        opt, val = argv[0], argv[1]
        if opt == "--block":
            block = int(val)
        elif opt == "--warmup":
            warmup = int(val)
        elif opt == "--hooks-only":
            hooks_only = val == "1"
        elif opt == "--null":
            null = val == "1"
        else:
            raise SystemExit("inprocess_ab.py: unknown option %s" % opt)
        argv = argv[2:]
    if not argv[1:]:
        raise SystemExit("usage: inprocess_ab.py [--block N] [--warmup N] [--hooks-only 1] [--null 1] -- SCRIPT [ARGS...]")
    return block, warmup, hooks_only, null, argv[1:]


class AB:
    def __init__(self, hooks, block, warmup, hooks_only, null):
        self.hooks, self.block, self.warmup, self.hooks_only, self.null = hooks, block, warmup, hooks_only, null
        self.state = "on"
        self.since_switch = 0
        self.started = False
        self.last = None
        self.iters = []          # (block index, state, ns, usable)
        self.cpu = {"on": [], "quiet": []}   # the program thread's CPU ns per iteration
        self.blk = -1
        self.inside = False
        self.plan_ready_at = None
        self.self_ns0 = 0
        # the interpreter's garbage collections in each state: [count, ns] by generation
        self.gc = {"on": [[0, 0] for _ in range(3)], "quiet": [[0, 0] for _ in range(3)]}
        self.gc_t0 = None
        gc.callbacks.append(self.on_gc)

    def on_gc(self, phase, info):
        if phase == "start":
            self.gc_t0 = time.perf_counter_ns()
        elif self.gc_t0 is not None and self.started:
            g = self.gc[self.state][info["generation"]]
            g[0] += 1
            g[1] += time.perf_counter_ns() - self.gc_t0

    def plan_is_steps(self):
        p = self.hooks._Capture.plan
        return p is not None and p.mode == self.hooks._STEPS_MODE

    def switch(self, to):
        h = self.hooks
        if self.null:
            pass
        elif to == "quiet":
            h._Capture.cupti_word(False)   # a window in progress ends here
            h._hold(True)
        else:
            # The step left open at the switch restarts: no step spans a
            # quiet block (its length would reach the budget's estimates).
            h._hold(False)
        self.state = to
        self.since_switch = 0
        self.blk += 1

    def on_backward(self):
        t, c = time.perf_counter_ns(), time.thread_time_ns()
        if self.last is not None:
            self.iters.append((self.blk, self.state, t - self.last, self.since_switch >= 2))
            self.cpu[self.state].append(c - self.last_cpu)
        self.last, self.last_cpu = t, c
        self.since_switch += 1
        n = len(self.iters)
        if not self.started:
            if self.plan_ready_at is None and (self.hooks_only or self.plan_is_steps()):
                self.plan_ready_at = n
            if self.plan_ready_at is not None and n >= max(self.warmup, self.plan_ready_at + 50):
                self.started = True
                self.self_ns0 = self.hooks._Steps.self_ns()
                self.switch("quiet")
            return
        if self.since_switch >= self.block:
            self.switch("on" if self.state == "quiet" else "quiet")

    def wrap(self, fn):
        def wrapped(*a, **k):
            if self.inside:
                return fn(*a, **k)
            self.inside = True
            try:
                self.on_backward()
                return fn(*a, **k)
            finally:
                self.inside = False
        wrapped.__wrapped__ = fn
        return wrapped

    def result(self):
        if self.state == "quiet":
            self.switch("on")   # leave htamerge as found: its exit path runs next
        usable = [(b, s, d) for b, s, d, ok in self.iters if ok and b >= 0]
        if not usable:
            return {"error": "no A/B blocks: the plan never settled on steps, or too few iterations",
                    "iterations": len(self.iters)}
        med = sorted(d for _, _, d in usable)[len(usable) // 2]
        long_ = [d for _, _, d in usable if d > 5 * med]
        usable = [(b, s, d) for b, s, d in usable if d <= 5 * med]
        blocks = {}
        for b, s, d in usable:
            blocks.setdefault(b, [s, 0, 0])
            blocks[b][1] += d
            blocks[b][2] += 1
        # pairs of neighbouring blocks: (quiet, on) in the order they ran
        order = sorted(blocks)
        pairs = []
        for i in range(0, len(order) - 1, 2):
            a, b = blocks[order[i]], blocks[order[i + 1]]
            q, o = (a, b) if a[0] == "quiet" else (b, a)
            if q[0] == "quiet" and o[0] == "on":
                pairs.append((q[1], q[2], o[1], o[2]))

        def ratio(ps):
            qs, qn = sum(p[0] for p in ps), sum(p[1] for p in ps)
            os_, on = sum(p[2] for p in ps), sum(p[3] for p in ps)
            return (os_ / on) / (qs / qn)

        rnd = random.Random(1)
        boots = sorted(ratio([rnd.choice(pairs) for _ in pairs]) for _ in range(2000)) if pairs else []
        qs = [d for _, s, d in usable if s == "quiet"]
        ons = [d for _, s, d in usable if s == "on"]
        h = self.hooks
        on_all = sum(1 for b, s, d, ok in self.iters if s == "on" and b >= 0)
        self_ns = h._Steps.self_ns() - self.self_ns0
        cpu_med = {k: sorted(v)[len(v) // 2] / 1e6 if v else None for k, v in self.cpu.items()}
        return {
            "iterations": len(self.iters), "block": self.block, "pairs": len(pairs),
            "on_ms": round(sum(ons) / len(ons) / 1e6, 4), "on_n": len(ons),
            "quiet_ms": round(sum(qs) / len(qs) / 1e6, 4), "quiet_n": len(qs),
            "ratio": round(ratio(pairs), 4) if pairs else None,
            "ci95": [round(boots[len(boots) // 40], 4), round(boots[len(boots) * 39 // 40], 4)] if boots else None,
            "long_left_out": len(long_),
            # the hooks' own clock of themselves (what the budget is told), per "on" iteration
            "hooks_self_us": round(self_ns / on_all / 1e3, 2) if on_all and not self.null else None,
            # the program thread's own CPU per iteration (medians): what the
            # hooks spend themselves, against what the machine adds around them
            "thread_cpu_ms": {k: round(v, 4) if v is not None else None for k, v in cpu_med.items()},
            # per state: [collections, ms] of generations 0, 1, 2
            "gc": {k: [[n, round(ns / 1e6, 2)] for n, ns in v] for k, v in self.gc.items()},
            "ab_started_at": self.plan_ready_at,
            "windows_closed": len(h._Capture.wins),
            "hooks_only": self.hooks_only, "null": self.null,
        }


def main():
    block, warmup, hooks_only, null, argv = parse(sys.argv[1:])
    hooks = sys.modules.get("_htamerge_hooks")
    if hooks is None or hooks._lib is None:
        raise SystemExit("inprocess_ab.py: the hooks are not installed: run it under htamerge")
    import torch   # the hooks wrap torch on import; this wraps theirs
    ab = AB(hooks, block, warmup, hooks_only, null)
    torch.Tensor.backward = ab.wrap(torch.Tensor.backward)
    torch.autograd.backward = ab.wrap(torch.autograd.backward)
    sys.argv = argv
    sys.path.insert(0, os.path.dirname(os.path.abspath(argv[0])))   # as python SCRIPT would
    try:
        runpy.run_path(argv[0], run_name="__main__")
    except SystemExit as e:
        if e.code not in (None, 0):
            print("inprocess_ab.py: %s exited with %s" % (argv[0], e.code), file=sys.stderr)
    finally:
        print("AB_RESULT " + json.dumps(ab.result()), flush=True)


if __name__ == "__main__":
    main()

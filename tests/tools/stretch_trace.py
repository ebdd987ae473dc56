"""Makes a slower (or shorter) copy of a real run, for `htamerge diff` tests:

    stretch_trace.py [--factor F] [--until-step N] IN OUT

IN and OUT are both Kineto trace files (.json or .json.gz) or both
directories, whose *.json / *.json.gz files are copied one by one.

--factor F   every event's ts moves to t0 + F * (ts - t0) and every dur
             becomes F * dur, t0 being the earliest ts of all IN files, so
             the ranks stay aligned with each other and the run is F times
             as slow (default 1).
--until-step N  keeps only the events that start before ProfilerStep#N of
             their file (the run ends earlier: fewer steps).

Unlike perturb_trace.py (one file's clock moved and drifted, for clock
tests), the whole run changes speed, as if every kernel and op took longer."""
import argparse
import gzip
import json
import os
import sys


def load(path):
    with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as f:
        return json.load(f)


def save(d, path):
    with (gzip.open(path, "wt") if path.endswith(".gz") else open(path, "w")) as f:
        json.dump(d, f)


def is_num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def first_ts(d):
    return min((e["ts"] for e in d["traceEvents"] if is_num(e.get("ts"))), default=None)


def step_start(d, n):
    """The start of ProfilerStep#n in d, or None."""
    starts = [e["ts"] for e in d["traceEvents"]
              if e.get("name") == "ProfilerStep#%d" % n and is_num(e.get("ts"))]
    return min(starts) if starts else None


def edit(d, t0, factor, until_step):
    if until_step is not None:
        cut = step_start(d, until_step)
        if cut is None:
            sys.exit("stretch_trace: no ProfilerStep#%d in a trace" % until_step)
        d["traceEvents"] = [e for e in d["traceEvents"] if not is_num(e.get("ts")) or e["ts"] < cut]
    for e in d["traceEvents"]:
        if is_num(e.get("ts")):
            e["ts"] = round(t0 + factor * (e["ts"] - t0), 3)
            if is_num(e.get("dur")):
                e["dur"] = round(e["dur"] * factor, 3)


def trace_files(path):
    if not os.path.isdir(path):
        return [path]
    return sorted(os.path.join(path, f) for f in os.listdir(path)
                  if f.endswith(".json") or f.endswith(".json.gz"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--factor", type=float, default=1.0)
    ap.add_argument("--until-step", type=int)
    ap.add_argument("src")
    ap.add_argument("dst")
    a = ap.parse_args()
    if a.factor <= 0:
        sys.exit("stretch_trace: --factor must be > 0")
    srcs = trace_files(a.src)
    if not srcs:
        sys.exit("stretch_trace: no trace files in %s" % a.src)
    docs = [load(p) for p in srcs]
    t0 = min(t for t in (first_ts(d) for d in docs) if t is not None)
    if os.path.isdir(a.src):
        os.makedirs(a.dst, exist_ok=True)
    for p, d in zip(srcs, docs):
        edit(d, t0, a.factor, a.until_step)
        save(d, os.path.join(a.dst, os.path.basename(p)) if os.path.isdir(a.src) else a.dst)


if __name__ == "__main__":
    main()

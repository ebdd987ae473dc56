#!/usr/bin/env python3
"""Splits one Kineto trace into two profiler windows of the same rank, as a
torch.profiler schedule with repeat > 1 writes them: the first file holds
what starts before ProfilerStep#K, the second the rest (a GPU op goes with
its launch, by correlation). Every other top-level field is copied to both.

usage: split_trace.py IN.json[.gz] K OUT_A.json.gz OUT_B.json.gz"""
import gzip
import json
import re
import sys


def load(path):
    with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as f:
        return json.load(f)


def main():
    src, k, out_a, out_b = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    doc = load(src)
    evs = doc["traceEvents"]
    starts = [e["ts"] for e in evs if re.fullmatch(r"ProfilerStep#%d" % k, str(e.get("name", "")))]
    if not starts:
        sys.exit("no ProfilerStep#%d in %s" % (k, src))
    cut = min(starts)
    gpu_cats = {"kernel", "gpu_memcpy", "gpu_memset", "gpu_user_annotation"}
    launch_side = {}
    for e in evs:
        corr = (e.get("args") or {}).get("correlation")
        if e.get("cat") not in gpu_cats and corr is not None and "ts" in e:
            launch_side[corr] = e["ts"] < cut
    a, b = [], []
    for e in evs:
        corr = (e.get("args") or {}).get("correlation")
        if "ts" not in e or e.get("ph") == "M":
            a.append(e)
            b.append(e)
            continue
        if e.get("cat") in gpu_cats and corr in launch_side:
            first = launch_side[corr]
        else:
            first = e["ts"] < cut
        (a if first else b).append(e)
    for path, part in ((out_a, a), (out_b, b)):
        d = dict(doc)
        d["traceEvents"] = part
        with gzip.open(path, "wt") as f:
            json.dump(d, f)


if __name__ == "__main__":
    main()

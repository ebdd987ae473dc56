"""Moves one Kineto trace's clock, for clock-refinement tests:

    perturb_trace.py IN OUT OFFSET_US PPM

Every event's ts becomes ts + OFFSET_US + PPM * 1e-6 * (ts - first ts), as
if the rank's host clock ran OFFSET_US ahead at the start of the trace and
drifted PPM parts per million; durations stretch by the same rate. IN and
OUT may be .json or .json.gz."""
import gzip
import json
import sys


def load(path):
    with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as f:
        return json.load(f)


def main():
    src, dst, off_us, ppm = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
    d = load(src)
    ts0 = min(e["ts"] for e in d["traceEvents"] if isinstance(e.get("ts"), (int, float)))
    for e in d["traceEvents"]:
        t = e.get("ts")
        if isinstance(t, (int, float)):
            e["ts"] = round(t + off_us + ppm * 1e-6 * (t - ts0), 3)
            if isinstance(e.get("dur"), (int, float)):
                e["dur"] = round(e["dur"] * (1 + ppm * 1e-6), 3)
    with (gzip.open(dst, "wt") if dst.endswith(".gz") else open(dst, "w")) as f:
        json.dump(d, f)


if __name__ == "__main__":
    main()

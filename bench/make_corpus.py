#!/usr/bin/env python3
"""Builds the htamerge benchmark corpus: 8 ranks x ~34.8 MB of Kineto JSON.

Source: tests/fixtures/hta/nccl_parser_config/nccl_data.json.gz, a real
torch.profiler trace (rank 0 of 2, 9.8 MB decompressed, 40 573 events).

Each rank file is that trace with its traceEvents repeated in time: copy k is
shifted by k * SHIFT_US (the trace's span rounded up), its ProfilerStep
numbers by k * (number of steps), and its correlation ids, External ids and
flow ids by k * ID_STRIDE, so they stay unique. Copies are added until the
file reaches TARGET_BYTES of JSON; the last copy is cut at a time so that the
file ends near the target (like a shorter profiling window). Process/thread
metadata events and the trace-wide instants appear once; the "PyTorch
Profiler" span covers the whole file. Every timestamp of rank r is also moved
by r * RANK_SKEW_US so that ranks differ, and distributedInfo gets rank = r
and world_size = RANKS.

The source text is edited as text (not re-serialised), so the output keeps
Kineto's exact layout and number formats: timestamps stay
"<int>.<3 digits>" microseconds, which is what the parser sees in real runs.
Output: rank-<r>.pt.trace.json.gz (gzip level 6, as torch writes), mtime 0,
so the bytes are the same run to run. Existing complete files are kept.

usage: python3 bench/make_corpus.py [OUT_DIR] [--ranks N] [--target-mb MB] [--json]
  OUT_DIR defaults to /tmp/htamerge-bench/corpus; --json also writes an
  uncompressed rank-0.pt.trace.json next to it (for parse-only benchmarks).
Stdlib only.
"""
import argparse
import gzip
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.join(HERE, "..", "tests", "fixtures", "hta", "nccl_parser_config",
                      "nccl_data.json.gz")
RANKS = 8
TARGET_BYTES = 34_800_000       # HTA anchor: 8 x 34.8 MB
RANK_SKEW_US = 137              # rank r: every ts + r * 137 us
GZIP_LEVEL = 6

# Fields whose values change per copy. Kineto writes "name": value with one
# space; "External id" and "correlation" live in args.
FIELD_RE = re.compile(
    r'"(ts|External id|correlation|id)": (-?\d+)(\.\d+)?|ProfilerStep#(\d+)')


def load_source(path):
    raw = gzip.open(path, "rb").read().decode("utf-8")
    start = raw.index('"traceEvents": [')
    pos = start + len('"traceEvents": [')
    dec = json.JSONDecoder()
    ws = re.compile(r"[\s,]*")
    events = []     # (text, obj)
    while True:
        pos = ws.match(raw, pos).end()
        if raw[pos] == "]":
            break
        obj, end = dec.raw_decode(raw, pos)
        events.append((raw[pos:end], obj))
        pos = end
    head = raw[:start]
    tail = raw[pos + 1:]        # after the closing ']'
    return head, events, tail


def num(obj, key):
    v = obj.get(key)
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) else None


class Template:
    """One event's text split at the fields that change: literal pieces and
    (kind, int_value, fraction) slots."""
    __slots__ = ("parts", "ts", "obj")

    def __init__(self, text, obj):
        self.obj = obj
        self.ts = num(obj, "ts")
        parts = []
        last = 0
        flow = obj.get("ph") in ("s", "f", "t")
        for m in FIELD_RE.finditer(text):
            key = m.group(1)
            if key == "id" and not flow:
                continue                     # "id" of something else (none today)
            parts.append(text[last:m.start()])
            if key is None:
                parts.append(("step", int(m.group(4)), ""))
            else:
                parts.append((key, int(m.group(2)), m.group(3) or "", m.group(1)))
            last = m.end()
        parts.append(text[last:])
        self.parts = parts

    def render(self, ts_shift, id_shift, step_shift, out):
        for p in self.parts:
            if isinstance(p, str):
                out.append(p)
            elif p[0] == "step":
                out.append("ProfilerStep#%d" % (p[1] + step_shift))
            elif p[0] == "ts":
                out.append('"ts": %d%s' % (p[1] + ts_shift, p[2]))
            else:
                out.append('"%s": %d%s' % (p[3], p[1] + id_shift, p[2]))


def plan(events):
    """Works out the shifts and which events repeat."""
    ts_min = min(t for t in (num(o, "ts") for _, o in events) if t is not None)
    ts_end = max(num(o, "ts") + (num(o, "dur") or 0) for _, o in events
                 if num(o, "ts") is not None)
    span = ts_end - ts_min
    shift_us = (int(span) // 1000 + 2) * 1000          # span rounded up, plus a gap
    ids = [0]
    for _, o in events:
        a = o.get("args") if isinstance(o.get("args"), dict) else {}
        for v in (a.get("External id"), a.get("correlation"),
                  o.get("id") if o.get("ph") in ("s", "f", "t") else None):
            if isinstance(v, int):
                ids.append(v)
    id_stride = 10 ** len(str(max(ids) + 1))
    steps = [int(m.group(1)) for _, o in events
             for m in [re.match(r"ProfilerStep#(\d+)$", str(o.get("name", "")))] if m]
    step_stride = (max(steps) - min(steps) + 1) if steps else 0
    return shift_us, id_stride, step_stride, ts_min


def build_rank(rank, head, templates, tail, consts, target, ranks):
    shift_us, id_stride, step_stride, ts_min = consts
    skew = rank * RANK_SKEW_US
    once_first = [t for t in templates if t.obj.get("ph") in ("M", "i")
                  and t.obj.get("name") != "Record Window End"]
    trace_span = [t for t in templates if t.obj.get("cat") == "Trace"]
    window_end = [t for t in templates if t.obj.get("name") == "Record Window End"]
    repeat = [t for t in templates
              if t not in once_first and t not in trace_span and t not in window_end]
    # Sizes of one copy's events (independent of the shift up to a digit).
    sizes = []
    for t in repeat:
        buf = []
        t.render(0, 0, 0, buf)
        sizes.append(len("".join(buf)) + 4)            # + ",\n  "
    fixed = len(head) + len(tail) + 1000
    for t in once_first + trace_span + window_end:
        buf = []
        t.render(0, 0, 0, buf)
        fixed += len("".join(buf)) + 4
    per_copy = sum(sizes)
    full = max(0, (target - fixed) // per_copy)
    rest = target - fixed - full * per_copy
    # Cut the partial copy at a time: the earliest events up to `rest` bytes.
    cut_ts = None
    if rest > 0:
        order = sorted(range(len(repeat)),
                       key=lambda i: (repeat[i].ts if repeat[i].ts is not None else ts_min))
        acc = 0
        for i in order:
            acc += sizes[i]
            if acc >= rest:
                cut_ts = repeat[i].ts
                break
    ncopies = full + (1 if cut_ts is not None else 0)

    out = []
    h = re.sub(r'("distributedInfo": \{[^\n]*?"rank": )\d+', r"\g<1>%d" % rank, head, count=1)
    h = re.sub(r'("distributedInfo": \{[^\n]*?"world_size": )\d+', r"\g<1>%d" % ranks, h,
               count=1)
    out.append(h)
    out.append('"traceEvents": [\n  ')
    first = True

    def emit(t, k):
        nonlocal first
        if not first:
            out.append(",\n  ")
        first = False
        t.render(k * shift_us + skew, k * id_stride, k * step_stride, out)

    for t in once_first:
        emit(t, 0)
    for k in range(ncopies):
        last_partial = cut_ts is not None and k == ncopies - 1
        for t in repeat:
            if last_partial and t.ts is not None and t.ts > cut_ts:
                continue
            emit(t, k)
    total_us = (ncopies - 1) * shift_us + (cut_ts - ts_min if cut_ts else shift_us)
    for t in trace_span:                                # stretch the span over all copies
        buf = []
        t.render(skew, 0, 0, buf)
        text = "".join(buf)
        dur = num(t.obj, "dur") or 0
        text = re.sub(r'"dur": [0-9.]+', '"dur": %.3f' % max(dur, total_us), text, count=1)
        if not first:
            out.append(",\n  ")
        first = False
        out.append(text)
    for t in window_end:                                # at the end of the last copy
        if not first:
            out.append(",\n  ")
        first = False
        t.render(int(round(ts_min + total_us - t.ts)) + skew, 0, 0, out)
    out.append("\n  ]")
    out.append(tail)
    return "".join(out).encode("utf-8"), full + (rest / per_copy if cut_ts is not None else 0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out", nargs="?", default="/tmp/htamerge-bench/corpus")
    ap.add_argument("--ranks", type=int, default=RANKS)
    ap.add_argument("--target-mb", type=float, default=TARGET_BYTES / 1e6)
    ap.add_argument("--json", action="store_true",
                    help="also write an uncompressed rank-0 copy next to OUT_DIR")
    ap.add_argument("--source", default=SOURCE)
    a = ap.parse_args()
    target = int(a.target_mb * 1e6)
    os.makedirs(a.out, exist_ok=True)
    names = [os.path.join(a.out, "rank-%d.pt.trace.json.gz" % r) for r in range(a.ranks)]
    plain = os.path.join(os.path.dirname(os.path.abspath(a.out)), "rank-0.pt.trace.json")
    stamp = os.path.join(a.out, ".complete")
    want = "source=%s ranks=%d target=%d skew=%d v1\n" % (
        os.path.basename(a.source), a.ranks, target, RANK_SKEW_US)
    have = open(stamp).read() if os.path.exists(stamp) else ""
    if have == want and all(os.path.exists(n) for n in names):
        if a.json and not os.path.exists(plain):
            with gzip.open(names[0], "rb") as g, open(plain + ".tmp", "wb") as f:
                f.write(g.read())
            os.replace(plain + ".tmp", plain)
        print("corpus: %s already built (%d files)" % (a.out, len(names)))
        return 0
    head, events, tail = load_source(a.source)
    templates = [Template(t, o) for t, o in events]
    consts = plan(events)
    if os.path.exists(stamp):
        os.remove(stamp)
    for r, name in enumerate(names):
        data, ncopies = build_rank(r, head, templates, tail, consts, target, a.ranks)
        json.loads(data) if r == 0 else None             # check once: valid JSON
        tmp = name + ".tmp"
        with open(tmp, "wb") as f:
            with gzip.GzipFile(filename="", mode="wb", compresslevel=GZIP_LEVEL, fileobj=f,
                               mtime=0) as g:
                g.write(data)
        os.replace(tmp, name)
        if r == 0 and a.json:
            with open(plain + ".tmp", "wb") as f:
                f.write(data)
            os.replace(plain + ".tmp", plain)
        print("corpus: %s  %.1f MB JSON (%.2f copies of the trace), %.1f MB gz" % (
            name, len(data) / 1e6, ncopies, os.path.getsize(name) / 1e6), flush=True)
    with open(stamp, "w") as f:
        f.write(want)
    return 0


if __name__ == "__main__":
    sys.exit(main())

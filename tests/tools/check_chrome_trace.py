#!/usr/bin/env python3
"""Checks the structure of a Chrome trace written by `htamerge export`
against the database it came from (python3 standard library only).

    check_chrome_trace.py TRACE.json DB [--ranks 0,2] [--steps 5,6] [--absolute]

Checks: valid JSON; ts/dur written as exact 3-decimal numbers; one pid per
rank host and per rank GPU device, each named by process_name and ordered by
process_sort_index; every tid named and ordered; X events nest on their tid
(no partial overlap); X slices are exactly the database's slices of the
chosen ranks (and steps' windows), at their aligned times; flows: unique ids,
one s and one f ("bp":"e") per id, every flow event inside its slice and
that slice the innermost one there; launch flows go from a CPU slice to the
GPU slice of the same rank with the same correlation; collective flows visit
exactly the exported ranks of one matched instance, in time order; counters
are the database's samples. Prints a one-line summary; exit 1 on failure.
"""
import argparse
import bisect
import collections
import decimal
import json
import re
import sqlite3
import sys

errors = []


def fail(msg):
    if len(errors) < 30:
        errors.append(msg)
    elif len(errors) == 30:
        errors.append("... (more errors)")


def parse_list(s):
    out = []
    for part in s.split(","):
        a, _, b = part.partition("-")
        out.extend(range(int(a), int(b or a) + 1))
    return out


def ns(v, origin):
    """An exported microsecond value (Decimal) back to aligned ns."""
    n = v * 1000
    if n != n.to_integral_value():
        fail(f"time {v} is not a whole number of ns")
    return int(n) + origin


def load(path):
    text = open(path, encoding="utf-8").read()
    for m in re.finditer(r'"(ts|dur)":(-?[0-9.eE+]+)', text):
        if not re.fullmatch(r"-?(0|[1-9][0-9]*)\.[0-9]{3}", m.group(2)):
            fail(f"{m.group(1)} {m.group(2)} is not written as an exact 3-decimal number")
            break
    return json.loads(text, parse_float=decimal.Decimal)


def check_processes(ev, db, ranks):
    names, sorts, tnames, tsorts = {}, {}, {}, {}
    for e in ev:
        if e.get("ph") != "M":
            continue
        key = (e["pid"], e.get("tid"))
        table = {"process_name": names, "process_sort_index": sorts,
                 "thread_name": tnames, "thread_sort_index": tsorts}.get(e["name"])
        if table is None:
            fail(f"unknown metadata event {e['name']}")
            continue
        if key in table:
            fail(f"{e['name']} given twice for {key}")
        table[key] = e["args"]["name" if e["name"].endswith("name") else "sort_index"]
    procs = {}   # pid -> (rank, "CPU" | device)
    for (pid, _), name in names.items():
        m = re.fullmatch(r"rank (\d+) · (.+) · CPU", name) or re.fullmatch(r"rank (\d+) · GPU (-?\d+)", name)
        if not m:
            fail(f"process name {name!r}")
            continue
        procs[pid] = (int(m.group(1)), "CPU" if name.endswith("CPU") else int(m.group(2)))
        if (pid, None) not in sorts:
            fail(f"pid {pid} has no process_sort_index")
    if len(set(procs.values())) != len(procs):
        fail("two pids name the same rank CPU or GPU")
    if len(set(sorts.values())) != len(sorts):
        fail("process sort indexes repeat")
    want = {r for (r,) in db.execute("SELECT rank FROM ranks UNION SELECT rank FROM tracks")}
    want = {r for r in want if ranks is None or r in ranks}
    got = {r for r, kind in procs.values() if kind == "CPU"}
    if got != want:
        fail(f"host processes for ranks {sorted(got)}, expected {sorted(want)}")
    gpus = {(r, d) for (r, d) in db.execute("SELECT DISTINCT rank, pid FROM tracks WHERE kind = 'gpu_stream'")
            if ranks is None or r in ranks}
    if not gpus <= {v for v in procs.values() if v[1] != "CPU"}:
        fail(f"GPU processes {sorted(procs.values(), key=str)} lack some of {sorted(gpus)}")
    owner = {}
    for (pid, tid) in tnames:
        if (pid, tid) not in tsorts:
            fail(f"thread {pid}/{tid} has no thread_sort_index")
        # Perfetto has one tid space for all processes, and files a counter
        # (no tid) under tid = pid: a tid must name one thread, never a pid.
        if owner.setdefault(tid, pid) != pid:
            fail(f"tid {tid} is used in pids {owner[tid]} and {pid}")
        if tid in procs:
            fail(f"tid {tid} equals a pid")
    for e in ev:
        if e.get("ph") in ("X", "s", "t", "f", "C") and e["pid"] not in procs:
            fail(f"event on unnamed pid {e['pid']}")
        if e.get("ph") in ("X", "s", "t", "f") and (e["pid"], e["tid"]) not in tnames:
            fail(f"event on unnamed thread {e['pid']}/{e['tid']}")
    return procs


def check_nesting(slices):
    """slices: list of (ts, end, slice_id) of one tid."""
    stack = []
    for ts, end, sid in sorted(slices, key=lambda s: (s[0], -(s[1] - s[0]))):
        while stack and not (stack[-1][0] <= ts and end <= stack[-1][1]):
            if stack[-1][1] <= ts:
                stack.pop()
            else:
                fail(f"slice {sid} [{ts}, {end}) partly overlaps slice {stack[-1][2]} "
                     f"[{stack[-1][0]}, {stack[-1][1]}) on its thread")
                return
        stack.append((ts, end, sid))


def windows(db, ranks, steps):
    if steps is None:
        return None
    out = []
    for n in steps:
        rows = [(ts, ts + dur) for r, ts, dur in db.execute("SELECT rank, ts, dur FROM steps WHERE number = ?", (n,))
                if ranks is None or r in ranks]
        if not rows:
            fail(f"step {n} not in the database")
            continue
        out.append((min(r[0] for r in rows), max(r[1] for r in rows)))
    return out


def in_windows(win, ts, dur):
    if win is None:
        return True
    return any(ts < e and (ts + dur > s or (dur == 0 and ts >= s)) for s, e in win)


def check_slices(ev, db, procs, origin, ranks, win):
    by_tid = collections.defaultdict(list)
    got = {}
    for e in ev:
        if e.get("ph") != "X":
            continue
        a = e["args"]
        ts, dur = ns(e["ts"], origin), ns(e["dur"], 0)
        if a["slice_id"] in got:
            fail(f"slice {a['slice_id']} written twice")
        got[a["slice_id"]] = (ts, dur, e["pid"], e["tid"], e["name"], a)
        if procs.get(e["pid"], (None,))[0] != a["rank"]:
            fail(f"slice {a['slice_id']} of rank {a['rank']} on pid {e['pid']} ({procs.get(e['pid'])})")
        by_tid[(e["pid"], e["tid"])].append((ts, ts + dur, a["slice_id"]))
    for slices in by_tid.values():
        check_nesting(slices)
    want = {}
    for sid, ts, dur, rank, kind, name in db.execute(
            "SELECT s.id, s.ts, s.dur, t.rank, t.kind, n.str FROM slices s JOIN tracks t ON t.id = s.track "
            "LEFT JOIN strings n ON n.id = s.name"):
        if (ranks is None or rank in ranks) and in_windows(win, ts, max(dur, 0)):
            want[sid] = (ts, max(dur, 0), rank, kind, name)
    if set(got) != set(want):
        extra, missing = set(got) - set(want), set(want) - set(got)
        fail(f"{len(got)} slices written, database has {len(want)}: extra {sorted(extra)[:5]}, "
             f"missing {sorted(missing)[:5]}")
    for sid in set(got) & set(want):
        ts, dur, pid, _, name, _ = got[sid]
        wts, wdur, rank, kind, wname = want[sid]
        if (ts, dur) != (wts, wdur) or name != (wname or ""):
            fail(f"slice {sid}: ts/dur/name {ts}/{dur}/{name!r}, database {wts}/{wdur}/{wname!r}")
        if (procs[pid][1] == "CPU") != (kind != "gpu_stream"):
            fail(f"slice {sid} ({kind}) on process {procs[pid]}")
    return got, by_tid


def innermost(index, pid, tid, ts):
    """The deepest slice of a nested tid containing ts: walking back from
    the last slice starting at or before ts, the first that contains it."""
    starts, items = index.get((pid, tid), ([], []))
    i = bisect.bisect_right(starts, ts) - 1
    while i >= 0:
        s, e, sid = items[i]
        if e >= ts:
            return sid
        i -= 1
    return None


def check_flows(ev, db, got, by_tid, procs, origin, ranks, win):
    index = {}
    for key, slices in by_tid.items():
        items = sorted(slices, key=lambda x: (x[0], -(x[1] - x[0])))
        index[key] = ([x[0] for x in items], items)
    flows = collections.defaultdict(list)
    for e in ev:
        if e.get("ph") in ("s", "t", "f"):
            flows[e["id"]].append(e)
    counts = collections.Counter()
    members = {}
    for fid, evs in flows.items():
        phs = [e["ph"] for e in evs]
        if phs[0] != "s" or phs[-1] != "f" or phs.count("s") != 1 or phs.count("f") != 1:
            fail(f"flow {fid}: phases {phs}")
            continue
        if evs[-1].get("bp") != "e":
            fail(f"flow {fid}: finish without \"bp\":\"e\"")
        if len({(e["cat"], e["name"]) for e in evs}) != 1:
            fail(f"flow {fid}: cat/name differ between its events")
        for e in evs:
            sid = e["args"]["slice_id"]
            if sid not in got:
                fail(f"flow {fid} binds to slice {sid}, which was not written")
                continue
            ts = ns(e["ts"], origin)
            if innermost(index, e["pid"], e["tid"], ts) != sid:
                fail(f"flow {fid} event at {ts} on {e['pid']}/{e['tid']} binds to "
                     f"{innermost(index, e['pid'], e['tid'], ts)}, not slice {sid}")
        counts[evs[0]["cat"]] += 1
        if evs[0]["cat"] == "launch":
            cpu, gpu = got.get(evs[0]["args"]["slice_id"]), got.get(evs[1]["args"]["slice_id"])
            if cpu and gpu and (procs[cpu[2]][1] != "CPU" or procs[gpu[2]][1] == "CPU" or
                                procs[cpu[2]][0] != procs[gpu[2]][0] or
                                cpu[5].get("correlation") != gpu[5].get("correlation")):
                fail(f"launch flow {fid} joins {procs[cpu[2]]} and {procs[gpu[2]]}, correlations "
                     f"{cpu[5].get('correlation')} / {gpu[5].get('correlation')}")
        elif evs[0]["cat"] == "collective":
            inst = evs[0]["args"]["instance"]
            if inst in members:
                fail(f"instance {inst} has two flows")
            members[inst] = [e["args"]["slice_id"] for e in evs]
            tss = [ns(e["ts"], origin) for e in evs]
            if tss != sorted(tss):
                fail(f"collective flow {fid} not in time order")
            rks = [procs[e["pid"]][0] for e in evs]
            if len(set(rks)) != len(rks):
                fail(f"collective flow {fid} visits a rank twice: {rks}")
        else:
            fail(f"flow {fid}: unknown cat {evs[0]['cat']}")
    cpu_corr = {(r, c) for r, c in db.execute(
        "SELECT t.rank, s.correlation FROM slices s JOIN tracks t ON t.id = s.track "
        "WHERE t.kind = 'cpu_thread' AND s.correlation IS NOT NULL")}
    launches = 0
    for sid, rank, corr in db.execute(
            "SELECT s.id, t.rank, s.correlation FROM slices s JOIN tracks t ON t.id = s.track "
            "JOIN categories c ON c.id = s.cat WHERE t.kind = 'gpu_stream' AND s.correlation IS NOT NULL "
            "AND c.name IN ('kernel', 'gpu_memcpy', 'gpu_memset')"):
        launches += sid in got and (rank, corr) in cpu_corr
    if counts["launch"] > launches or (win is None and counts["launch"] != launches):
        fail(f"{counts['launch']} launch flows, database has {launches} GPU ops with a launch")
    want = collections.defaultdict(set)
    for inst, sid in db.execute("SELECT m.instance, c.slice FROM collective_instance_ranks m "
                                "JOIN collectives c ON c.id = m.collective"):
        if sid in got:
            want[inst].add(sid)
    want = {k: v for k, v in want.items() if len(v) >= 2}
    if {k: set(v) for k, v in members.items()} != want:
        fail(f"collective flows cover {len(members)} instances, database has {len(want)} with 2+ exported ranks")
    return counts


def check_counters(ev, db, procs, origin, ranks, win):
    got = sorted((procs[e["pid"]][0], e["name"], ns(e["ts"], origin), float(e["args"]["value"]))
                 for e in ev if e.get("ph") == "C")
    want = sorted((r, n or "counter", ts, v) for r, n, ts, v in db.execute(
        "SELECT c.rank, s.str, c.ts, c.value FROM counters c LEFT JOIN strings s ON s.id = c.name")
        if (ranks is None or r in ranks) and in_windows(win, ts, 0) and v is not None)
    if got != want:
        fail(f"{len(got)} counter samples written, database has {len(want)}")
    return len(got)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("db")
    ap.add_argument("--ranks")
    ap.add_argument("--steps")
    ap.add_argument("--min-launch-flows", type=int, default=0)
    ap.add_argument("--min-collective-flows", type=int, default=0)
    args = ap.parse_args()
    ranks = set(parse_list(args.ranks)) if args.ranks else None
    steps = parse_list(args.steps) if args.steps else None
    doc = load(args.trace)
    db = sqlite3.connect(f"file:{args.db}?mode=ro", uri=True)
    ev = doc["traceEvents"]
    origin = int(doc["otherData"]["origin_ns"])
    procs = check_processes(ev, db, ranks)
    win = windows(db, ranks, steps)
    got, by_tid = check_slices(ev, db, procs, origin, ranks, win)
    counts = check_flows(ev, db, got, by_tid, procs, origin, ranks, win)
    ncounters = check_counters(ev, db, procs, origin, ranks, win)
    if counts["launch"] < args.min_launch_flows:
        fail(f"{counts['launch']} launch flows, expected at least {args.min_launch_flows}")
    if counts["collective"] < args.min_collective_flows:
        fail(f"{counts['collective']} collective flows, expected at least {args.min_collective_flows}")
    print(f"{args.trace}: {len(procs)} processes, {len(by_tid)} threads, {len(got)} slices, "
          f"{counts['launch']} launch flows, {counts['collective']} collective flows, {ncounters} counters")
    for e in errors:
        print("FAIL:", e, file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())

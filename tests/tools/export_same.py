"""Do two Chrome trace exports draw the same run? Each X event by (process
name, thread name, name, ts, dur, cat), each C event by (process name,
name, ts, args), each flow (launch and collective arrows) by its events in
order, each by (ph, process name, thread name, ts, cat, name, correlation
or instance); pids, tids, flow ids and slice ids may differ (an export of a
sharded ingest's index numbers them per shard). Also checks that pids, tids
and flow ids are unique in each, and that every flow event sits on the X
event of the slice it names.

    export_same.py A.json B.json   (exit 0: same; 1: not, with a line why)"""
import collections
import json
import sys


def drawn(path):
    ev = json.load(open(path))["traceEvents"]
    meta = [e for e in ev if e["ph"] == "M"]
    pname = {e["pid"]: e["args"]["name"] for e in meta if e["name"] == "process_name"}
    tname = {e["tid"]: e["args"]["name"] for e in meta if e["name"] == "thread_name"}
    pids = [e["pid"] for e in meta if e["name"] == "process_name"]
    tids = [e["tid"] for e in meta if e["name"] == "thread_name"]
    flows = [e["id"] for e in ev if e["ph"] == "s"]
    if len(set(pids)) != len(pids) or len(set(tids)) != len(tids) or set(pids) & set(tids) or \
            len(set(flows)) != len(flows):
        sys.exit("%s: pids, tids or flow ids repeat" % path)
    x = collections.Counter((pname[e["pid"]], tname.get(e["tid"]), e["name"], e["ts"], e["dur"], e.get("cat"))
                            for e in ev if e["ph"] == "X")
    c = collections.Counter((pname[e["pid"]], e["name"], e["ts"], json.dumps(e.get("args"), sort_keys=True))
                            for e in ev if e["ph"] == "C")
    at = {(e["pid"], e["tid"], e["ts"], e["args"]["slice_id"]) for e in ev if e["ph"] == "X"}
    chains = collections.defaultdict(list)
    for e in ev:
        if e["ph"] not in ("s", "t", "f"):
            continue
        if (e["pid"], e["tid"], e["ts"], e["args"]["slice_id"]) not in at:
            sys.exit("%s: flow %s's %s is on no X event of slice %s" % (path, e["id"], e["ph"], e["args"]["slice_id"]))
        a = e["args"]
        chains[e["id"]].append((e["ph"], pname[e["pid"]], tname.get(e["tid"]), e["ts"], e["cat"], e["name"],
                                a.get("correlation", a.get("instance"))))
    f = collections.Counter(tuple(v) for v in chains.values())
    kinds = collections.Counter(v[0][4] for v in chains.values())
    return x, c, f, kinds


a, b = drawn(sys.argv[1]), drawn(sys.argv[2])
for what, p, q in (("slices", a[0], b[0]), ("counters", a[1], b[1]), ("flows", a[2], b[2])):
    if p != q:
        sys.exit("%s differ: %s | %s" % (what, str(p - q)[:300], str(q - p)[:300]))
if not a[0]:
    sys.exit("no slice exported")
print("flows: %s" % dict(a[3]))

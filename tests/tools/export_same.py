"""Do two Chrome trace exports draw the same run? Each X event by (process
name, thread name, name, ts, dur, cat), each C event by (process name,
name, ts, args), launch flows by count; pids, tids and flow ids may differ
(an export of a sharded ingest's index numbers them per shard), and so may
the collective flows, which the index's export does not draw. Also checks
that pids, tids and flow ids are unique in each.

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
    launches = sum(1 for e in ev if e["ph"] == "s" and e.get("cat") == "launch")
    return x, c, launches


a, b = drawn(sys.argv[1]), drawn(sys.argv[2])
for what, p, q in (("slices", a[0], b[0]), ("counters", a[1], b[1]), ("launch flows", a[2], b[2])):
    if p != q:
        sys.exit("%s differ: %s" % (what, str(p - q if isinstance(p, collections.Counter) else (p, q))[:300]))
if not a[0]:
    sys.exit("no slice exported")

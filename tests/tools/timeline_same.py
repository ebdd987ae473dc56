"""Do two /api/timeline answers draw the same thing? Tracks by id, each
slice by (ts, dur, depth, name text, category, collective) and the stitched
NVTX rows by their fields and name text; slice ids may differ (an answer
drawn from a sharded ingest's shards carries each slice's shard).

    timeline_same.py A.json B.json   (exit 0: same; 1: not, with a line why)"""
import json
import sys


def drawn(path):
    d = json.load(open(path))
    names = d["names"]
    name = lambda i: names[i] if i >= 0 else None
    tracks = {}
    for t in d["tracks"]:
        tracks[t["id"]] = (t["rank"], t["n"], t["lod"],
                           [(s[1], s[2], s[3], name(s[4]), s[5], s[6]) for s in t.get("slices", [])],
                           [tuple(x) for x in t.get("dense", [])])
    nvtx = sorted((r[0], r[2], r[3], r[4], name(r[5]), r[6], r[7], r[8]) for r in d.get("nvtx", []))
    return d["origin_ns"], tracks, nvtx


a, b = drawn(sys.argv[1]), drawn(sys.argv[2])
for what, x, y in (("origin", a[0], b[0]), ("tracks", sorted(a[1]), sorted(b[1])), ("nvtx", a[2], b[2])):
    if x != y:
        sys.exit("%s differ: %s vs %s" % (what, str(x)[:200], str(y)[:200]))
for k in a[1]:
    if a[1][k] != b[1][k]:
        sys.exit("track %s differs: %s vs %s" % (k, str(a[1][k])[:300], str(b[1][k])[:300]))
if not any(t[3] for t in a[1].values()):
    sys.exit("no slice drawn")

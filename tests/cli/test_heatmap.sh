#!/usr/bin/env bash
# Issue 20, the server at scale: whole-run views from per-rank activity
# buckets (table rank_activity, /api/heatmap), the viewer's jump box
# (/api/search), and the cap on ranks per /api/timeline request.
#   - 20 synthetic ranks (htamerge-synth --ranks, no mpirun), rank 5 20 ms late to
#     every allreduce: the others wait in their allreduce kernels, so rank
#     5 communicates least;
#   - the buckets' answer equals the one computed from slices (the same
#     file without the table, as an older file or a live run has it);
#   - grouped rows are their ranks' mean; close zoom reads slices;
#   - real gloo DDP traces (CPU only): collectives count as communication;
#   - bad parameters answer 400.
set -u
. "$(dirname "$0")/../lib.sh"
H=${HTAMERGE:?}; SRC=${HM_SOURCE_DIR:?}; SYN=${HTAMERGE_SYNTH:-$(dirname "$H")/htamerge-synth}
command -v python3 >/dev/null || skip "python3 is not installed"
command -v curl >/dev/null || skip "curl is not installed"
hm_tmpdir cli_heatmap
. "$SRC/tests/tools/serve_port.sh"

N=20
mkdir "$T/c"
HTAMERGE_TRACE_DIR="$T/c" HTAMERGE_RUN_START_NS=1700000000000000000 "$SYN" --ranks $N --steps 6 --gzip --straggler 5:20 \
    2>/dev/null || fail "htamerge-synth --ranks $N"
"$H" ingest -q -o "$T/run.db" "$T/c" || fail "ingest"
[ "$(sql1 "$T/run.db" 'SELECT count(*) || "/" || min(buckets) || "/" || min(length(busy)) FROM rank_activity')" = "$N/4096/4096" ] ||
    fail "rank_activity: $(sql1 "$T/run.db" 'SELECT count(*), min(buckets), min(length(busy)) FROM rank_activity')"
cp "$T/run.db" "$T/old.db"
"$H" sql "$T/old.db" 'SELECT 1' >/dev/null
python3 -c 'import sqlite3,sys; c = sqlite3.connect(sys.argv[1]); c.execute("DROP TABLE rank_activity"); c.commit()' "$T/old.db" ||
    fail "dropping rank_activity"

serve() {   # serve FILE: sets port and pid
    "$H" serve "$1" --listen 127.0.0.1:0 2>"$T/serve.err" &
    pid=$!
    port=$(serve_port "$T/serve.err")
    [ -n "$port" ] || fail "serve did not say its port: $(cat "$T/serve.err")"
}
get() { curl -s -o "$T/$2" -w '%{http_code}' "http://127.0.0.1:$port$1"; }
expect() {   # expect CODE PATH NAME
    local code
    code=$(get "$2" "$3")
    [ "$code" = "$1" ] || fail "GET $2: $code, want $1 ($(head -c 300 "$T/$3"))"
}
# heat FILE EXPR: EXPR over d (the answer), cells (a list of rows of
# (busy, comm) pairs, in fifteenths).
heat() {
    python3 -c 'import base64,json,sys
d = json.load(open(sys.argv[1])); raw = base64.b64decode(d["cells"]); C = d["cols"]
cells = [[(b >> 4, b & 15) for b in raw[r * C:(r + 1) * C]] for r in range(len(d["rows"]))]
sys.exit(0 if eval(sys.argv[2]) else 1)' "$T/$1" "$2" 2>/dev/null || fail "$1: $2 ($(head -c 300 "$T/$1"))"
}

check() {   # check FILE EXPR: EXPR over d, the JSON answer
    python3 -c 'import json,sys; d = json.load(open(sys.argv[1])); sys.exit(0 if eval(sys.argv[2]) else 1)' \
        "$T/$1" "$2" 2>/dev/null || fail "$1: $2 ($(head -c 300 "$T/$1"))"
}

serve "$T/run.db"
expect 200 '/api/heatmap?cols=300' whole.json
heat whole.json 'd["source"] == "buckets" and len(d["rows"]) == 20 and d["rows"][5] == [5, 5] and len(raw) == 20 * 300'
heat whole.json 'all(c <= b for row in cells for b, c in row)'
heat whole.json 'all(sum(b for b, c in row) > 0 for row in cells)'
# Rank 5 arrives last: the others sit in allreduce kernels waiting for it.
heat whole.json 'min(range(20), key=lambda r: sum(c for b, c in cells[r])) == 5'
heat whole.json 'sum(c for b, c in cells[5]) * 2 < sum(c for b, c in cells[0])'
expect 200 '/api/heatmap?cols=300&rows=10' grouped.json
heat grouped.json 'd["rows"] == [[2 * k, 2 * k + 1] for k in range(10)]'
expect 200 '/api/heatmap?cols=300&ranks=5,0' picked.json
heat picked.json 'd["rows"] == [[5, 5], [0, 0]]'
# Close zoom (columns narrower than a bucket) reads the window's slices.
expect 200 '/api/heatmap?t0=100000000&t1=100200000&cols=200&ranks=0-3' zoom.json
heat zoom.json 'd["source"] == "slices" and d["resolution_ns"] == d["col_ns"] == 1000'
expect 400 '/api/heatmap?cols=0' e1.json
expect 400 '/api/heatmap?cols=5000' e2.json
expect 400 '/api/heatmap?rows=0' e3.json
expect 400 '/api/heatmap?ranks=x' e4.json
expect 400 '/api/heatmap?t0=5&t1=5' e5.json
# The jump box.
expect 200 '/api/search?q=rank%205' s1.json
check s1.json 'd["hits"] == [{"kind": "rank", "label": "rank 5", "rank": 5, "t0": None, "t1": None, "id": None, "pg": None, "seq": None}]'
expect 200 '/api/search?q=step%203' s2.json
check s2.json 'd["hits"][0]["kind"] == "step" and d["hits"][0]["t1"] > d["hits"][0]["t0"] > 0'
expect 200 '/api/search?q=allreduce%204' s3.json
check s3.json 'd["hits"][0]["kind"] == "collective" and d["hits"][0]["seq"] == 4 and d["hits"][0]["rank"] == 5'
expect 200 '/api/search?q=backward' s4.json
check s4.json 'd["hits"] and d["hits"][0]["kind"] == "nvtx" and "backward" in d["hits"][0]["label"]'
expect 200 '/api/search?q=no-such-name' s5.json
check s5.json 'd["hits"] == []'
expect 400 '/api/search' s6.json
# Names' first slices come from name_first_slices, noted as the file was
# written: the lowest slice id of every name, and the same hits as a scan
# of slices gives (the same file without the note, as older files have it).
[ "$(sql1 "$T/run.db" "SELECT value FROM meta WHERE key = 'name_first_slices'")" = complete ] &&
    [ "$(sql1 "$T/run.db" 'SELECT count(*) FROM name_first_slices')" -gt 20 ] &&
    [ -z "$(sqlite3 "$T/run.db" 'SELECT name, min(id) FROM slices WHERE name IS NOT NULL GROUP BY name
                                  EXCEPT SELECT name, slice FROM name_first_slices')" ] &&
    [ -z "$(sqlite3 "$T/run.db" 'SELECT name, slice FROM name_first_slices
                                  EXCEPT SELECT name, min(id) FROM slices WHERE name IS NOT NULL GROUP BY name')" ] ||
    fail "name_first_slices is not every name's first slice"
for q in aten 'aten%3A%3Alinear' cudaMemcpy nccl; do
    expect 200 "/api/search?q=$q" "noted-$q.json"
done
# /api/timeline: a run of more than 16 ranks names the ranks to draw.
expect 400 '/api/timeline?px=300' t1.json
expect 400 '/api/timeline?px=300&ranks=0-16' t2.json
expect 200 '/api/timeline?px=300&ranks=0-15' t3.json
kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
cp "$T/run.db" "$T/scan.db"
sqlite3 "$T/scan.db" "DELETE FROM meta WHERE key = 'name_first_slices'" || fail "scan copy"
serve "$T/scan.db"
for q in aten 'aten%3A%3Alinear' cudaMemcpy nccl; do
    expect 200 "/api/search?q=$q" "scan-$q.json"
    cmp -s "$T/noted-$q.json" "$T/scan-$q.json" && grep -q '"kind":[[:space:]]*"slice"' "$T/noted-$q.json" ||
        fail "search $q: noted first slices differ from a scan: $(head -c 300 "$T/noted-$q.json") / $(head -c 300 "$T/scan-$q.json")"
done
kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null

# The same cells from slices, as a file without rank_activity has them:
# at most one fifteenth apart (both round), nearly all equal.
mv "$T/whole.json" "$T/buckets.json"
serve "$T/old.db"
expect 200 '/api/heatmap?cols=300' whole.json
heat whole.json 'd["source"] == "slices"'
python3 -c 'import base64,json,sys
a, b = (base64.b64decode(json.load(open(f))["cells"]) for f in sys.argv[1:3])
diff = [abs((x >> 4) - (y >> 4)) + abs((x & 15) - (y & 15)) for x, y in zip(a, b)]
sys.exit(0 if len(a) == len(b) and max(diff) <= 2 and sum(d > 0 for d in diff) < len(a) / 20 else 1)' \
    "$T/buckets.json" "$T/whole.json" || fail "buckets and slices disagree"
kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null

# Real gloo DDP traces (CPU only; rank 2 sleeps): collectives are the
# communication, and rank 2 waits least.
"$H" ingest -q -o "$T/gloo.db" "$SRC/tests/fixtures/gloo/ddp4_straggler2" || fail "ingest gloo"
serve "$T/gloo.db"
expect 200 '/api/heatmap?cols=200' gloo.json
heat gloo.json 'len(d["rows"]) == 4 and all(sum(c for b, c in row) > 0 for row in cells)'
heat gloo.json 'min(range(4), key=lambda r: sum(c for b, c in cells[r])) == 2'
kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
finish

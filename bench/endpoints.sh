#!/usr/bin/env bash
# Every `report` topic and every API endpoint on one file, timed (issue 20,
# item 5: each within 1 s on the 1,024-rank file). From the repo root:
#
#   bash bench/endpoints.sh FILE.db
#
# Reports: `htamerge report FILE TOPIC` in each format (table, json, csv),
# the topics from `/api/topics`: wall seconds and bytes. The API: a fresh
# `htamerge serve` (the page cache dropped first when allowed, root), each
# endpoint requested once (the first request: the server caches answers),
# as the viewer asks it: /api/run, /api/ranks, /api/topics, every
# /api/report/TOPIC (and with all_ranks=1, the Tables tab's request), the
# Overview's heat map, a whole-run and a zoomed timeline of 16 ranks, their
# counters and windows, the jump box's searches, one slice, collective (by
# id and by pg and seq), stitched NVTX range, the critical-path steps and one
# step's path, and a POST /api/sql. Prints markdown rows "| what | s | bytes |"
# and the slowest of each group. Not a test: nothing fails on a number.
# Environment: BUILD_DIR (default build).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-build}
case $BUILD_DIR in /*) ;; *) BUILD_DIR=$ROOT/$BUILD_DIR ;; esac
HM=$BUILD_DIR/htamerge
. "$ROOT/tests/tools/serve_port.sh"
[ $# = 1 ] || { echo "usage: bash bench/endpoints.sh FILE.db" >&2; exit 2; }
db=$1
T=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$T"' EXIT

sql1() { "$HM" sql "$db" "$1" --format csv | tail -n 1; }
now() { date +%s.%N; }
slowest=0
row() {   # row WHAT SECONDS BYTES
    printf '| %s | %.3f | %s |\n' "$1" "$2" "$3"
    slowest=$(python3 -c "print(max($slowest, $2))")
}

echo "load before: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores; $(sql1 'SELECT count(*) FROM ranks') ranks"
echo
echo "| report | s | bytes |"
echo "|---|---:|---:|"
"$HM" serve "$db" --listen 127.0.0.1:0 2>"$T/serve.err" &
pid=$!
port=$(serve_port "$T/serve.err") || { cat "$T/serve.err" >&2; exit 1; }
topics=$(curl -s "http://127.0.0.1:$port/api/topics" |
         python3 -c 'import json,sys; print(" ".join(t["name"] for t in json.load(sys.stdin)["topics"]))')
kill "$pid"; wait "$pid" 2>/dev/null || true; pid=
for t in $topics; do
    for f in table json csv; do
        t0=$(now)
        "$HM" report "$db" "$t" --format "$f" > "$T/out"
        row "\`report $t --format $f\`" "$(echo "$(now) - $t0" | bc)" "$(wc -c < "$T/out")"
    done
done
echo
echo "slowest report: $slowest s"
slowest=0

# IDs the detail endpoints need, taken from the file; times of a view are
# from the run's start (as serve_scale.sh asks them).
span=$(sql1 'SELECT max(ts + dur) - min(ts) FROM slices')
slice=$(sql1 'SELECT id FROM slices ORDER BY id LIMIT 1 OFFSET 1000')
coll=$(sql1 'SELECT id FROM collective_instances ORDER BY id LIMIT 1')
pg=$(sql1 "SELECT pg FROM collective_instances WHERE match = 'pg_seq' ORDER BY id LIMIT 1")
seq=$(sql1 "SELECT seq FROM collective_instances WHERE match = 'pg_seq' ORDER BY id LIMIT 1")
nvtx=$(sql1 'SELECT id FROM nvtx_stitched ORDER BY id LIMIT 1')
step=$(sql1 'SELECT step FROM critical_path ORDER BY step LIMIT 1')
name=$(sql1 "SELECT s.str FROM slices JOIN strings s ON s.id = slices.name WHERE slices.cat = (SELECT min(cat) FROM slices) LIMIT 1")
straggler=$(sql1 'SELECT straggler FROM straggler_verdicts WHERE step IS NULL LIMIT 1')

sync; echo 3 2>/dev/null >/proc/sys/vm/drop_caches || true
"$HM" serve "$db" --listen 127.0.0.1:0 2>"$T/serve.err" &
pid=$!
port=$(serve_port "$T/serve.err") || { cat "$T/serve.err" >&2; exit 1; }
get() {   # get PATH [curl args]: one request, one row
    local p=$1; shift
    read -r code b s <<<"$(curl -s -o /dev/null -w '%{http_code} %{size_download} %{time_total}' "$@" \
                           "http://127.0.0.1:$port/api/$p")"
    [ "$code" = 200 ] || echo "GET $p: HTTP $code" >&2
    row "\`/api/$p\`" "$s" "$b"
}
q() { python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1]))' "$1"; }
echo
echo "| API (first request to a fresh server) | s | bytes |"
echo "|---|---:|---:|"
get run
get ranks
get topics
get "heatmap?cols=600&rows=700"
for t in $topics; do get "report/$t"; get "report/$t?all_ranks=1"; done
get "timeline?px=1200&ranks=0-15"
get "timeline?px=1200&t0=$((span / 2))&t1=$((span / 2 + span / 500))&ranks=0-15"
get "heatmap?cols=1200&ranks=0-15&rows=16"
get "counters?px=1200&ranks=0-15"
get "windows?px=1200"
get "search?q=$(q "rank ${straggler:-1}")"
get "search?q=$(q 'step 3')"
get "search?q=$(q allreduce)"
[ -n "$name" ] && get "search?q=$(q "$name")"
[ -n "$slice" ] && get "slice/$slice"
[ -n "$coll" ] && get "collective/$coll"
[ -n "$pg" ] && get "collective/find?pg=$(q "$pg")&seq=$seq"
[ -n "$nvtx" ] && get "nvtx/$nvtx"
get path
[ -n "$step" ] && get "path/$step"
get sql -X POST -H 'Content-Type: text/plain' --data 'SELECT rank, count(*) FROM steps GROUP BY rank'
echo
echo "slowest request: $slowest s; server RSS after: $(awk '/VmRSS/ {print int($2 / 1024)}' "/proc/$pid/status") MB"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"

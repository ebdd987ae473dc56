#!/usr/bin/env bash
# HTTP load benchmark of `htamerge serve` (issue 9, item 3). From the repo root:
#
#   bash bench/wrk.sh
#
# 1. builds (once, kept in BENCH_DIR) an 8-rank database of htamerge-synth
#    traces, SLICES slices per rank (default 1M), with `htamerge ingest`;
# 2. serves it on loopback and runs wrk: REPORT_S seconds (default 60) on
#    /api/report/stragglers, then ZOOM_S seconds (default 15) of timeline
#    windows at each zoom of ZOOMS (window = run span / zoom, random places:
#    bench/wrk_timeline.lua), recording requests/s, latency p50/p95/p99,
#    errors, and the server's RSS before and after (flat memory);
# 3. prints a markdown section and appends it to bench/RESULTS.md (NO_WRITE=1:
#    print only).
#
# Environment: BUILD_DIR (default build; relative to the repo root or absolute),
# BENCH_DIR (default /tmp/htamerge-wrk), SLICES, RANKS_N (default 8), REPORT_S,
# ZOOM_S, ZOOMS (default "1 10 100 1000 10000"), PX (default 1500),
# THREADS / CONNS (wrk -t / -c for the report run, default 2 / 16), TL_CONNS
# (connections for the timeline runs, default 1: one viewer, so p95 is what a
# user waits, not a queue behind 15 others), CPUS (taskset list for the
# server, e.g. 1; wrk then gets the other cores), NO_WRITE, RESULTS.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
BUILD_DIR=${BUILD_DIR:-build}
case $BUILD_DIR in /*) ;; *) BUILD_DIR=$ROOT/$BUILD_DIR ;; esac
HM=$BUILD_DIR/htamerge SYN=$BUILD_DIR/htamerge-synth
BENCH_DIR=${BENCH_DIR:-/tmp/htamerge-wrk}
SLICES=${SLICES:-1000000} RANKS_N=${RANKS_N:-8}
REPORT_S=${REPORT_S:-60} ZOOM_S=${ZOOM_S:-15} ZOOMS=${ZOOMS:-1 10 100 1000 10000}
PX=${PX:-1500} THREADS=${THREADS:-2} CONNS=${CONNS:-16} TL_CONNS=${TL_CONNS:-1}
RESULTS=${RESULTS:-$ROOT/bench/RESULTS.md}
DB=$BENCH_DIR/wrk-${RANKS_N}x${SLICES}.db
say() { printf 'wrk.sh: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }
command -v wrk >/dev/null || die "wrk is not installed (apt-get install wrk)"
[ -x "$HM" ] && [ -x "$SYN" ] || die "no $HM or $SYN (build first)"
mkdir -p "$BENCH_DIR"

# 1. The database: every rank's synth in parallel, one file per rank (ingest
#    takes one per rank), 2 ms steps of 128 slices, then one ingest.
if [ ! -s "$DB" ]; then
    steps=$(( (SLICES + 127) / 128 ))
    traces=$BENCH_DIR/traces-$RANKS_N-$SLICES
    rm -rf "$traces"; mkdir -p "$traces"
    start=$(( ($(date +%s) + 2) * 1000000000 ))
    say "writing $RANKS_N ranks x $steps steps of synth traces"
    pids=()
    for r in $(seq 0 $((RANKS_N - 1))); do
        mkdir -p "$traces/rank-$r"
        HTAMERGE_TRACE_DIR=$traces/rank-$r HTAMERGE_RUN_START_NS=$start RANK=$r LOCAL_RANK=$r WORLD_SIZE=$RANKS_N \
            "$SYN" --steps "$steps" --step-ms 2 --cycle "$steps" --gzip --straggler 3:1 2>/dev/null &
        pids+=($!)
    done
    for p in "${pids[@]}"; do wait "$p" || die "htamerge-synth failed"; done
    say "ingesting"
    "$HM" ingest -q -o "$DB.tmp" "$traces" || die "ingest failed"
    mv "$DB.tmp" "$DB"
    rm -rf "$traces"
fi
nslices=$("$HM" sql "$DB" 'SELECT count(*) FROM slices' --format csv | tail -n 1)
say "database $DB: $nslices slices"

# 2. The server, on loopback, optionally pinned.
PIN=()
[ -n "${CPUS:-}" ] && PIN=(taskset -c "$CPUS")
"${PIN[@]}" "$HM" serve "$DB" --listen 127.0.0.1:0 2>"$BENCH_DIR/serve.err" &
SRV=$!
trap 'kill $SRV 2>/dev/null; wait $SRV 2>/dev/null' EXIT
PORT=
for _ in $(seq 100); do
    PORT=$(sed -n 's|.*http://127\.0\.0\.1:\([0-9]*\)/.*|\1|p' "$BENCH_DIR/serve.err")
    [ -n "$PORT" ] && break
    sleep 0.1
done
[ -n "$PORT" ] || die "server did not start: $(cat "$BENCH_DIR/serve.err")"
URL=http://127.0.0.1:$PORT
# The first answer reads a cold file (a minute on a busy machine): retried.
SPAN=
for _ in 1 2 3 4 5; do
    SPAN=$(curl -s --max-time 300 "$URL/api/run" |
        python3 -c 'import json,sys; print(int(json.load(sys.stdin)["span_ns"]))' 2>/dev/null) && break
    say "no answer from /api/run yet (server alive: $(kill -0 $SRV 2>/dev/null && echo yes || echo no))"
    sleep 2
done
[ -n "$SPAN" ] || die "the server does not answer /api/run: $(cat "$BENCH_DIR/serve.err")"
rss() { sed -n "s/^$1:[[:space:]]*\([0-9]*\).*/\1/p" /proc/$SRV/status; }
curl -s --max-time 300 -o /dev/null "$URL/api/report/stragglers"   # first answer: opens and caches
rss0=$(rss VmRSS) anon0=$(rss RssAnon)

# Waits until the server has worked off what earlier runs left queued (one
# thread: /api/run answers only after them), so runs do not pollute each other.
# (A request that outlasts the server's --timeout comes back empty: retry.)
settle() {
    local t0=$SECONDS
    until curl -s --max-time 600 -o /dev/null "$URL/api/run"; do
        [ $((SECONDS - t0)) -lt 900 ] || { say "server busy for > 900 s"; return; }
        sleep 1
    done
}

# One request at a time, timed by curl: "label|seconds|bytes|status".
single() {
    local label=$1 path=$2
    settle
    printf '%s|%s\n' "$label" "$(curl -s --max-time 600 -o /dev/null -w '%{time_total}|%{size_download}|%{http_code}' "$URL$path")"
}
singles=()
for t in summary stragglers temporal overlap; do
    singles+=("$(single "/api/report/$t" "/api/report/$t")")
done
for z in $ZOOMS; do
    w=$((SPAN / z)) t0=$((SPAN / 2 - SPAN / z / 2))
    singles+=("$(single "timeline, window = span/$z" "/api/timeline?t0=$t0&t1=$((t0 + w))&px=$PX")")
done
for row in "${singles[@]}"; do say "single: $row"; done

# One wrk run: prints "label|rps|p50|p95|p99|max|requests|errors".
measure() {
    local label=$1 secs=$2 script=$3 path=$4 conns=$5 line
    settle
    line=$(wrk -t"$((THREADS < conns ? THREADS : conns))" -c"$conns" -d"${secs}s" --timeout 120s -s "$script" "$URL$path" | grep '^WRK ') ||
        die "wrk failed on $label"
    say "$label: $line"
    printf '%s|%s\n' "$label" "$(echo "$line" | sed 's/^WRK //; s/[a-z0-9_]*=//g' | tr ' ' '|')"
}
rows=()
rows+=("$(measure "/api/report/stragglers" "$REPORT_S" bench/wrk_report.lua /api/report/stragglers "$CONNS")")
rss1=$(rss VmRSS) anon1=$(rss RssAnon)
for z in $ZOOMS; do
    rows+=("$(SPAN_NS=$SPAN ZOOM=$z PX=$PX measure "timeline, window = span/$z" "$ZOOM_S" bench/wrk_timeline.lua / "$TL_CONNS")")
done
rss2=$(rss VmRSS) hwm=$(rss VmHWM) anon2=$(rss RssAnon)
kill -0 $SRV 2>/dev/null || die "the server died"

# 3. The section.
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
section=$(
    echo "## wrk load on \`htamerge serve\` ($(date -u +%Y-%m-%d), $(nproc) cores, $cpu)"
    echo
    echo "\`bash bench/wrk.sh\` (THREADS=$THREADS CONNS=$CONNS for the report, TL_CONNS=$TL_CONNS for timelines${CPUS:+, server on CPUs $CPUS}); database: $RANKS_N ranks,"
    echo "$nslices slices (htamerge-synth, ingested), span $((SPAN / 1000000)) ms; timeline px=$PX, random windows."
    echo "wrk and the server share the machine's cores; the load average of other work is noted below."
    echo
    echo "One request at a time (curl, after the server is idle):"
    echo
    echo "| request | seconds | bytes | HTTP |"
    echo "|---|---|---|---|"
    for row in "${singles[@]}"; do
        IFS='|' read -r label secs bytes code <<<"$row"
        echo "| $label | $secs | $bytes | $code |"
    done
    echo
    echo "Under wrk (each run starts once the server is idle; a request slower than the run"
    echo "counts in no column):"
    echo
    echo "| endpoint | s | connections | requests/s | p50 ms | p95 ms | p99 ms | max ms | requests | errors |"
    echo "|---|---|---|---|---|---|---|---|---|---|"
    i=0
    for row in "${rows[@]}"; do
        IFS='|' read -r label rps p50 p95 p99 mx n err <<<"$row"
        secs=$ZOOM_S c=$TL_CONNS; [ $i = 0 ] && secs=$REPORT_S c=$CONNS
        echo "| $label | $secs | $c | $rps | $p50 | $p95 | $p99 | $mx | $n | $err |"
        i=$((i + 1))
    done
    echo
    echo "Server RSS: ${rss0} kB before, ${rss1} kB after the report run, ${rss2} kB at the end (peak ${hwm} kB);"
    echo "of which anonymous (heap, not the mmap'd file): ${anon0} / ${anon1} / ${anon2} kB."
    echo "Load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)."
)
echo "$section"
if [ -z "${NO_WRITE:-}" ]; then
    printf '\n%s\n' "$section" >> "$RESULTS"
    say "appended to $RESULTS"
fi

#!/usr/bin/env bash
# /api/timeline gives the same answer whether a track's slices are kept in
# the server's memory or read through SQL: three servers on one file, with
# the default budget (all in memory), none (HTAMERGE_TIMELINE_MEMORY_MB=0)
# and 1 MiB (some tracks in memory, the rest not), asked the same windows
# at every zoom from the whole run to a few microseconds. Loopback only.
set -u
. "$(dirname "$0")/../lib.sh"
. "${HM_SOURCE_DIR:?}/tests/tools/serve_port.sh"
H=${HTAMERGE:?}; SYNTH=${HTAMERGE_SYNTH:-$(dirname "$H")/htamerge-synth}
T=$(hm_mktemp cli_tlmem)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$T"; }
trap cleanup EXIT

# Two ranks, 300 steps of 5 ms in one trace each: 38 400 slices a rank on
# 3 tracks (28 200 / 9 600 / 600), enough for coarse and fine windows.
for r in 0 1; do
    RANK=$r WORLD_SIZE=2 LOCAL_RANK=$r HTAMERGE_RUN_START_NS=1700000000000000000 HTAMERGE_TRACE_DIR="$T/tr" \
        "$SYNTH" --steps 300 --step-ms 5 --cycle 300 2>/dev/null || { echo "FAIL: synth"; exit 1; }
done
"$H" ingest -q -o "$T/t.db" "$T/tr" 2>/dev/null || { echo "FAIL: ingest"; exit 1; }

# start NAME [ENV...]: a server on a free loopback port; sets PORT_NAME.
start() {
    local name=$1 port=; shift
    env "$@" "$H" serve "$T/t.db" --listen 127.0.0.1:0 2>"$T/$name.err" &
    pids+=($!)
    port=$(serve_port "$T/$name.err")
    [ -n "$port" ] || { echo "FAIL: server $name did not start: $(cat "$T/$name.err")"; exit 1; }
    printf -v "PORT_$name" '%s' "$port"
}
start mem
start sql HTAMERGE_TIMELINE_MEMORY_MB=0
start mixed HTAMERGE_TIMELINE_MEMORY_MB=1

get() { curl -s --max-time 20 -o "$3" -w '%{http_code}' "http://127.0.0.1:$1$2"; }

code=$(get "$PORT_mem" /api/run "$T/run.json")
[ "$code" = 200 ] || { echo "FAIL: /api/run: HTTP $code"; exit 1; }
span=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["span_ns"])' "$T/run.json")

# Windows: zoom z (span / z) at a few offsets, two widths in pixels, one
# rank alone; the first request also builds every track.
python3 - "$span" > "$T/queries" <<'EOF'
import sys
span = int(sys.argv[1])
for z in (1, 3, 10, 30, 100, 300, 1000, 10000, 100000):
    for off in (0, 0.37, 0.81):
        t0 = int(span * off * (1 - 1 / z))
        t1 = t0 + max(1, span // z)
        for px in (1500, 97):
            print(f"t0={t0}&t1={t1}&px={px}")
            print(f"t0={t0}&t1={t1}&px={px}&ranks=1")
EOF
n=0
while read -r q; do
    n=$((n + 1))
    for s in mem sql mixed; do
        port=PORT_$s
        code=$(get "${!port}" "/api/timeline?$q" "$T/$s.json")
        [ "$code" = 200 ] || fail "$s $q: HTTP $code $(head -c 200 "$T/$s.json")"
    done
    cmp -s "$T/mem.json" "$T/sql.json" || fail "memory and SQL answers differ for $q"
    cmp -s "$T/mem.json" "$T/mixed.json" || fail "memory and mixed answers differ for $q"
    cp "$T/mem.json" "$T/ans.$n.json"
done < "$T/queries"
# The windows must have exercised both ways of answering, with slices drawn.
python3 - "$T" "$n" <<'EOF' || fail "the windows did not cover coarse and fine answers with slices drawn"
import json, sys
kinds, drawn = set(), 0
for i in range(1, int(sys.argv[2]) + 1):
    d = json.load(open(f"{sys.argv[1]}/ans.{i}.json"))
    kinds |= {t["lod"] for t in d["tracks"]}
    drawn += sum(len(t["slices"]) for t in d["tracks"] if t["lod"] == "fine")
sys.exit(0 if {"coarse", "fine"} <= kinds and drawn > 0 else 1)
EOF

finish "PASS: $n windows, identical from memory, SQL and a mixed budget"

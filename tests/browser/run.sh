#!/usr/bin/env bash
# Browser tests of the web viewer, driven by Debian's chromium through
# playwright-core: a 4-rank synthetic run with a straggler (rank 2), served
# by `htamerge serve` (viewer.test.mjs); GPU memory rows on a device
# fixture (memory.test.mjs), also served from the index of a sharded
# ingest of it; capture windows drawn on the live one
# (windows.test.mjs); then live mode: the page opened on
# `mpirun -n 2 htamerge --serve` while the job runs (live.test.mjs); then
# the viewer at scale, on runs of 8, 256 and 1,024 ranks (scale.test.mjs).
# Screenshots go to $HM_TMPDIR/browser/.
# Skips (exit 77, which ctest shows as a skip) only when chromium or node_modules are missing:
#   apt-get install -y chromium nodejs npm && (cd tests/browser && npm ci)
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../tools/serve_port.sh"
H=${HTAMERGE:?path of the htamerge binary}
SYN=${HTAMERGE_SYNTH:-$(dirname "$H")/htamerge-synth}
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
if [ ! -x "$CHROMIUM" ]; then echo "SKIP: $CHROMIUM not installed (apt-get install -y chromium)"; exit 77; fi
if [ ! -d "$here/node_modules/playwright-core" ] || ! command -v node >/dev/null; then
    echo "SKIP: node or tests/browser/node_modules missing (cd tests/browser && npm ci)"; exit 77
fi
out=${HM_TMPDIR:-/tmp}/browser
T=$(mktemp -d "${TMPDIR:-/tmp}/hm_browser.XXXXXX")
mkdir -p "$out"
pid= lpid=
cleanup() {
    [ -n "$pid" ] && kill "$pid" 2>/dev/null
    [ -n "$lpid" ] && kill -INT "$lpid" 2>/dev/null   # mpirun passes Ctrl-C on to its ranks
    wait 2>/dev/null; rm -rf "$T"
}
trap cleanup EXIT

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
# Sanitizer builds: Open MPI's own allocations are not ours to judge.
export ASAN_OPTIONS=${ASAN_OPTIONS:-}:detect_leaks=0
# `htamerge serve FILE` in the background: sets pid and port (empty when
# it did not start).
serve() {
    "$H" serve "$1" --listen 127.0.0.1:0 2>"$T/serve.err" &
    pid=$!
    port=$(serve_port "$T/serve.err") || { echo "FAIL: server did not start"; cat "$T/serve.err"; }
}
unserve() { kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; pid=; }
# page_test FILE TEST [OUT]: serves FILE and runs the page test TEST.mjs on
# it (screenshots in OUT); rc=1 when either fails.
page_test() {
    local o=${3:-$out}
    mkdir -p "$o"
    serve "$1"
    if [ -n "$port" ]; then
        timeout -k 5 120 node "$here/$2.mjs" "http://127.0.0.1:$port/" "$o" "$CHROMIUM" || rc=1
    else
        rc=1
    fi
    unserve
}

if ! timeout -k 5 90 mpirun --oversubscribe -n 4 "$H" -o "$T/run.db" "$SYN" --steps 8 --straggler 2:20 \
        >"$T/run.log" 2>&1; then
    echo "FAIL: could not make the synthetic run"; cat "$T/run.log"; exit 1
fi
serve "$T/run.db"
[ -n "$port" ] || exit 1
timeout -k 5 120 node "$here/viewer.test.mjs" "http://127.0.0.1:$port/" "$out" "$CHROMIUM"
rc=$?
unserve

# GPU memory rows, on the device fixture of 4 ranks' memory events.
src=$(cd "$here/../.." && pwd)
if "$H" ingest -q -o "$T/memory.db" "$src/tests/fixtures/gpu/memory4"; then
    page_test "$T/memory.db" memory.test
else
    echo "FAIL: could not ingest the memory fixture"; rc=1
fi
# The same through the index of a sharded ingest (ranks 0-1 on host a, 2-3
# on b, simulated): its timeline and memory rows come from the shards.
for h in a b; do mkdir -p "$T/hosts/$h/traces"; done
for r in 0 1 2 3; do
    h=a; [ $r -ge 2 ] && h=b
    cp "$src"/tests/fixtures/gpu/memory4/rank$r.*.json.gz "$T/hosts/$h/traces/"
done
if timeout -k 5 90 mpirun --oversubscribe --bind-to none -n 5 -x HM_HOSTS="0:a 3:b" -x HM_ROOT="$T/hosts" \
        "$src/tests/tools/sim_host.sh" "$H" ingest -q --node-local --shards -o "$T/sharded.db" traces \
        >"$T/sharded.log" 2>&1; then
    page_test "$T/sharded.db" memory.test "$out/sharded"
else
    echo "FAIL: could not make the sharded ingest"; cat "$T/sharded.log"; rc=1
fi

# Capture windows, on the live device fixture of 4 ranks with the counters
# live capture writes when CUPTI detaches and a capture window runs (times
# from the first slice; windows.test.mjs lists them).
zcat "$src/tests/fixtures/gpu/memory4_live.db.gz" > "$T/windows.db"
O=$(sqlite3 "$T/windows.db" 'SELECT min(ts) FROM slices')
if sqlite3 "$T/windows.db" "
INSERT INTO strings (id, str) SELECT max(id) + 1, 'htamerge/cupti recording' FROM strings;
INSERT INTO strings (id, str) SELECT max(id) + 1, 'htamerge/capture window' FROM strings;
WITH n(paused, id) AS (SELECT 1, id FROM strings WHERE str = 'htamerge/cupti recording' UNION ALL
                       SELECT 0, id FROM strings WHERE str = 'htamerge/capture window'),
     v(rank, paused, ms, value) AS (VALUES (0, 0, 1000, 1), (0, 0, 2500, 0), (1, 1, 2000, 0), (1, 1, 4000, 1),
                                           (1, 0, 5000, 1), (2, 1, 5500, 0))
INSERT INTO counters (rank, device, name, ts, value)
SELECT v.rank, -1, n.id, $O + v.ms * 1000000, v.value FROM v JOIN n USING (paused);"; then
    page_test "$T/windows.db" windows.test
else
    echo "FAIL: could not add capture windows to the live memory fixture"; rc=1
fi

# --serve-linger: rank 0 stops serving the finished file on its own, and
# the job ends (what batch use relies on).
if ! timeout -k 5 90 mpirun --oversubscribe -n 1 "$H" -o "$T/linger.db" --serve 127.0.0.1:0 --serve-linger 1 \
        "$SYN" --steps 2 >"$T/linger.log" 2>&1 ||
    ! grep -q 'stopped serving after 1 s (--serve-linger)' "$T/linger.log"; then
    echo "FAIL: --serve-linger 1 did not end the job"; cat "$T/linger.log"; rc=1
fi

# Live mode: 100 steps of 200 ms (20 s), a trace file every 2 steps; rank 0
# serves the file while the job writes it and after it ends, until Ctrl-C
# (--serve-linger forever: the page decides when it has seen enough, so
# nothing here depends on how fast a loaded machine runs the job).
lport=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
timeout -k 5 300 mpirun --oversubscribe -n 2 "$H" -o "$T/live.db" --serve "127.0.0.1:$lport" --serve-linger forever \
    "$SYN" --steps 100 --step-ms 200 --cycle 2 >"$T/live.log" 2>&1 &
lpid=$!
up=
for _ in $(seq 200); do
    curl -s -m 1 -o /dev/null "http://127.0.0.1:$lport/api/run" && up=1 && break
    sleep 0.1
done
if [ -z "$up" ]; then
    echo "FAIL: the live server did not start"; cat "$T/live.log"; rc=1
else
    # The page test sends Ctrl-C to mpirun itself once rank 0 serves the
    # finished run, and checks what the page shows when the server stops.
    timeout -k 5 300 node "$here/live.test.mjs" "http://127.0.0.1:$lport/" "$out" "$CHROMIUM" "$lpid" \
        "$T/live.log" || rc=1
fi
# Ctrl-C to mpirun must end the job, server included (rank 0 once kept
# serving, orphaned, for ever).
grep -q 'still serving the finished run' "$T/live.log" || { echo "FAIL: the live run did not finish"; rc=1; }
kill -INT "$lpid" 2>/dev/null; wait "$lpid" 2>/dev/null; lpid=
for _ in $(seq 100); do
    pgrep -f "$T/live.db" >/dev/null || break
    sleep 0.1
done
if pgrep -f "$T/live.db" >/dev/null; then
    echo "FAIL: processes of the live run outlived mpirun: $(pgrep -af "$T/live.db" | cut -c1-120)"
    pkill -f "$T/live.db"; rc=1
fi

# Scale: runs of N ranks made without mpirun (htamerge-synth --ranks; 4
# steps at 1,024 ranks), the straggler mid-run so that reaching it takes
# scrolling, then ingested. HM_BROWSER_SCALE_RANKS picks the sizes
# (the sanitizer build of tests/run_all.sh leaves out 1,024).
for n in ${HM_BROWSER_SCALE_RANKS:-8 256 1024}; do
    st=$(( n > 8 ? n / 2 + 5 : 5 )) steps=$(( n > 256 ? 4 : 8 )) dir="$T/scale$n"
    mkdir -p "$dir"
    if ! HTAMERGE_TRACE_DIR="$dir" HTAMERGE_RUN_START_NS=1700000000000000000 \
            "$SYN" --ranks "$n" --steps "$steps" --gzip --straggler "$st:20" >"$T/synth.log" 2>&1 ||
        ! "$H" ingest -o "$dir.db" "$dir" >"$T/ingest.log" 2>&1; then
        echo "FAIL: could not make the $n-rank run"; cat "$T/synth.log" "$T/ingest.log" 2>/dev/null; rc=1; continue
    fi
    rm -rf "$dir"
    serve "$dir.db"
    if [ -z "$port" ]; then rc=1; continue; fi
    timeout -k 5 120 node "$here/scale.test.mjs" "http://127.0.0.1:$port/" "$out" "$CHROMIUM" "$n" "$st" || rc=1
    unserve
done
echo "screenshots: $out"
exit $rc

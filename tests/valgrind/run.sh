#!/usr/bin/env bash
# Valgrind memcheck over the real fixtures (issue 9, item 4): ingest, every
# report topic, sql, export, and serve (started under valgrind, asked for
# every endpoint, stopped with SIGTERM). Any memcheck error, or a definite
# or indirect leak, fails the run (--error-exitcode).
#
#   bash tests/valgrind/run.sh [--quick] [BUILD_DIR]
#
# --quick (what ctest runs): the smallest real fixture, ingest + three
# report topics + sql, well under a minute. Without it: every fixture folder
# of tests/fixtures/hta, every topic, export and serve (several minutes).
# Needs a build without sanitizers (valgrind and ASan do not mix); skips
# itself (exit 77, "SKIP") when valgrind is missing or the build is ASan.
set -u
. "$(dirname "$0")/../lib.sh"
QUICK=
[ "${1:-}" = --quick ] && { QUICK=1; shift; }
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
H=${HTAMERGE:-${1:-$ROOT/build}/htamerge}
[ -d "$H" ] && H=$H/htamerge
FX=${HM_SOURCE_DIR:-$ROOT}/tests/fixtures/hta
command -v valgrind >/dev/null || skip "valgrind is not installed"
[ -x "$H" ] || { echo "FAIL: no htamerge at $H"; exit 1; }
if nm -D "$H" 2>/dev/null | grep -q __asan_init || ldd "$H" 2>/dev/null | grep -q libasan; then
    skip "$H is a sanitizer build"
fi
T=$(hm_mktemp valgrind)
srv=
cleanup() { [ -n "$srv" ] && kill "$srv" 2>/dev/null; wait 2>/dev/null; rm -rf "$T"; }
trap cleanup EXIT
runs=0
VG=(valgrind --tool=memcheck --error-exitcode=99 --leak-check=full --show-leak-kinds=definite,indirect
    --errors-for-leak-kinds=definite,indirect --track-origins=yes --num-callers=30 --quiet
    --suppressions="$ROOT/tests/valgrind/htamerge.supp")

# vg NAME CMD...: runs CMD under memcheck; its log is $T/NAME.vg. Exit 99
# means memcheck found something; another non-zero exit is the command's.
vg() {
    local name=$1 rc
    shift
    runs=$((runs + 1))
    "${VG[@]}" --log-file="$T/$name.vg" "$H" "$@" > "$T/$name.out" 2> "$T/$name.err"
    rc=$?
    if [ $rc = 99 ] || [ -s "$T/$name.vg" ]; then
        fail "memcheck: $name ($*)"
        head -60 "$T/$name.vg" >&2
    elif [ $rc != 0 ]; then
        fail "$name exited $rc: $(tail -3 "$T/$name.err")"
    fi
}

if [ -n "$QUICK" ]; then
    fixtures=(critical_path)
    topics=(summary temporal stragglers)
else
    fixtures=()
    for d in "$FX"/*/; do fixtures+=("$(basename "$d")"); done
    topics=(summary temporal overlap idle kernels steps clocks stragglers collectives nvtx)
fi
for fx in "${fixtures[@]}"; do
    vg "ingest-$fx" ingest -q -o "$T/$fx.db" "$FX/$fx"
    [ -s "$T/$fx.db" ] || continue
    for topic in "${topics[@]}"; do
        vg "report-$fx-$topic" report "$T/$fx.db" "$topic" --format json
    done
    vg "sql-$fx" sql "$T/$fx.db" 'SELECT rank, count(*) FROM tracks GROUP BY rank'
    [ -n "$QUICK" ] && continue
    vg "report-$fx-table" report "$T/$fx.db" kernels --all-steps
    vg "export-$fx" export "$T/$fx.db" --format chrome -o "$T/$fx.json"
done

# serve: every endpoint once, a few bad requests, then SIGTERM (exit 0).
if [ -z "$QUICK" ] && [ -s "$T/trace_filter.db" ]; then
    runs=$((runs + 1))
    "${VG[@]}" --log-file="$T/serve.vg" "$H" serve "$T/trace_filter.db" --listen 127.0.0.1:0 2> "$T/serve.err" &
    srv=$!
    PORT=
    for _ in $(seq 600); do
        PORT=$(sed -n 's|.*http://127\.0\.0\.1:\([0-9]*\)/.*|\1|p' "$T/serve.err")
        [ -n "$PORT" ] && break
        sleep 0.1
    done
    [ -n "$PORT" ] || fail "serve under valgrind did not start"
    u=http://127.0.0.1:$PORT
    for p in /api/run /api/ranks /api/report/summary /api/report/stragglers /api/report/temporal \
             /api/report/collectives /api/report/nvtx /api/report/clocks '/api/timeline?px=400' \
             '/api/timeline?t0=1000000&t1=2000000&px=300&ranks=1' /api/slice/1 /api/collective/1 / /js/app.js \
             /api/nosuch /api/slice/abc '/%2e%2e/%2e%2e/etc/passwd' '/api/timeline?t0=abc'; do
        curl -s --max-time 60 -o /dev/null "$u$p" || fail "serve: no answer to $p"
    done
    curl -s --max-time 60 -o /dev/null -X POST --data-binary 'SELECT * FROM sqlite_master' "$u/api/sql"
    curl -s --max-time 60 -o /dev/null -X POST --data-binary 'DROP TABLE slices' "$u/api/sql"
    curl -s --max-time 60 -o /dev/null -X POST --data-binary \
        'WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT max(x) FROM c' "$u/api/sql"
    kill -TERM "$srv"
    wait "$srv"; rc=$?
    srv=
    if [ $rc = 99 ] || [ -s "$T/serve.vg" ]; then
        fail "memcheck: serve"
        head -60 "$T/serve.vg" >&2
    elif [ $rc != 0 ]; then
        fail "serve exited $rc after SIGTERM"
    fi
fi
echo "valgrind memcheck: $runs runs over ${#fixtures[@]} fixtures, $fails failures"
[ "$fails" = 0 ]

#!/usr/bin/env bash
# End-to-end: `htamerge serve` as a client sees it. Every endpoint's shape
# and error codes, reports equal to `report --format json`, read-only SQL,
# path traversal (encoded too), size limits, slow clients, Host and token
# checks, a file replaced under the server, and a live run still writing
# the file. Loopback only; every request and wait is bounded.
set -u
. "$(dirname "$0")/../lib.sh"
. "${HM_SOURCE_DIR:?}/tests/tools/serve_port.sh"
H=${HTAMERGE:?}; FX=${HM_SOURCE_DIR:?}/tests/fixtures/hta
T=$(hm_mktemp cli_serve)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$T"; }
trap cleanup EXIT
command -v curl >/dev/null || { echo "FAIL: curl is not installed"; exit 1; }

# start_server NAME DB [ARGS...]: starts a server on a free loopback port;
# sets PORT. The server prints its address on stderr.
start_server() {
    local name=$1 db=$2; shift 2
    "$H" serve "$db" --listen 127.0.0.1:0 "$@" 2>"$T/$name.err" &
    pids+=($!)
    PORT=
    PORT=$(serve_port "$T/$name.err") && return 0
    fail "server $name did not start: $(cat "$T/$name.err")"
    return 1
}
# req [CURL ARGS...] PATH: body in $T/body, status in $CODE.
req() {
    local path=${*: -1}
    CODE=$(curl -s --path-as-is --max-time 10 -o "$T/body" -w '%{http_code}' "${@:1:$#-1}" "http://127.0.0.1:$PORT$path")
}
expect() { # CODE-WANTED DESCRIPTION CURL-ARGS... PATH
    local want=$1 what=$2; shift 2
    req "$@"
    [ "$CODE" = "$want" ] || fail "$what: HTTP $CODE, expected $want ($(head -c 200 "$T/body"))"
}
# json PYTHON-EXPR: evaluates EXPR with d = the last body parsed; fails if false.
json() {
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if eval(sys.argv[2]) else 1)' \
        "$T/body" "$1" 2>/dev/null || fail "json check failed: $1 on $(head -c 300 "$T/body")"
}

"$H" ingest -q -o "$T/tf.db" "$FX/trace_filter" 2>/dev/null || { echo "FAIL: ingest"; exit 1; }
start_server main "$T/tf.db" || exit 1

# ---- endpoints and shapes ----
expect 200 "run" /api/run
json 'd["rank_count"] == 2 and isinstance(d["origin_ns"], str) and d["span_ns"] > 0 and d["live"] is False and len(d["ranks"]) == 2'
expect 200 "ranks" /api/ranks
json 'len(d["ranks"]) == 2 and all(len(r["tracks"]) > 0 for r in d["ranks"]) and len(d["categories"]) > 0'
for topic in temporal overlap idle kernels steps clocks summary; do
    expect 200 "report $topic" "/api/report/$topic?all_steps=1&ranks=1"
    "$H" report "$T/tf.db" "$topic" --format json --all-steps --ranks 1 > "$T/cli.json"
    python3 - "$T/body" "$T/cli.json" <<'EOF' || fail "report $topic differs from report --format json"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
sys.exit(0 if a == b else 1)
EOF
done
expect 200 "report stragglers" /api/report/stragglers
json '"straggler" in d and isinstance(d["evidence"], str) and all(set(r) >= {"rank","late_count","instances","late_fraction","blame_us"} for r in d["ranks"])'
expect 200 "report collectives" /api/report/collectives
json 'len(d["instances"]) > 0 and set(d["instances"][0]) >= {"pg","op","seq","ranks","skew_us","late_rank","id"}'
coll=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["instances"][0]["id"])' "$T/body")
expect 200 "collective" "/api/collective/$coll"
json 'len(d["arrivals"]) >= 1 and "skew_us" in d and "late_rank" in d and all("track" in m for m in d["members"])'
expect 400 "collective find without seq" "/api/collective/find?pg=0"
expect 404 "collective find missing" "/api/collective/find?pg=nope&seq=1"
expect 200 "slice" /api/slice/1
json 'd["id"] == 1 and "name" in d and "rank" in d and "dur" in d'
expect 200 "timeline" "/api/timeline?px=500"
json 'd["px"] == 500 and len(d["tracks"]) > 0 and all(set(t) >= {"id","rank","slices","dense"} for t in d["tracks"])'
python3 - "$T/body" <<'EOF' || fail "timeline sends more than ~4 narrow slices per column"
import json, sys, collections
d = json.load(open(sys.argv[1]))
for t in d["tracks"]:
    per = collections.Counter(int((s[1] - d["t0"]) // d["col_ns"]) for s in t["slices"] if s[2] < d["col_ns"])
    if any(per[c] + per[c + 1] > 8 for c in per):
        sys.exit(1)
EOF
expect 200 "timeline zoomed, rank 1" "/api/timeline?t0=1000000&t1=2000000&px=300&ranks=1"
json 'all(t["rank"] == 1 for t in d["tracks"]) and d["t0"] == 1000000'

# ---- capture windows (/api/windows): none in a file without live capture;
# then counters as live capture writes them, added to a copy: rank 0's GPU
# not recorded 1.0-2.0 s (a repeated 0 within changes nothing) and from
# 3.0 s to its end, a capture window 0.5-0.8 s; rank 1 a capture window
# from 2.5 s to its end, and a recording sample at 1 before any 0 ----
expect 200 "windows of a file without them" /api/windows
json 'd["windows"] == [] and d["truncated"] is False and d["t0"] == 0'
cp "$T/tf.db" "$T/windows.db"
O=$(sqlite3 "$T/windows.db" 'SELECT min(ts) FROM slices')
sqlite3 "$T/windows.db" "
INSERT INTO strings (id, str) SELECT max(id) + 1, 'htamerge/cupti recording' FROM strings;
INSERT INTO strings (id, str) SELECT max(id) + 1, 'htamerge/capture window' FROM strings;
WITH n(paused, id) AS (SELECT 1, id FROM strings WHERE str = 'htamerge/cupti recording' UNION ALL
                       SELECT 0, id FROM strings WHERE str = 'htamerge/capture window'),
     v(rank, paused, ms, value) AS (VALUES (0, 1, 1000, 0), (0, 1, 1500, 0), (0, 1, 2000, 1), (0, 1, 3000, 0),
                                           (0, 0, 500, 1), (0, 0, 800, 0), (1, 0, 2500, 1), (1, 1, 100, 1))
INSERT INTO counters (rank, device, name, ts, value)
SELECT v.rank, -1, n.id, $O + v.ms * 1000000, v.value FROM v JOIN n USING (paused);" ||
    fail "windows: sqlite3 could not add the counters"
# A window still open at the end lasts to its rank's last event.
end0=$(sqlite3 "$T/windows.db" "SELECT max(s.ts + s.dur) - $O FROM slices s JOIN tracks t ON t.id = s.track WHERE t.rank = 0")
end1=$(sqlite3 "$T/windows.db" "SELECT max(s.ts + s.dur) - $O FROM slices s JOIN tracks t ON t.id = s.track WHERE t.rank = 1")
main_port=$PORT
start_server windows "$T/windows.db" || exit 1
W='[(w["rank"], w["kind"], w["start"], w["end"]) for w in d["windows"]]'
expect 200 "windows" /api/windows
json "$W == [(0, 'capture', 500000000, 800000000), (0, 'paused', 1000000000, 2000000000),
             (0, 'paused', 3000000000, $end0), (1, 'capture', 2500000000, $end1)] and d['truncated'] is False"
expect 200 "windows of rank 1 from 3 s: its window whole" "/api/windows?ranks=1&t0=3000000000"
json "$W == [(1, 'capture', 2500000000, $end1)] and d['t0'] == 3000000000"
expect 200 "windows within 1.2-1.3 s" "/api/windows?t0=1200000000&t1=1300000000"
json "$W == [(0, 'paused', 1000000000, 2000000000)]"
expect 200 "windows at one pixel column: merged" "/api/windows?px=1&ranks=0"
json "$W == [(0, 'capture', 500000000, 800000000), (0, 'paused', 1000000000, $end0)]"
expect 400 "windows bad ranks" "/api/windows?ranks=x"
expect 400 "windows t1 before t0" "/api/windows?t0=5&t1=2"
expect 400 "windows px 0" "/api/windows?px=0"
expect 200 "windows: the run's origin" /api/run
json "int(d['origin_ns']) == $O"
PORT=$main_port

# ---- bad parameters: 400, unknown things: 404, wrong method: 405 ----
expect 404 "unknown topic" /api/report/nosuch
expect 404 "unknown endpoint" /api/nosuch
expect 400 "bad ranks" "/api/report/temporal?ranks=x"
expect 400 "bad all_steps" "/api/report/temporal?all_steps=maybe"
expect 400 "bad steps" "/api/report/steps?steps=1-"
expect 400 "steps on another topic" "/api/report/temporal?steps=1"
expect 400 "t0 not a number" "/api/timeline?t0=abc"
expect 400 "t1 before t0" "/api/timeline?t0=100&t1=50"
expect 400 "px 0" "/api/timeline?px=0"
expect 400 "px huge" "/api/timeline?px=999999"
expect 400 "t0 overflow" "/api/timeline?t0=99999999999999999999999"
expect 400 "malformed query" "/api/timeline?t0"
expect 400 "slice id junk" /api/slice/abc
expect 400 "slice id negative" /api/slice/-1
expect 404 "slice missing" /api/slice/999999999
expect 404 "collective missing" /api/collective/999999999
expect 405 "GET sql" /api/sql
expect 405 "POST run" -X POST -d x /api/run

# ---- read-only SQL ----
expect 200 "sql text" -X POST --data-binary 'SELECT rank, count(*) AS n FROM tracks GROUP BY rank' /api/sql
json 'd["columns"] == ["rank", "n"] and len(d["rows"]) == 2 and d["truncated"] is False'
expect 200 "sql json" -X POST -H 'Content-Type: application/json' --data-binary '{"sql": "SELECT 1 AS one"}' /api/sql
json 'd["rows"] == [[1]]'
expect 200 "sql row limit" -X POST --data-binary 'WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 20000) SELECT x FROM c' /api/sql
json 'd["truncated"] is True and len(d["rows"]) == 10000'
expect 400 "sql time limit" -X POST --data-binary 'WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c' /api/sql
json '"time" in d["error"]'
for bad in 'DELETE FROM slices' "ATTACH '$T/x.db' AS x" 'PRAGMA writable_schema = 1' \
           "SELECT load_extension('x')" 'CREATE TABLE x (a)' 'SELECT 1; DROP TABLE slices' ''; do
    expect 403 "sql refused: $bad" -X POST --data-binary "$bad" /api/sql
    json 'isinstance(d["error"], str) and d["error"]'
done
expect 400 "sql syntax error" -X POST --data-binary 'SELEKT 1' /api/sql
expect 400 "sql json without sql" -X POST --data-binary '{"nosql": 1}' /api/sql
[ "$(sqlite3 "$T/tf.db" 'SELECT count(*) FROM slices')" -gt 0 ] || fail "slices were deleted"

# ---- static files and traversal ----
expect 200 "index" /
grep -q '<canvas id="tl">' "$T/body" || fail "index.html is not the viewer"
curl -s -D "$T/hdr" -o /dev/null --max-time 10 "http://127.0.0.1:$PORT/js/app.js"
grep -qi '^content-type: text/javascript' "$T/hdr" || fail "app.js content type"
grep -qi '^content-security-policy:' "$T/hdr" || fail "no CSP header"
grep -qi '^x-content-type-options: nosniff' "$T/hdr" || fail "no nosniff header"
expect 404 "missing static" /nope.js
for p in '/../../../../etc/passwd' '/%2e%2e/%2e%2e/%2e%2e/etc/passwd' '/js/%2e%2e/%2e%2e/README.md' \
         '/%2e%2e%2f%2e%2e%2fetc%2fpasswd' '/..%2f..%2f..%2fetc/passwd' '/%252e%252e/%252e%252e/etc/passwd' \
         '/index.html%00.js' '/js%5c..%5c..%5cetc%5cpasswd' '/.%2e/.%2e/etc/passwd' '//etc/passwd' \
         '/api/../../etc/passwd' '/api/report/..%2f..%2fetc%2fpasswd'; do
    req "$p"
    case $CODE in 200) fail "traversal $p answered 200" ;; esac
    grep -q 'root:' "$T/body" && fail "traversal $p leaked /etc/passwd"
done

# ---- limits: body, headers, slow clients; the server survives them ----
head -c 200000 /dev/zero | tr '\0' 'x' > "$T/big"
expect 413 "oversized body" -X POST --data-binary @"$T/big" /api/sql
long=$(head -c 20000 /dev/zero | tr '\0' 'a')
req -H "X-Long: $long" /api/run
[ "$CODE" = 200 ] && fail "oversized headers accepted"
printf 'GARBAGE\r\n\r\n' | timeout 5 python3 -c '
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
s.sendall(sys.stdin.buffer.read()); s.recv(100)' "$PORT" 2>/dev/null
expect 200 "alive after abuse" /api/run

# ---- Host header (DNS rebinding) ----
expect 403 "foreign Host" -H 'Host: evil.example:8080' /api/run
expect 200 "localhost Host" -H "Host: localhost:$PORT" /api/run

# ---- token ----
start_server tok "$T/tf.db" --token s3cret --timeout 2 || exit 1
python3 - "$PORT" <<'EOF' || fail "a slow client was not dropped by the timeout"
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
s.sendall(b"GET /api/run HTTP/1.1\r\nHost: 127.0.0.1\r\n")   # never finishes its headers
t = time.time()
try:
    while s.recv(4096):
        pass
except socket.timeout:
    sys.exit(1)
sys.exit(0 if time.time() - t < 8 else 1)
EOF
expect 401 "no token" /api/run
expect 401 "wrong token" -H 'Authorization: Bearer nope' /api/run
expect 200 "bearer token" -H 'Authorization: Bearer s3cret' /api/run
expect 200 "query token" '/api/run?token=s3cret'
expect 200 "static without token" /
"$H" serve "$T/tf.db" --listen 0.0.0.0:0 >/dev/null 2>"$T/err"; rc=$?
[ "$rc" = 2 ] || fail "non-loopback without token: exit $rc, expected 2"
grep -q 'token' "$T/err" || fail "non-loopback refusal does not mention the token"
"$H" serve "$T/tf.db" --listen '[::]:0' >/dev/null 2>&1; [ $? = 2 ] || fail "[::] without token accepted"
"$H" serve "$T/tf.db" --listen 'nonsense:port' >/dev/null 2>&1; [ $? = 2 ] || fail "bad --listen accepted"
"$H" serve "$T/tf.db" --memory 10 >/dev/null 2>&1; [ $? = 2 ] || fail "--memory 10 (under 64 MiB) accepted"
"$H" serve "$T/tf.db" --memory lots >/dev/null 2>&1; [ $? = 2 ] || fail "--memory lots accepted"
"$H" serve "$T/none.db" --listen 127.0.0.1:0 >/dev/null 2>&1; [ $? = 1 ] || fail "missing file: not exit 1"

# ---- a new file renamed over the served one ----
"$H" ingest -q -o "$T/one.db" "$FX/trace_filter/sampled_rank-0.json.gz" 2>/dev/null
start_server swap "$T/one.db" || exit 1
expect 200 "ranks before" /api/ranks
json 'len(d["ranks"]) == 1'
"$H" ingest -q -o "$T/one.db" "$FX/trace_filter" 2>/dev/null
expect 200 "ranks after the file was replaced" /api/ranks
json 'len(d["ranks"]) == 2'

# ---- another connection commits: the version a client sees moves only with
# what it gets. The timeline's index is rebuilt at most every 2 s, so a
# commit right after a build leaves it stale for a while; a version that
# moved before the index caught up made a live page reload once, get the old
# rows, and never ask again (the finished run's NVTX rows never drawn).
cp "$T/tf.db" "$T/commit.db"
start_server commit "$T/commit.db" || exit 1
expect 200 "run before the commit" /api/run
v0=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["version"])' "$T/body")
expect 200 "timeline before the commit" "/api/timeline?px=300&ranks=0,1"
json 'sum(len(t["slices"]) + len(t["dense"]) for t in d["tracks"] if t["id"] == 2) > 0'
sqlite3 "$T/commit.db" "DELETE FROM slices WHERE track = 2" || fail "commit: sqlite3 could not write"
moved=0
for _ in $(seq 50); do
    req /api/run
    v=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["version"])' "$T/body" 2>/dev/null)
    if [ -n "$v" ] && [ "$v" != "$v0" ]; then
        moved=1
        expect 200 "timeline after the version moved" "/api/timeline?px=300&ranks=0,1"
        json 'sum(len(t["slices"]) + len(t["dense"]) for t in d["tracks"] if t["id"] == 2) == 0'
        break
    fi
    sleep 0.2
done
[ "$moved" = 1 ] || fail "commit: /api/run's version never moved in 10 s after another connection committed"

# ---- a live run still writing the file ----
SYN=${HTAMERGE_SYNTH:-$(dirname "$H")/htamerge-synth}
if command -v mpirun >/dev/null && [ -x "$SYN" ]; then
    mpi_env
    run_mpi 60 -n 2 "$H" -o "$T/live.db" "$SYN" --steps 60 --cycle 2 \
        >"$T/live.log" 2>&1 &
    pids+=($!)
    for _ in $(seq 100); do
        [ -s "$T/live.db" ] && sqlite3 "$T/live.db" 'SELECT 1 FROM meta' >/dev/null 2>&1 && break
        sleep 0.1
    done
    start_server live "$T/live.db" || exit 1
    seen_running=0; first=; last=
    for _ in $(seq 150); do
        req /api/run
        st=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d.get("run_status"), d.get("slices"))' "$T/body" 2>/dev/null)
        case $st in running*) seen_running=1; n=${st#* }; first=${first:-$n}; last=$n ;; complete*) break ;; esac
        sleep 0.2
    done
    [ "$seen_running" = 1 ] || fail "live: never saw run_status running ($st)"
    [ -n "$first" ] && [ "$last" -gt "$first" ] 2>/dev/null || fail "live: slices did not grow while running ($first -> $last)"
    expect 200 "live timeline" "/api/timeline?px=300"
    wait "${pids[-2]}" 2>/dev/null
    expect 200 "run after the live run" /api/run
    json 'd["run_status"] == "complete" and d["slices"] > 0'
    expect 200 "timeline after the live run" "/api/timeline?px=300"
    json 'sum(len(t["slices"]) + len(t["dense"]) for t in d["tracks"]) > 0'
else
    echo "note: mpirun or htamerge-synth missing; live test skipped"
fi

finish "test_serve: all checks passed"

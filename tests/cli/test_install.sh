#!/usr/bin/env bash
# The install layout, used from a moved tree: `cmake --install` of the build
# folder holding $HTAMERGE into a temporary prefix, the tree then moved
# elsewhere (nothing may point back at the first prefix or the build), and
# from there: --version, help, ingest + report of a fixture, serve (pages
# from share/htamerge/web_static on disk, customised, with the embedded
# copy behind it; traversal, symlink escapes, dot files, FIFOs, folders),
# HTAMERGE_WEB_DIR, a 2-rank mpirun of htamerge-synth, the injection
# library found under lib/htamerge, and the installed systemd unit checked
# by systemd-analyze (verify, and the exposure score). Loopback only;
# every request and wait is bounded.
set -u
. "$(dirname "$0")/../lib.sh"
H=${HTAMERGE:?}; FX=${HM_SOURCE_DIR:?}/tests/fixtures/hta
B=$(dirname "$H")
T=$(hm_mktemp cli_install)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$T"; }
trap cleanup EXIT
command -v curl >/dev/null || { echo "FAIL: curl is not installed"; exit 1; }
[ -f "$B/CMakeCache.txt" ] || { echo "FAIL: $B is not a CMake build folder"; exit 1; }

# ---- install, then move the tree ----
if ! cmake --install "$B" --prefix "$T/first" >"$T/install.log" 2>&1; then
    echo "FAIL: cmake --install"; cat "$T/install.log"; exit 1
fi
if [ -e "$B/libhtamerge-inject.so" ]; then with_inject=1; else with_inject=0; fi
unit="$T/first/lib/systemd/system/htamerge-serve@.service"
for f in bin/htamerge bin/htamerge-synth share/htamerge/web_static/index.html \
         share/htamerge/web_static/js/app.js share/htamerge/sql/schema.sql share/htamerge/sql/views.sql \
         share/man/man1/htamerge.1 share/htamerge/examples/htamerge.sbatch lib/systemd/system/htamerge-serve@.service; do
    [ -f "$T/first/$f" ] || fail "not installed: $f"
done
[ -f "$T/first/lib/htamerge/libhtamerge-inject.so" ] && has_lib=1 || has_lib=0
[ $has_lib = $with_inject ] || fail "lib/htamerge/libhtamerge-inject.so installed: $has_lib, built: $with_inject"
grep -q "^ExecStart=$T/first/bin/htamerge serve %f " "$unit" || fail "unit ExecStart: $(grep ExecStart "$unit")"

# The unit, while its ExecStart binary is where it says.
if command -v systemd-analyze >/dev/null; then
    mkdir -p "$T/unit" && cp "$unit" "$T/unit/" && touch "$T/served.db"
    inst=$(systemd-escape --path "$T/served.db")
    out=$(cd "$T/unit" && systemd-analyze verify --man=no "$T/unit/htamerge-serve@$inst.service" 2>&1)
    [ -z "$out" ] || fail "systemd-analyze verify: $out"
    score=$(cd "$T/unit" && systemd-analyze security --offline=true --no-pager \
            "$T/unit/htamerge-serve@$inst.service" 2>&1 | sed -n 's/.*Overall exposure level.*: \([0-9.]*\).*/\1/p')
    python3 -c 'import sys; sys.exit(0 if sys.argv[1] and float(sys.argv[1]) <= 2.0 else 1)' "$score" ||
        fail "unit exposure level '$score', want <= 2.0 (systemd-analyze security)"
else
    echo "note: no systemd-analyze; the unit is not verified"
fi

mkdir -p "$T/elsewhere"
mv "$T/first" "$T/elsewhere/opt" || { echo "FAIL: cannot move the tree"; exit 1; }
P=$T/elsewhere/opt
HM=$P/bin/htamerge
WEB=$P/share/htamerge/web_static
unset HTAMERGE_WEB_DIR

# ---- version, help ----
"$HM" --version >"$T/version" 2>&1 || fail "--version exited $?"
grep -q '^htamerge [0-9]' "$T/version" || fail "--version: $(cat "$T/version")"
grep -q '^database schema version [0-9]' "$T/version" || fail "--version has no schema version"
if [ $with_inject = 1 ]; then
    grep -q '^gpu capture: .*nvtx' "$T/version" || fail "--version: $(cat "$T/version")"
else
    grep -q '^gpu capture: not built' "$T/version" || fail "--version: $(cat "$T/version")"
fi
"$HM" help >"$T/help" 2>&1 || fail "help exited $?"
grep -q '^usage: htamerge' "$T/help" || fail "help: $(head -3 "$T/help")"
"$HM" help report | grep -q 'usage: htamerge report' || fail "help report"
if command -v man >/dev/null; then
    MANWIDTH=80 man -l "$P/share/man/man1/htamerge.1" 2>/dev/null | grep -q 'htamerge ingest' ||
        fail "the installed man page does not render"
fi

# ---- ingest and report ----
"$HM" ingest -q -o "$T/tf.db" "$FX/trace_filter" 2>"$T/ingest.err" || fail "ingest: $(cat "$T/ingest.err")"
"$HM" report "$T/tf.db" temporal --format json >"$T/temporal.json" 2>&1 || fail "report temporal"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if len(d["ranks"]) == 2 else 1)' \
    "$T/temporal.json" 2>/dev/null || fail "report temporal: $(head -c 300 "$T/temporal.json")"

# ---- serve from the moved tree ----
# start_server NAME [ENV=VALUE...]: serves tf.db on a free loopback port; sets PORT.
start_server() {
    local name=$1; shift
    env "$@" "$HM" serve "$T/tf.db" --listen 127.0.0.1:0 2>"$T/$name.err" &
    pids+=($!)
    PORT=
    for _ in $(seq 100); do
        PORT=$(sed -n 's|.*http://127\.0\.0\.1:\([0-9]*\)/.*|\1|p' "$T/$name.err")
        [ -n "$PORT" ] && return 0
        sleep 0.1
    done
    fail "server $name did not start: $(cat "$T/$name.err")"
    return 1
}
stop_server() { kill "${pids[-1]}" 2>/dev/null; wait "${pids[-1]}" 2>/dev/null; unset 'pids[-1]'; }
# get PATH: body in $T/body, status in $CODE, content type in $CTYPE.
get() {
    local r
    r=$(curl -s --path-as-is --max-time 10 -o "$T/body" -w '%{http_code} %{content_type}' "http://127.0.0.1:$PORT$1")
    CODE=${r%% *}; CTYPE=${r#* }
}
expect() { # CODE PATH WHAT
    get "$2"
    [ "$CODE" = "$1" ] || fail "$3: GET $2 gave $CODE, expected $1 ($(head -c 200 "$T/body"))"
}

if start_server disk; then
    grep -q "web files from $WEB" "$T/disk.err" || fail "serve does not say it serves $WEB: $(cat "$T/disk.err")"
    expect 200 / "index from disk"
    cmp -s "$T/body" "$WEB/index.html" || fail "/ is not $WEB/index.html"
    # Customised on disk: served as changed, without a restart.
    echo '<!-- customised-here -->' >>"$WEB/index.html"
    expect 200 /index.html "customised index"
    grep -q customised-here "$T/body" || fail "the customised index.html was not served"
    # A file missing on disk comes from the embedded copy.
    rm "$WEB/style.css"
    expect 200 /style.css "embedded fallback"
    case $CTYPE in text/css*) ;; *) fail "style.css type $CTYPE";; esac
    [ -s "$T/body" ] || fail "embedded style.css is empty"
    # A file only on disk.
    echo 'site notes' >"$WEB/notes.txt"
    expect 200 /notes.txt "extra file"
    grep -q 'site notes' "$T/body" || fail "notes.txt body"
    # Escapes: none may answer with a file outside web_static.
    echo 'outside-secret' >"$P/share/htamerge/secret.txt"
    ln -s ../secret.txt "$WEB/leak.txt"
    ln -s / "$WEB/rootlink"
    ln -s "$P/share/htamerge" "$WEB/up"
    ln -s js/app.js "$WEB/alias.js"
    echo 'dot' >"$WEB/.hidden.txt"
    mkfifo "$WEB/pipe.js"
    for path in /../secret.txt /%2e%2e/secret.txt /js/../../secret.txt '/..%2fsecret.txt' /./index.html; do
        get "$path"
        [ "$CODE" = 400 ] || [ "$CODE" = 404 ] || fail "traversal $path answered $CODE"
        grep -q outside-secret "$T/body" && fail "traversal $path leaked the file"
    done
    for path in /leak.txt /rootlink/etc/passwd /up/secret.txt /.hidden.txt /pipe.js /js /js/ /rootlink; do
        expect 404 "$path" "refused on disk"
        grep -q -e outside-secret -e 'root:' "$T/body" && fail "$path leaked a file"
    done
    expect 200 /alias.js "a symlink inside web_static"
    cmp -s "$T/body" "$WEB/js/app.js" || fail "alias.js is not js/app.js"
    expect 200 /api/run "the API after the refusals"
    stop_server
fi

# HTAMERGE_WEB_DIR wins; a folder that does not exist means the embedded copy.
mkdir -p "$T/site"
echo '<html>site-index</html>' >"$T/site/index.html"
if start_server env HTAMERGE_WEB_DIR="$T/site"; then
    grep -q "web files from $T/site" "$T/env.err" || fail "serve does not name HTAMERGE_WEB_DIR: $(cat "$T/env.err")"
    expect 200 / "HTAMERGE_WEB_DIR index"
    grep -q site-index "$T/body" || fail "HTAMERGE_WEB_DIR index not served"
    expect 200 /js/app.js "embedded behind HTAMERGE_WEB_DIR"
    stop_server
fi
rm -rf "$WEB"
if start_server embedded; then
    grep -q "web files from" "$T/embedded.err" && fail "no web folder, yet: $(cat "$T/embedded.err")"
    expect 200 / "embedded index"
    grep -q customised-here "$T/body" && fail "the embedded index is the customised one"
    expect 404 /notes.txt "embedded has no notes.txt"
    stop_server
fi

# ---- a run from the moved tree ----
mpi_env
export ASAN_OPTIONS=${ASAN_OPTIONS:-}:detect_leaks=0
if run_mpi 120 -n 2 "$HM" -o "$T/run.db" "$P/bin/htamerge-synth" --steps 4 --straggler 1:20 \
        >"$T/run.log" 2>&1; then
    n=$("$HM" sql "$T/run.db" 'SELECT count(*) FROM ranks WHERE complete = 1' --format csv 2>&1 | tail -n 1)
    [ "$n" = 2 ] || fail "run: $n complete ranks, want 2"
else
    fail "mpirun of the installed htamerge-synth: $(tail -n 20 "$T/run.log")"
fi
# The child learns where the injection library is: lib/htamerge of the moved tree.
if [ $with_inject = 1 ]; then
    timeout -k 5 60 "$HM" -o "$T/env.db" -- /bin/sh -c 'echo "$CUDA_INJECTION64_PATH" >"$0"' "$T/inject.path" \
        >"$T/env.log" 2>&1 || fail "run /bin/sh: $(tail -n 5 "$T/env.log")"
    [ "$(cat "$T/inject.path" 2>/dev/null)" = "$P/lib/htamerge/libhtamerge-inject.so" ] ||
        fail "CUDA_INJECTION64_PATH='$(cat "$T/inject.path" 2>/dev/null)', want $P/lib/htamerge/libhtamerge-inject.so"
    ldd "$P/lib/htamerge/libhtamerge-inject.so" 2>&1 | grep -q 'not found' && fail "the injection library misses a library"
fi

finish "test_install: ok"

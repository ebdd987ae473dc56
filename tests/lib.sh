# Helpers shared by the shell tests (tests/cli, tests/integration,
# tests/valgrind). Source it first thing after `set -u`:
#   . "$(dirname "$0")/../lib.sh"
# Every test counts its failed checks in $fails, keeps going after one (so a
# run shows all of them), and ends with `finish`.

fails=0

# fail MESSAGE: one failed check; the test goes on.
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }

# skip REASON: the test cannot run here. 77 is SKIP_RETURN_CODE in
# tests/CMakeLists.txt, so ctest reports "Skipped" instead of a pass.
skip() { echo "SKIP: $*"; exit 77; }

# finish [MESSAGE]: exit 0 printing MESSAGE (default "ok") when every check
# passed, else exit 1 with the count.
finish() {
    if [ "$fails" = 0 ]; then echo "${1:-ok}"; exit 0; fi
    echo "$fails failures" >&2
    exit 1
}

# sql1 DB QUERY: the last row of QUERY's CSV output (the value of a
# one-row, one-column query), read with the htamerge under test ($H).
sql1() { "${H:?}" sql "$1" "$2" --format csv | tail -n 1; }

# hm_mktemp NAME: a new folder for the test's files, under the build tree
# when ctest runs it.
hm_mktemp() { mktemp -d "${HM_TMPDIR:-/tmp}/$1.XXXXXX"; }

# hm_tmpdir NAME: sets T to a new folder, removed when the test exits. Tests
# that must also stop servers or unmount define their own trap instead.
hm_tmpdir() {
    T=$(hm_mktemp "$1") || exit 1
    trap 'rm -rf "$T"' EXIT
}

# mpi_env: lets Open MPI run as root (containers, CI) and start more ranks
# than there are cores, also for the mpirun a test's job starts itself.
mpi_env() {
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    export OMPI_MCA_rmaps_base_oversubscribe=1
}

# run_mpi SECONDS MPIRUN-ARGS...: mpirun bounded by a timeout, so a hung
# job fails the test (exit 124) instead of stalling ctest; -k 5 kills it
# when it ignores the TERM. Run in the background (or any subshell) it
# execs timeout, so $! is timeout's pid as with a bare `timeout ... &` and
# killing it stops the job.
run_mpi() {
    local secs=$1
    shift
    if [ "$BASHPID" != "$$" ]; then
        exec timeout -k 5 "$secs" mpirun --oversubscribe "$@"
    fi
    timeout -k 5 "$secs" mpirun --oversubscribe "$@"
}

# torch_python: P, the Python that runs the test's torch scripts
# ($HTAMERGE_PYTHON, default /usr/bin/python3: `python3` on PATH may lack
# torch), exported for htamerge; one intra-op thread a process (ranks share
# the machine's cores); sanitizer builds leave the interpreter's own
# allocations alone. Skips (77) when that Python has no torch.
torch_python() {
    export HTAMERGE_PYTHON=${HTAMERGE_PYTHON:-/usr/bin/python3}
    P=$HTAMERGE_PYTHON
    "$P" -c 'import torch' >/dev/null 2>&1 || skip "$P has no torch"
    export OMP_NUM_THREADS=1
    export ASAN_OPTIONS=${ASAN_OPTIONS:-}:detect_leaks=0
}

# The GPU fixtures (tests/fixtures/gpu): gpu_fixtures DIR NAME... gunzips
# each NAME.db.gz into DIR/NAME.db; fixture_sql DIR/NAME EXPECTED QUERY fails
# unless the query's rows (python's sqlite3, '|' between columns, one row a
# line) equal EXPECTED.
gpu_fixtures() {
    local dir=$1 f
    shift
    for f in "$@"; do
        gunzip -c "${HM_SOURCE_DIR:?}/tests/fixtures/gpu/$f.db.gz" >"$dir/$f.db" || { echo "FAIL: gunzip $f.db.gz"; exit 1; }
    done
}
fixture_sql() {
    local got
    got=$(python3 -c 'import sqlite3,sys
for r in sqlite3.connect(sys.argv[1]).execute(sys.argv[2]): print("|".join(map(str, r)))' "$1.db" "$3" 2>&1)
    [ "$got" = "$2" ] || fail "$(basename "$1"): $3"$'\n'"  got:      $(echo "$got" | head -5 | tr '\n' ';')"$'\n'"  expected: $(echo "$2" | tr '\n' ';')"
}

# hm_sanitized BIN: whether BIN was built with AddressSanitizer (its
# quarantine and shadow memory make resident-memory figures meaningless).
hm_sanitized() { nm -D "$1" 2>/dev/null | grep -q __asan_init || ldd "$1" 2>/dev/null | grep -q libasan; }

# On-demand capture in a running job (htamerge capture):
# capture_when_steps HTAMERGE JOB_PID N OUT asks the job whose control
# socket is in $HTAMERGE_CONTROL_DIR for N steps in full as soon as rank 0
# knows steps ("no steps" until then), OUT.out and OUT.err holding the
# answer; fails the test when that never happens.
capture_when_steps() {
    local h=$1 job=$2 n=$3 out=$4
    for _ in $(seq 1 600); do
        if ls "${HTAMERGE_CONTROL_DIR:?}/"*.sock >/dev/null 2>&1; then
            "$h" capture --steps "$n" >"$out.out" 2>"$out.err" && return 0
            grep -q "no steps are known" "$out.err" || { fail "capture: $(cat "$out.err")"; return 1; }
        fi
        kill -0 "$job" 2>/dev/null || break
        sleep 0.2
    done
    fail "capture --steps $n never succeeded: $(cat "$out.err" 2>/dev/null)"
    return 1
}
# capture_windows DB: the steps each rank's "htamerge/capture window"
# holds, "rank:first-last " per window, by rank and time.
capture_windows() {
    sqlite3 "$1" "WITH w AS (SELECT c.rank, c.ts AS t0, (SELECT min(d.ts) FROM counters d WHERE d.rank = c.rank
           AND d.name = c.name AND d.ts > c.ts AND d.value = 0) AS t1
         FROM counters c JOIN strings n ON n.id = c.name
         WHERE n.str = 'htamerge/capture window' AND c.value = 1)
       SELECT w.rank || ':' || min(json_extract(s.args, '\$.step')) || '-' || max(json_extract(s.args, '\$.step'))
       FROM w JOIN tracks t ON t.rank = w.rank JOIN slices s ON s.track = t.id JOIN strings n ON n.id = s.name
       WHERE n.str = 'step' AND json_extract(s.args, '\$.domain') = 'htamerge'
         AND s.ts >= w.t0 - 1000000 AND s.ts + s.dur <= w.t1 + 1000000
       GROUP BY w.rank, w.t0 ORDER BY w.rank, w.t0" | tr '\n' ' '
}

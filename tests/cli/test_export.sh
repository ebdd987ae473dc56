#!/usr/bin/env bash
# `htamerge export --format chrome`: the merged Chrome trace, checked by
# tests/tools/check_chrome_trace.py against its database (valid JSON, exact
# times, one named pid per rank host and per rank GPU, named tids, nesting,
# every slice of the chosen ranks/steps once, launch and collective flows
# bound to their slices, counters) on
#   - HTA's trace_filter (2 ranks of an NCCL job: launches, matched
#     collectives, steps 551-552) and critical_path/alexnet (partly
#     overlapping GPU slices: moved to overlap lanes);
#   - the 4-rank gloo DDP fixture, filtered by --ranks and --steps;
#   - a synthetic 4-rank mpirun run (collectives, memory counters);
# plus stdout output, determinism, --help, and the errors (bad path, rank or
# step the file lacks, bad options, unwritable output: exit codes, messages,
# no file left behind).
set -u
. "$(dirname "$0")/../lib.sh"
H=${HTAMERGE:?set HTAMERGE to the htamerge binary}
SYN=${HTAMERGE_SYNTH:-$(dirname "$H")/htamerge-synth}
SRC=${HM_SOURCE_DIR:?set HM_SOURCE_DIR}
FIX=$SRC/tests/fixtures
CHECK="python3 $SRC/tests/tools/check_chrome_trace.py"
hm_tmpdir cli_export
q() { "$H" sql "$1" "$2" --format csv | tail -n +2 | tr -d '"'; }
ingest() { "$H" ingest -o "$1" "${@:2}" >"$T/ingest.out" 2>&1 || fail "ingest $*: $(cat "$T/ingest.out")"; }

# export DB OUT ARGS... then check it; extra checker options after --.
export_check() {
    local db=$1 out=$2; shift 2
    local eargs=() cargs=()
    while [ $# -gt 0 ] && [ "$1" != -- ]; do eargs+=("$1"); shift; done
    [ $# -gt 0 ] && shift
    cargs=("$@")
    "$H" export "$db" --format chrome -o "$out" "${eargs[@]}" 2>"$T/export.err" ||
        { fail "export $db ${eargs[*]}: $(cat "$T/export.err")"; return; }
    $CHECK "$out" "$db" "${cargs[@]}" >"$T/check.out" 2>&1 || fail "check $out ($db ${eargs[*]}): $(cat "$T/check.out")"
    cat "$T/check.out"
}

# ---- HTA's trace_filter: 2 ranks, launches, collectives, steps ----
ingest "$T/tf.db" "$FIX/hta/trace_filter"
export_check "$T/tf.db" "$T/tf.json" -- --min-launch-flows 1000 --min-collective-flows 8
grep -q '"ph":"f","bp":"e"' "$T/tf.json" || fail "no flow finish with bp e"
export_check "$T/tf.db" "$T/tf_r1.json" --ranks 1 -- --ranks 1 --min-launch-flows 500
grep -q 'rank 0 ' "$T/tf_r1.json" && fail "--ranks 1 still names rank 0"
grep -q '"cat":"collective"' "$T/tf_r1.json" && fail "--ranks 1 has collective flows (needs 2 ranks)"
export_check "$T/tf.db" "$T/tf_s552.json" --steps 552 -- --steps 552 --min-collective-flows 1
n_all=$(grep -c '"ph":"X"' "$T/tf.json"); n_552=$(grep -c '"ph":"X"' "$T/tf_s552.json")
[ "$n_552" -gt 0 ] && [ "$n_552" -lt "$n_all" ] || fail "--steps 552 kept $n_552 of $n_all slices"
[ "$n_all" = "$(q "$T/tf.db" 'SELECT count(*) FROM slices')" ] || fail "$n_all X events, database has more or fewer"

# --absolute: aligned epoch microseconds (origin 0), the same slices.
export_check "$T/tf.db" "$T/tf_abs.json" --absolute -- --min-launch-flows 1000
grep -q '"origin_ns":"0"' "$T/tf_abs.json" || fail "--absolute: origin_ns is not 0"
first_ts=$(q "$T/tf.db" 'SELECT min(ts) FROM slices')
grep -q "\"ts\":${first_ts:0:-3}\.${first_ts: -3}," "$T/tf_abs.json" || fail "--absolute: no event at the first slice's $first_ts ns"

# stdout (no -o, and -o -) gives the same bytes as a file; two runs agree.
"$H" export "$T/tf.db" >"$T/tf_stdout.json" || fail "export to stdout"
"$H" export "$T/tf.db" -o - >"$T/tf_dash.json" 2>"$T/dash.err" || fail "export -o -"
cmp -s "$T/tf.json" "$T/tf_stdout.json" || fail "stdout export differs from -o FILE"
cmp -s "$T/tf.json" "$T/tf_dash.json" || fail "-o - export differs from -o FILE"
[ -s "$T/dash.err" ] && fail "-o - wrote to stderr: $(cat "$T/dash.err")"

# ---- alexnet: partial overlaps on a GPU stream go to an overlap lane ----
ingest "$T/alex.db" "$FIX/hta/critical_path/alexnet"
export_check "$T/alex.db" "$T/alex.json" -- --min-launch-flows 50
grep -q '"overlap_lane":1' "$T/alex.json" || fail "alexnet: no slice on an overlap lane"
grep -q 'stream 7 · overlap 1' "$T/alex.json" || fail "alexnet: overlap lane not named"
grep -q 'on overlap lanes' "$T/export.err" || fail "no summary line: $(cat "$T/export.err")"

# ---- gloo DDP, 4 ranks: --ranks and --steps together ----
ingest "$T/gloo.db" "$FIX/gloo/ddp4_straggler2"
export_check "$T/gloo.db" "$T/gloo.json" -- --min-collective-flows 10
export_check "$T/gloo.db" "$T/gloo_f.json" --ranks 0,2-3 --steps 3-4 -- --ranks 0,2-3 --steps 3-4 --min-collective-flows 2
python3 - "$T/gloo_f.json" <<'EOF' || fail "gloo filtered: processes"
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
names = sorted(e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "process_name")
assert [n.split(" · ")[0] for n in names] == ["rank 0"] * 2 + ["rank 2"] * 2 + ["rank 3"] * 2, names
assert all(n.endswith(" · CPU") or " · GPU " in n for n in names), names
EOF

# ---- a synthetic 4-rank mpirun run: collectives across ranks, counters ----
if command -v mpirun >/dev/null && [ -x "$SYN" ]; then
    mpi_env
    ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 \
        run_mpi 120 -n 4 "$H" -o "$T/run.db" "$SYN" --steps 4 --straggler 2:20 >"$T/run.out" 2>&1 ||
        fail "mpirun synth: $(tail -5 "$T/run.out")"
    export_check "$T/run.db" "$T/run.json" -- --min-launch-flows 400 --min-collective-flows 4
    grep -q '"ph":"C"' "$T/run.json" || fail "synth: no counter events"
    for r in 0 1 2 3; do
        grep -q "\"name\":\"rank $r · [^\"]* · CPU\"" "$T/run.json" || fail "synth: rank $r CPU not named"
        grep -q "\"name\":\"rank $r · GPU $r\"" "$T/run.json" || fail "synth: rank $r GPU not named"
    done
    export_check "$T/run.db" "$T/run_f.json" --ranks 1-2 --steps 2 -- --ranks 1-2 --steps 2 --min-collective-flows 1
else
    fail "mpirun or htamerge-synth missing: the multi-rank case did not run"
fi

# ---- errors ----
"$H" export "$T/missing.db" -o "$T/x.json" 2>"$T/err"; rc=$?
[ $rc = 1 ] && grep -q "missing.db" "$T/err" && grep -qi "no such file" "$T/err" || fail "bad path: rc $rc, $(cat "$T/err")"
echo 'not a database' >"$T/junk.db"
"$H" export "$T/junk.db" 2>"$T/err" >/dev/null; rc=$?
[ $rc = 1 ] && grep -q "junk.db" "$T/err" || fail "junk file: rc $rc, $(cat "$T/err")"
"$H" export "$T/tf.db" --ranks 7 -o "$T/x.json" 2>"$T/err"; rc=$?
[ $rc = 2 ] && grep -q "rank 7 is not in the file (it has ranks 0 to 1)" "$T/err" || fail "--ranks 7: rc $rc, $(cat "$T/err")"
"$H" export "$T/tf.db" --steps 9 -o "$T/x.json" 2>"$T/err"; rc=$?
[ $rc = 2 ] && grep -q "ProfilerStep 9 is not in the file (it has steps 551 to 552)" "$T/err" || fail "--steps 9: rc $rc, $(cat "$T/err")"
[ -e "$T/x.json" ] && fail "a failed export left $T/x.json"
ls -A "$T" | grep -q '\.tmp-' && fail "a failed export left a temporary file"
"$H" export "$T/tf.db" --format perfetto 2>"$T/err" >/dev/null; rc=$?
[ $rc = 2 ] && grep -q "unknown format 'perfetto'" "$T/err" || fail "--format perfetto: rc $rc"
"$H" export "$T/tf.db" --ranks 1-x 2>"$T/err" >/dev/null; rc=$?
[ $rc = 2 ] && grep -q "bad rank list" "$T/err" || fail "--ranks 1-x: rc $rc"
"$H" export 2>"$T/err" >/dev/null; rc=$?
[ $rc = 2 ] && grep -q "missing FILE.db" "$T/err" || fail "no argument: rc $rc"
"$H" export "$T/tf.db" -o "$T/no/such/dir/x.json" 2>"$T/err"; rc=$?
[ $rc = 1 ] && grep -q "cannot create" "$T/err" || fail "unwritable output: rc $rc, $(cat "$T/err")"
if [ -w /dev/full ]; then
    "$H" export "$T/tf.db" >/dev/full 2>"$T/err"; rc=$?
    [ $rc = 1 ] && grep -q "write failed" "$T/err" || fail "stdout on /dev/full: rc $rc, $(cat "$T/err")"
fi
"$H" export --help >"$T/help" 2>&1 || fail "--help exit status"
grep -q '^examples:' "$T/help" && grep -q '^exit status:' "$T/help" && grep -q -- '--steps' "$T/help" ||
    fail "--help lacks examples, exit status or options"

finish "ok: export"

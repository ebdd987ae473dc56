#!/usr/bin/env bash
# `htamerge diff` end to end on the real 4-rank gloo DDP run
# (tests/fixtures/gloo/ddp4_none) and HTA's alexnet trace (no ProfilerStep):
#   - a 10 % slower copy (tests/tools/stretch_trace.py) is flagged (exit 1,
#     step time named), an identical ingest passes (exit 0);
#   - fewer ranks, fewer steps, no steps at all, one run with steps and one
#     without (exit 2, with the reason), a new straggler;
#   - the numbers are report's; json / csv / table agree; colour only on a
#     terminal (forced with script(1)), never in a pipe or with NO_COLOR;
#   - bad command lines and unreadable files exit 2.
set -u
. "$(dirname "$0")/../lib.sh"
H=${HTAMERGE:?set HTAMERGE to the htamerge binary}
SRC=${HM_SOURCE_DIR:?set HM_SOURCE_DIR}
FIX=$SRC/tests/fixtures
STRETCH="python3 $SRC/tests/tools/stretch_trace.py"
hm_tmpdir cli_diff
ingest() { "$H" ingest -o "$1" "${@:2}" >"$T/ingest.out" 2>&1 || fail "ingest $*: $(cat "$T/ingest.out")"; }
# diff_rc WANT ARGS...: runs diff (stdout to $T/out, stderr to $T/err) and checks its exit status.
diff_rc() {
    local want=$1 rc; shift
    "$H" diff "$@" >"$T/out" 2>"$T/err"; rc=$?
    [ "$rc" = "$want" ] || fail "diff $*: exit $rc, want $want: $(head -c 600 "$T/out") $(cat "$T/err")"
}
# js EXPR FILE: evaluates a python expression over the JSON document d of FILE.
js() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($1)" "$2"; }
# notes FILE: writes the notes of a diff --format json document to $T/notes, one a line.
notes() { js "'\n'.join(d['notes'])" "$1" >"$T/notes"; }
# overall METRIC FILE KEY: the overall row's KEY of a diff --format json document.
overall() { js "[m['$3'] for m in d['metrics'] if m['metric']=='$1' and m['rank'] is None][0]" "$2"; }

GLOO=$FIX/gloo/ddp4_none
ingest "$T/base.db" "$GLOO"
ingest "$T/same.db" "$GLOO"
$STRETCH --factor 1.1 "$GLOO" "$T/slow" || fail "stretch_trace"
ingest "$T/slow.db" "$T/slow"

# ---- identical: exit 0, nothing moved ----
diff_rc 0 "$T/base.db" "$T/same.db" --format json
cp "$T/out" "$T/same.json"
[ "$(js "d['regressed'], d['comparable'], d['gate']" "$T/same.json")" = "False True step_time_mean_us" ] ||
    fail "identical: $(js "d['regressed'], d['comparable'], d['gate']" "$T/same.json")"
[ "$(js "sum(m['worse'] or m['improved'] for m in d['metrics'])" "$T/same.json")" = 0 ] ||
    fail "identical: some metric moved"
[ "$(overall step_time_mean_us "$T/same.json" pct)" = 0 ] || fail "identical: step time pct not 0"
diff_rc 0 "$T/base.db" "$T/same.db"
grep -q "^no regression: NEW's mean step time equals BASE's" "$T/out" || fail "identical verdict: $(head -3 "$T/out")"
[ -s "$T/err" ] && fail "identical: stderr '$(cat "$T/err")'"

# ---- 10 % slower: exit 1, step time named, numbers are report's ----
diff_rc 1 "$T/base.db" "$T/slow.db"
grep -q "^regression: NEW's mean step time is 10.0% longer than BASE's" "$T/out" || fail "slow verdict: $(sed -n 3p "$T/out")"
grep -q "^step_time_mean_us .* +10.0%  worse$" "$T/out" || fail "slow: no step_time_mean_us row marked worse"
diff_rc 1 "$T/base.db" "$T/slow.db" --format json
cp "$T/out" "$T/slow.json"
[ "$(js "d['regressed'], d['threshold_pct']" "$T/slow.json")" = "True 5" ] || fail "slow: not regressed in json"
[ "$(js "9.9 < [m for m in d['metrics'] if m['metric']=='step_time_mean_us' and m['rank'] is None][0]['pct'] < 10.1" "$T/slow.json")" = True ] ||
    fail "slow: step time pct $(overall step_time_mean_us "$T/slow.json" pct)"
[ "$(js "sorted({m['rank'] for m in d['metrics'] if m['metric']=='step_time_mean_us' and m['worse']} - {None})" "$T/slow.json")" = "[0, 1, 2, 3]" ] ||
    fail "slow: per-rank step times not all worse"
# The overall step time is the mean over ranks of report's analysed steps.
"$H" report "$T/base.db" steps --format json >"$T/steps.json"
want=$(js "round(sum(v)/len(v), 3) if (v := [sum(x)/len(x) for x in [[s['dur_us'] for s in d['steps'] if s['rank']==r and not s['dropped']] for r in range(4)]]) else 0" "$T/steps.json")
[ "$(overall step_time_mean_us "$T/slow.json" base)" = "$want" ] ||
    fail "step time $(overall step_time_mean_us "$T/slow.json" base) is not report's $want"
"$H" report "$T/base.db" temporal --format json >"$T/temporal.json"
want=$(js "round([r['compute_us'] for r in d['ranks'] if r['rank']==1][0] / 5, 3)" "$T/temporal.json")
got=$(js "[m['base'] for m in d['metrics'] if m['metric']=='compute_us_per_step' and m['rank']==1][0]" "$T/slow.json")
[ "$got" = "$want" ] || fail "rank 1 compute_us_per_step $got is not report's $want (5 analysed steps)"
# Thresholds: 10 % slower passes at 12, fails at 10 (>=), and the other way round is an improvement.
diff_rc 0 "$T/base.db" "$T/slow.db" --threshold 12
diff_rc 1 "$T/base.db" "$T/slow.db" -t 9.5%
diff_rc 0 "$T/slow.db" "$T/base.db" --format json
[ "$(overall step_time_mean_us "$T/out" improved)" = True ] || fail "faster: step time not improved"
grep -q "shorter than BASE's" "$T/out" || fail "faster: verdict $(js "d['verdict']" "$T/out")"

# ---- csv: the same rows as json ----
diff_rc 1 "$T/base.db" "$T/slow.db" --format csv
grep -q '^metric,rank,base,new,delta,pct,better,worse,improved$' "$T/out" || fail "csv header"
grep -q '^# regressed: true$' "$T/out" || fail "csv: no '# regressed: true'"
[ "$(grep -vc '^#' "$T/out")" = "$(js "len(d['metrics']) + 1" "$T/slow.json")" ] || fail "csv rows differ from json"
grep -q '^step_time_mean_us,,8784.03,9662.43,878.40,10,lower,true,false$' "$T/out" ||
    fail "csv step time row: $(grep '^step_time_mean_us,,' "$T/out")"

# ---- fewer ranks: overall compares, per-rank rows for the common ranks ----
mkdir -p "$T/r3" "$T/slow3"
cp "$GLOO"/rank-[012].* "$T/r3/"
cp "$T/slow"/rank-[012].* "$T/slow3/"
ingest "$T/r3.db" "$T/r3"
ingest "$T/slow3.db" "$T/slow3"
diff_rc 0 "$T/base.db" "$T/r3.db" --format json
[ "$(js "sorted({m['rank'] for m in d['metrics']} - {None})" "$T/out")" = "[0, 1, 2]" ] || fail "3 ranks: per-rank rows"
notes "$T/out"; grep -q "BASE has 4 ranks and NEW 3: .*only in BASE: 3; only in NEW: none" "$T/notes" ||
    fail "3 ranks: notes $(js "d['notes']" "$T/out")"
diff_rc 1 "$T/base.db" "$T/slow3.db"
diff_rc 1 "$T/r3.db" "$T/slow.db"

# ---- fewer steps: totals per analysed step ----
$STRETCH --until-step 6 "$GLOO" "$T/short" || fail "stretch_trace --until-step"
$STRETCH --until-step 6 --factor 1.1 "$GLOO" "$T/shortslow"
ingest "$T/short.db" "$T/short"
ingest "$T/shortslow.db" "$T/shortslow"
diff_rc 0 "$T/base.db" "$T/short.db" --format json
[ "$(js "d['base']['steps_per_rank'], d['new']['steps_per_rank']" "$T/out")" = "5 3" ] ||
    fail "short: steps per rank $(js "d['base'], d['new']" "$T/out")"
notes "$T/out"; grep -q "divided by each rank's analysed ProfilerSteps (BASE: 5 per rank, NEW: 3)" "$T/notes" ||
    fail "short: notes $(js "d['notes']" "$T/out")"
[ "$(js "abs([m for m in d['metrics'] if m['metric']=='idle_us_per_step' and m['rank'] is None][0]['pct']) < 5" "$T/out")" = True ] ||
    fail "short: idle per step moved $(overall idle_us_per_step "$T/out" pct)% (not normalised?)"
diff_rc 1 "$T/base.db" "$T/shortslow.db"

# ---- no ProfilerSteps: the GPU window gates ----
ALEX=$FIX/hta/critical_path/alexnet
ingest "$T/alex.db" "$ALEX"
$STRETCH --factor 1.1 "$ALEX" "$T/alexslow"
ingest "$T/alexslow.db" "$T/alexslow"
diff_rc 0 "$T/alex.db" "$T/alex.db"
diff_rc 1 "$T/alex.db" "$T/alexslow.db" --format json
[ "$(js "d['gate'], d['regressed']" "$T/out")" = "gpu_window_us True" ] || fail "no steps: gate $(js "d['gate']" "$T/out")"
notes "$T/out"; grep -q "neither run has ProfilerStep ranges" "$T/notes" || fail "no steps: note"

# ---- one run with steps, one without: exit 2 and why ----
diff_rc 2 "$T/base.db" "$T/alex.db"
grep -q "cannot compare: BASE has ProfilerStep ranges but NEW has none" "$T/err" || fail "mixed: stderr '$(cat "$T/err")'"
grep -q "^cannot compare" "$T/out" || fail "mixed: table verdict"
diff_rc 2 "$T/alex.db" "$T/base.db" --format json
[ "$(js "d['comparable'], d['regressed'], d['gate']" "$T/out")" = "False False None" ] || fail "mixed: json"
[ "$(js "sorted({m['metric'] for m in d['metrics']})" "$T/out")" = "['compute_pct', 'idle_pct', 'late_fraction', 'straggler']" ] ||
    fail "mixed: metrics $(js "sorted({m['metric'] for m in d['metrics']})" "$T/out")"

# ---- a straggler appears ----
ingest "$T/s2.db" "$FIX/gloo/ddp4_straggler2"
diff_rc 1 "$T/base.db" "$T/s2.db" --format json
[ "$(overall straggler "$T/out" base) $(overall straggler "$T/out" new) $(overall straggler "$T/out" worse)" = "None 2 True" ] ||
    fail "straggler row: $(js "[m for m in d['metrics'] if m['metric']=='straggler']" "$T/out")"

# ---- colour: only on a terminal ----
diff_rc 1 "$T/base.db" "$T/slow.db"
grep -q $'\033' "$T/out" && fail "diff: escape codes in a pipe"
diff_rc 1 "$T/base.db" "$T/slow.db" --color=always
grep -q $'\033\\[31mstep_time_mean_us' "$T/out" || fail "diff --color=always: step time not red"
"$H" report "$T/s2.db" stragglers | grep -q $'\033' && fail "report: escape codes in a pipe"
if command -v script >/dev/null; then
    script -qc "'$H' diff '$T/base.db' '$T/slow.db'" /dev/null >"$T/tty" </dev/null
    grep -q $'\033\\[31mstep_time_mean_us' "$T/tty" || fail "diff on a terminal: no colour"
    NO_COLOR=1 script -qc "'$H' diff '$T/base.db' '$T/slow.db'" /dev/null >"$T/tty" </dev/null
    grep -q $'\033' "$T/tty" && fail "diff: colour despite NO_COLOR"
    script -qc "'$H' report '$T/s2.db' stragglers" /dev/null >"$T/tty" </dev/null
    grep -q $'^straggler: \033\\[1;31m2\033\\[0m' "$T/tty" || fail "report on a terminal: straggler not highlighted"
    grep -q $'\033\\[1mrank' "$T/tty" || fail "report on a terminal: header not bold"
    NO_COLOR=1 script -qc "'$H' report '$T/s2.db' stragglers" /dev/null >"$T/tty" </dev/null
    grep -q $'\033' "$T/tty" && fail "report: colour despite NO_COLOR"
else
    echo "note: script(1) missing, terminal colour not checked" >&2
fi

# ---- bad command lines and files: exit 2 ----
diff_rc 2 "$T/base.db"
grep -q "expected BASE.db and NEW.db" "$T/err" || fail "one file: '$(cat "$T/err")'"
diff_rc 2 "$T/base.db" "$T/slow.db" --threshold -1
diff_rc 2 "$T/base.db" "$T/slow.db" --threshold 5x
diff_rc 2 "$T/base.db" "$T/slow.db" --format xml
diff_rc 2 "$T/base.db" "$T/slow.db" --color sometimes
diff_rc 2 "$T/base.db" "$T/missing.db"
grep -q "missing.db: cannot open" "$T/err" || fail "missing file: '$(cat "$T/err")'"
echo "not a database" >"$T/junk.db"
diff_rc 2 "$T/junk.db" "$T/base.db"
grep -q "junk.db: not an htamerge database" "$T/err" || fail "junk file: '$(cat "$T/err")'"
diff_rc 0 --help
grep -q "^exit status: 0 no regression, 1 NEW regressed" "$T/out" || fail "--help: exit status"

# Exposed communication by parallelism dimension: a 2-D mesh (htamerge-synth
# --tp 2, 8 ranks) clean against one where rank 5 is 20 ms late. The
# dimensions' rows add up to exposed_comm_us_per_step, and the late rank's
# data-parallel group (4 ranks waiting) costs more than its tensor-parallel
# pair.
SYN=${HTAMERGE_SYNTH:-$(dirname "$H")/htamerge-synth}
for m in clean:"" late:"--straggler 5:20"; do
    # shellcheck disable=SC2086
    HTAMERGE_TRACE_DIR="$T/mesh_${m%%:*}" HTAMERGE_RUN_START_NS=1700000000000000000 "$SYN" --ranks 8 --tp 2 --steps 6 \
        --gzip ${m#*:} 2>/dev/null || fail "synth mesh ${m%%:*}"
    "$H" ingest -q -o "$T/mesh_${m%%:*}.db" "$T/mesh_${m%%:*}" || fail "ingest mesh ${m%%:*}"
done
"$H" diff "$T/mesh_clean.db" "$T/mesh_late.db" --format json > "$T/mesh.json"
python3 -c 'import json,sys
d = json.load(open(sys.argv[1])); o = {m["metric"]: m for m in d["metrics"] if m["rank"] is None}
tp, dp, all_ = o["exposed_comm_tp_us_per_step"], o["exposed_comm_dp_us_per_step"], o["exposed_comm_us_per_step"]
for k in ("base", "new"):
    assert abs(tp[k] + dp[k] - all_[k]) < 2, (k, tp[k], dp[k], all_[k])   # each row rounds to 1 us
assert tp["worse"] and dp["worse"] and dp["delta"] > tp["delta"] > 0, (tp, dp)' "$T/mesh.json" ||
    fail "diff by dimension: $(head -c 600 "$T/mesh.json")"

finish "test_diff: ok"

#!/bin/bash
# What capture costs per CUDA launch (issue 6), measured in one process per
# run with launch_cost (tests/gpu/launch_cost.cu), so between-process noise
# is the spread of a tight loop, not of a training step. The modes run
# interleaved, ROUNDS rounds, each a fresh process:
#   plain     launch_cost alone
#   capture   htamerge -o X.db (the default capture)
#   kernel    the same with HTAMERGE_CUPTI_KINDS=kernel (CUPTI kernel records only)
#   nocupti   --capture nvtx,nccl (the library loaded, CUPTI off)
#   detached  CUPTI attached for the first 0.3 s, then detached (cuptiFinalize)
#             for good: does a detach leave a cost per launch behind? (a
#             launch-bound LSTM's detached steps ran 5-36 % slower than plain
#             in 3-epoch default runs, bench/RESULTS.md, fourteenth session)
#   sync      --capture all,cupti-sync
# With ALT_CARRY=DIR (DIR/htamerge beside its own libhtamerge-inject.so,
# e.g. a build of the previous commit) the default modes add capture_alt
# and kernel_alt: capture and kernel with that build, for an A/B of a
# library change in the same rounds.
# For each op (kernel, memset, memcpy) the summary gives the median ns per
# launch and its difference from plain (= the tool's cost per launch), both
# pooled and paired within a round; then, for every CUPTI run, whether the
# database holds every kernel/memset/memcpy launched (warm-up included),
# with CUPTI's drop counters when it does not.
#
# usage: [MODES="plain capture ..."] [LAUNCH_COST_ARGS="-n 200000 -r 5"]
#        [LAUNCH_COST_CPU=2] [ALT_CARRY=DIR] tests/gpu/launch_cost.sh CARRY OUT [ROUNDS=3]
#   LAUNCH_COST_CPU: the CPU the launching thread is pinned to in every run
#          (empty: not pinned); every other thread of the run (CUDA's,
#          CUPTI's, the drain thread, htamerge's) is kept off it with
#          taskset, so that core placement is the same in every run. (On
#          the H200 VM, 3 rounds of 5 x 50000 still spread +-10-15 % between
#          processes, pinned or not: use ROUNDS >= 5 and the paired column.)
#   CARRY: folder from tests/gpu/prepare_carry.sh (htamerge,
#          libhtamerge-inject.so, launch_cost, lib/).
# Output: OUT/launch_cost.txt (summary, rewritten after every round, so a
# run cut short still leaves one), OUT/launch_cost.raw (every measurement
# line), OUT/launch_cost.log (every run's output).
set -u
C=$(realpath "${1:?carry folder}")
O=$(realpath "${2:?out folder}")
ROUNDS=${3:-3}
T=$(dirname "$(realpath "$0")")
W=$(mktemp -d /tmp/hmlaunch.XXXX)
trap 'rm -rf "$W"' EXIT
. "$T/carry_env.sh"
hm_carry_env "$C" "$W"
mkdir -p "$O"
H=$C/htamerge
B=$C/launch_cost
SUM=$O/launch_cost.txt
S=$O/launch_cost.checks   # runs and database checks, in order
RAW=$O/launch_cost.raw
L=$O/launch_cost.log
: >"$S"
: >"$RAW"
: >"$L"
read -r -a ARGS <<<"${LAUNCH_COST_ARGS:-}"
CPU=${LAUNCH_COST_CPU-2}
PIN=()
if [ -n "$CPU" ]; then
    ARGS+=(--cpu "$CPU")
    others=$(seq 0 $(($(nproc) - 1)) | grep -vx "$CPU" | paste -sd,)
    [ -n "$others" ] && PIN=(taskset -c "$others")
fi
MODES=${MODES:-plain capture kernel nocupti sync${ALT_CARRY:+ capture_alt kernel_alt}}
[ -x "$B" ] || { echo "launch_cost.sh: no $B (run tests/gpu/prepare_carry.sh)" >&2; exit 1; }

HR=("$H")
if ! timeout 60 "$H" -o "$W/sanity.db" true >>"$L" 2>&1; then
    echo "singleton MPI failed; using mpirun -n 1" | tee -a "$S"
    HR=(mpirun --allow-run-as-root -n 1 "$H")
fi
HR_ALT=()
[ -n "${ALT_CARRY:-}" ] && HR_ALT=("${HR[@]:0:${#HR[@]}-1}" "$(realpath "$ALT_CARRY")/htamerge")

# The command of a mode (in CMD), capturing into $2; MODE_alt: with ALT_CARRY.
mode_cmd() {
    local h=("${HR[@]}")
    if [[ $1 == *_alt ]]; then
        [ ${#HR_ALT[@]} -gt 0 ] || { echo "launch_cost.sh: $1 needs ALT_CARRY" >&2; return 1; }
        h=("${HR_ALT[@]}")
    fi
    case ${1%_alt} in
    plain) CMD=("$B") ;;
    capture) CMD=("${h[@]}" -o "$2" "$B") ;;
    kernel) CMD=(env HTAMERGE_CUPTI_KINDS=kernel "${h[@]}" -o "$2" "$B") ;;
    nocupti) CMD=("${h[@]}" -o "$2" --capture nvtx,nccl "$B") ;;
    detached) CMD=("${h[@]}" -o "$2" --cupti-window 300/3600000 "$B") ;;
    sync) CMD=("${h[@]}" -o "$2" --capture all,cupti-sync "$B") ;;
    *) echo "launch_cost.sh: unknown mode $1" >&2; return 1 ;;
    esac
    CMD+=("${ARGS[@]}" --label "$1")
}

sql() { timeout 300 "$H" sql "$1" "$2" --format csv 2>&1 | tail -n +2; }

# check_db MODE ROUND DB OUTPUT: compares the database's GPU records with
# the program's EXPECT line (kernel mode records kernels only).
check_db() {
    local mode=$1 round=$2 db=$3 out=$4 cat key want got verdict line="" short=0
    for pair in kernel:kernels gpu_memset:memsets gpu_memcpy:memcpys; do
        cat=${pair%%:*} key=${pair#*:}
        [ "${mode%_alt}" = kernel ] && [ "$cat" != kernel ] && continue
        want=$(grep -o "^EXPECT .*" "$out" | grep -o "$key=[0-9]*" | cut -d= -f2)
        got=$(sql "$db" "select count(*) from v_slices where category='$cat'")
        verdict=ok
        [ "${want:-x}" = "$got" ] || { verdict=MISMATCH; short=1; }
        line+=" $cat=$got/${want:-?}($verdict)"
    done
    echo "db round=$round mode=$mode records(db/launched):$line" >>"$S"
    # Pool misses are always written; the rest only when something was lost.
    sql "$db" "select s.str || ' = ' || c.value from counters c join strings s on s.id = c.name
               where s.str like 'htamerge/%'" | sed "s/^/    round=$round mode=$mode counter: /" >>"$S"
    if [ "$short" = 1 ]; then
        echo "    counts differ: see the counters above (htamerge/cupti dropped records," \
             "htamerge/ring dropped records, htamerge/ring lost records)" >>"$S"
    fi
}

# The summary: the runs and checks so far, then the tables from RAW.
summarize() {
    cat "$S"
    python3 - "$RAW" <<'PY'
import sys, statistics as st
rows = [dict(f.split("=", 1) for f in line.split() if "=" in f) for line in open(sys.argv[1])]
ops = [o for o in ("kernel", "memset", "memcpy") if any(r["op"] == o for r in rows)]
modes = list(dict.fromkeys(r["mode"] for r in rows))
def med(v):
    return st.median(v) if v else float("nan")
def values(mode, op, field):
    return [float(r[field]) for r in rows if r["mode"] == mode and r["op"] == op]
def per_round(mode, op, field):
    out = {}
    for r in rows:
        if r["mode"] == mode and r["op"] == op:
            out.setdefault(r["round"], []).append(float(r[field]))
    return {k: med(v) for k, v in out.items()}
print("\nns per call; cost = mode minus plain. pooled: median of all repetitions; paired: median over")
print("rounds of (mode's round median - plain's round median); per-round: the round medians.")
print("launch: launch loops / N; batch median: the median batch (without preempted ones); total: to completion.")
for op in ops:
    for field, what in (("launch_ns_per_call", "launch"), ("launch_ns_batch_median", "batch median"),
                        ("total_ns_per_call", "total")):
        print(f"\n### op={op}, {what} ns per call")
        print("| mode | reps | pooled | cost | cost (paired) | per-round |")
        print("|---|---|---|---|---|---|")
        base, bp = per_round("plain", op, field), med(values("plain", op, field))
        for m in modes:
            v = values(m, op, field)
            if not v:
                continue
            rv = per_round(m, op, field)
            paired = [rv[k] - base[k] for k in rv if k in base]
            print(f"| {m} | {len(v)} | {med(v):.1f} | {med(v) - bp:+.1f} | {med(paired):+.1f} | "
                  f"{', '.join('%.1f' % rv[k] for k in sorted(rv, key=int))} |")
PY
}

echo "== launch_cost: $ROUNDS rounds of: $MODES; args: ${ARGS[*]:-(defaults)}" >>"$S"
{ nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv; } >>"$S" 2>&1
for round in $(seq 1 "$ROUNDS"); do
    for mode in $MODES; do
        db=$W/$mode.db
        rm -f "$db"
        mode_cmd "$mode" "$db" || exit 2
        echo "### round $round $mode: ${PIN[*]} ${CMD[*]}" >>"$L"
        t0=$(date +%s.%N)
        timeout 500 "${PIN[@]}" "${CMD[@]}" >"$W/out.txt" 2>&1
        rc=$?
        t1=$(date +%s.%N)
        cat "$W/out.txt" >>"$L"
        echo "round=$round mode=$mode rc=$rc wall_s=$(awk "BEGIN{printf \"%.1f\", $t1 - $t0}")" | tee -a "$L" >>"$S"
        if [ "$rc" != 0 ]; then
            tail -5 "$W/out.txt" | sed 's/^/    /' >>"$S"
            continue
        fi
        grep '^launch_cost ' "$W/out.txt" | sed "s/^/round=$round /" >>"$RAW"
        case ${mode%_alt} in capture | kernel | sync) check_db "$mode" "$round" "$db" "$W/out.txt" ;; esac
        rm -f "$db"
    done
    summarize >"$SUM"
done
cat "$SUM"

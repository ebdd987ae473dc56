#!/bin/bash
# What the default capture (the 2 % cost budget) costs, against the program
# alone and against --capture-all, measured side by side: the modes run
# interleaved, REPS rounds, each a fresh process, on two loops:
#   lstm  PyTorch's examples/word_language_model (2-layer LSTM, manual SGD
#         update, no optimizer object; launch-bound, a few ms a batch), its
#         own "ms/batch" lines, the first interval left out as warm-up;
#   heavy tests/gpu/torch_train.py at a GPU-heavy size (its per-repetition
#         step means after 40 warm-up steps, the first four left out: its
#         steps drift as the GPU warms).
# Also: a 2-rank run of the LSTM (two processes on the GPU, no DDP) whose
# recording windows must hold the same step numbers on both ranks, and an
# on-demand `htamerge capture --steps 40` during a default run.
# Writes OUT/budget.jsonl (one line per run) and the summaries of each
# database (budget_summary.py).
#
# Rounds alternate the modes' order (ABBA).
# Modes: plain, default, all (--capture-all), and two that take htamerge
# apart: floor (no CUPTI, no Python hooks: NVTX, NCCL and the collector)
# and nocupti (floor plus the hooks); and once (CUPTI for the first second
# only, then detached: what an attach leaves behind).
#
# PIN (e.g. "taskset -c 4-11") prefixes every run alike: unpinned, the
# LSTM's plain runs moved 10 % between processes.
#
# KEEP_LOGS=1 keeps every run's output (OUT/logs/LOOP-MODE-REP.log): the
# example's ms/batch per interval shows where in a run a cost sets in.
#
# usage: [MODES="plain default"] [PIN=...] [LSTM_EPOCHS=1] [LOOPS=lstm] [EXTRA=0] [PACK=1] tests/gpu/budget_cost.sh CARRY OUT REPS
#        (CARRY/wlm holds the example; EXTRA=0 skips the two-rank and on-demand runs;
#        PACK=1 leaves OUT as one OUT.tgz, since the device returns at most 8 files)
set -u
exec </dev/null   # programs here must not eat a caller's script from stdin
C=$(realpath "${1:?carry}"); O=$(realpath "${2:?out}"); REPS=${3:?reps}
T=$(dirname "$(realpath "$0")")
W=$(mktemp -d /tmp/hmbudget.XXXX)
. "$T/carry_env.sh"
hm_carry_env "$C" "$W"
mkdir -p "$O"
H=$C/htamerge
R=$O/budget.jsonl
export HTAMERGE_CONTROL_DIR=$W/control
LSTM=(python3 main.py --accel --epochs "${LSTM_EPOCHS:-1}" --log-interval 100 --save "$W/m.pt")
HEAVY=(python3 "$T/torch_train.py" plain --warmup 40 --steps 10 --reps 20 --batch 16 --seq 512 --d 1024 --layers 8)

mean_lstm() {   # mean ms/batch after the first interval
    grep -o 'ms/batch *[0-9.]*' "$1" | awk 'NR > 1 {s += $2; n++} END {if (n) printf "%.4f", s / n}'
}
mean_heavy() {
    grep '^RESULT' "$1" | python3 -c 'import json,sys; r=json.loads(sys.stdin.read()[7:]); s=r["step_ms"][4:]; print("%.4f" % (sum(s) / len(s)))'
}

for rep in $(seq 1 "$REPS"); do
    for loop in ${LOOPS:-lstm heavy}; do
        # even rounds run the modes in reverse (ABBA): what the run before
        # leaves behind (clocks, caches) falls on each mode alike
        modes=$(echo ${MODES:-plain default all} | tr ' ' '\n')
        [ $((rep % 2)) = 0 ] && modes=$(echo "$modes" | tac)
        for mode in $modes; do
            rm -f "$W/c.db"
            case $loop in lstm) prog=("${LSTM[@]}"); cd "$C/wlm" ;; heavy) prog=("${HEAVY[@]}"); cd "$W" ;; esac
            case $mode in
            plain) cmd=("${prog[@]}") ;;
            default) cmd=("$H" -o "$W/c.db" "${prog[@]:1}") ;;
            all) cmd=("$H" -o "$W/c.db" --capture-all "${prog[@]:1}") ;;
            floor) cmd=("$H" -o "$W/c.db" --capture nvtx,nccl,kineto --python-hooks off "${prog[@]:1}") ;;
            nocupti) cmd=("$H" -o "$W/c.db" --capture nvtx,nccl,kineto "${prog[@]:1}") ;;
            once) cmd=("$H" -o "$W/c.db" --cupti-window 1000/3600000 "${prog[@]:1}") ;;
            esac
            [ "$mode" != plain ] && [ "${prog[0]}" = python3 ] && export HTAMERGE_PYTHON=python3
            start=$(date +%s.%N)
            # shellcheck disable=SC2086
            timeout 150 ${PIN:-} "${cmd[@]}" >"$W/out.log" 2>&1
            rc=$?
            wall=$(awk "BEGIN {print $(date +%s.%N) - $start}")
            m=$([ $loop = lstm ] && mean_lstm "$W/out.log" || mean_heavy "$W/out.log")
            plan=$(grep -o 'capture plan [0-9]*: .*' "$W/out.log" | tail -1 | sed 's/"/'"'"'/g')
            echo "{\"rep\": $rep, \"loop\": \"$loop\", \"mode\": \"$mode\", \"rc\": $rc, \"wall_s\": $wall, \"mean_ms\": ${m:-null}, \"plan\": \"$plan\"}" >>"$R"
            [ $rc -eq 0 ] || tail -20 "$W/out.log" >"$O/fail-$loop-$mode-$rep.log"
            [ "${KEEP_LOGS:-0}" = 1 ] && mkdir -p "$O/logs" && cp "$W/out.log" "$O/logs/$loop-$mode-$rep.log"
            if [ "$mode" != plain ] && [ -f "$W/c.db" ]; then
                python3 "$T/budget_summary.py" "$W/c.db" "$loop-$mode-$rep" >>"$O/summaries.jsonl"
            fi
            grep 'capture plan' "$W/out.log" >>"$O/plans-$loop-$mode.log"
        done
    done
done

finish() {
    rm -rf "$W"
    cat "$R"
    if [ "${PACK:-0}" = 1 ]; then
        tar czf "$O.tgz" -C "$(dirname "$O")" "$(basename "$O")" && rm -rf "$O"
    fi
    exit 0
}
[ "${EXTRA:-1}" = 0 ] && finish
# Two ranks: the same steps in every window?
cd "$C/wlm"
export HTAMERGE_PYTHON=python3
mpirun -n 2 --allow-run-as-root --bind-to none -x PATH -x LD_LIBRARY_PATH -x HTAMERGE_PYTHON \
    -x OMPI_ALLOW_RUN_AS_ROOT -x OMPI_ALLOW_RUN_AS_ROOT_CONFIRM "$H" -o "$W/two.db" "${LSTM[@]:1}" >"$O/two.log" 2>&1
python3 "$T/budget_summary.py" "$W/two.db" two-ranks >"$O/two.json"

# On demand: the next 40 steps in full during a default run.
"$H" -o "$W/ondemand.db" "${LSTM[@]:1}" >"$O/ondemand.log" 2>&1 &
J=$!
for _ in $(seq 1 100); do
    "$H" capture --steps 40 >"$O/ondemand_capture.out" 2>&1 && break
    sleep 0.2
done
wait $J
python3 "$T/budget_summary.py" "$W/ondemand.db" ondemand >"$O/ondemand.json"
finish

#!/bin/bash
# htamerge's default capture against itself held quiet, in one process
# (bench/inprocess_ab.py), on the two loops of tests/gpu/budget_cost.sh:
# PyTorch's word_language_model example (launch-bound LSTM, manual SGD) and
# tests/gpu/torch_train.py at a GPU-heavy size. Per loop:
#   default   the budget's windows and the hooks, against quiet
#   hooks     --capture nvtx,nccl,kineto: the hooks alone, against quiet
#   null      the method's own check: nothing switched, labels only
# Each run's AB_RESULT line goes to OUT/ab.jsonl with the run's label; the
# budget_summary.py line of each default run to OUT/summaries.jsonl.
#
# usage: [RUNS="lstm-default lstm-hooks ..."] [LSTM_EPOCHS=3] [PIN=...] tests/gpu/inprocess_ab.sh CARRY OUT
set -u
exec </dev/null
T=$(dirname "$(realpath "$0")")
B=$(dirname "$(dirname "$T")")/bench
. "$T/carry_env.sh"
hm_proof_setup "$1" "$2" hmab
export HTAMERGE_CONTROL_DIR=$W/control HTAMERGE_PYTHON=python3
LSTM=(main.py --accel --epochs "${LSTM_EPOCHS:-3}" --log-interval 100 --save "$W/m.pt")
HEAVY=("$T/torch_train.py" plain --warmup 40 --steps 10 --reps 120 --batch 16 --seq 512 --d 1024 --layers 8)
for run in ${RUNS:-lstm-null lstm-hooks lstm-default heavy-default heavy-hooks lstm-default}; do
    loop=${run%%-*}; kind=${run#*-}
    case $loop in
    lstm) cd "$C/wlm"; prog=("${LSTM[@]}"); block=50; warm=300 ;;
    heavy) cd "$W"; prog=("${HEAVY[@]}"); block=20; warm=60 ;;
    esac
    case $kind in
    default) opts=(); ab=() ;;
    hooks) opts=(--capture nvtx,nccl,kineto); ab=(--hooks-only 1) ;;
    null) opts=(); ab=(--null 1) ;;
    esac
    rm -f "$W/c.db"
    # shellcheck disable=SC2086
    timeout 300 ${PIN:-} "$H" -o "$W/c.db" "${opts[@]}" "$B/inprocess_ab.py" --block $block --warmup $warm "${ab[@]}" \
        -- "${prog[@]}" >"$W/out.log" 2>&1
    rc=$?
    line=$(grep -o 'AB_RESULT .*' "$W/out.log" | tail -1 | cut -c11-)
    echo "{\"run\": \"$run\", \"rc\": $rc, \"ab\": ${line:-null}}" | tee -a "$O/ab.jsonl"
    grep 'capture plan' "$W/out.log" | tail -2 >>"$O/plans.log"
    [ $rc -eq 0 ] || tail -30 "$W/out.log" >"$O/fail-$run.log"
    [ "$kind" = default ] && [ -f "$W/c.db" ] && python3 "$T/budget_summary.py" "$W/c.db" "$run" >>"$O/summaries.jsonl"
done
rm -rf "$W"

#!/bin/bash
# Zero-change capture on a real, unmodified single-GPU training loop that
# was not written for htamerge: karpathy/nanoGPT (GPT-2 small, bf16
# autocast, AdamW, synthetic tokens), run on the GPU machine.
#
#   train_eager, train_compiled: `mpirun -n 1 htamerge -o X.db train.py`
#       (nanoGPT sees RANK and runs DDP over NCCL, world 1; gradient
#       accumulation 2), torch.compile off and on. The databases come back
#       for tests/fixtures (steps from the hooks, phases' GPU time).
#   profiler_plain, profiler_hm: bench.py --profile=True (its own
#       torch.profiler, tensorboard_trace_handler('./bench_log')), without
#       and under htamerge: the kernel count of the script's own trace.
#   cost: bench.py's "time per iteration" (10 burn-in steps, then 20),
#       plain and under htamerge, interleaved ABAB, eager and compiled.
#
# usage: tests/gpu/nanogpt_proof.sh CARRY NANOGPT OUT [SECTIONS]
#   CARRY: htamerge, libhtamerge-inject.so, libhtamerge-py.so, python/ and
#          lib/ (see tests/gpu/prepare_carry.sh); NANOGPT: a checkout of
#          https://github.com/karpathy/nanoGPT (model.py, train.py, bench.py,
#          configurator.py); SECTIONS: "train profiler cost" by default, also
#          "cost_long" (train.py for LONG_ITERS=400 iterations, plain and hm),
#          "handover" (the profiler run with HTAMERGE_INJECT_DEBUG=1) and
#          "window" (--cupti-window 1000/2000: CUPTI's cost in one process).
#   TRAIN_MODES (eager compiled), TRAIN_EXTRA (more train.py options, e.g.
#   --max_iters=8 for a small fixture), ROUNDS and EAGER_ONLY (cost) narrow
#   the runs.
# Output: OUT/results.txt, OUT/*.db.gz, OUT/trace_*.json.gz
set -u
C=$(realpath "${1:?carry folder}")
N=$(realpath "${2:?nanoGPT folder}")
O=$(realpath "${3:?out folder}")
SECTIONS=${4:-train profiler cost}
S=$(dirname "$(realpath "$0")")
mkdir -p "$O"
R=$O/results.txt
. "$S/carry_env.sh"
W=$(mktemp -d /tmp/hmng.XXXX)
hm_carry_env "$C" "$W"
H=$C/htamerge
want() { [[ " $SECTIONS " == *" $1 "* ]]; }
say() { echo "$*" | tee -a "$R"; }
q() { echo "sql> $2" >>"$R"; timeout 60 "$H" sql "$1" "$2" >>"$R" 2>&1; }
MPI=(timeout -k 5 400 mpirun -n 1 --bind-to none)

cp "$N"/model.py "$N"/train.py "$N"/bench.py "$N"/configurator.py "$W/"
cd "$W" || exit 1
python3 - <<'EOF'
import numpy as np, os
os.makedirs("data/synth", exist_ok=True)
rng = np.random.default_rng(0)
for split in ("train", "val"):
    rng.integers(0, 50257, 1 << 21, dtype=np.uint16).tofile("data/synth/%s.bin" % split)
EOF
{ nvidia-smi -L; python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)';
  ldd "$H" | grep 'not found'; } >>"$R" 2>&1

TRAIN=(train.py --dataset=synth --batch_size=12 --block_size=1024 --gradient_accumulation_steps=2
       --max_iters=25 --lr_decay_iters=25 --warmup_iters=5 --eval_interval=100000 --eval_iters=2
       --log_interval=1 --always_save_checkpoint=False --out_dir="$W/out")
if want train; then
    for mode in ${TRAIN_MODES:-eager compiled}; do
        comp=False; [ $mode = compiled ] && comp=True
        t0=$(date +%s)
        # shellcheck disable=SC2086
        "${MPI[@]}" "$H" -o "train_$mode.db" "${TRAIN[@]}" --compile=$comp ${TRAIN_EXTRA:-} >"train_$mode.log" 2>&1
        say "== train_$mode rc=$? wall_s=$(($(date +%s) - t0))"
        grep -E '^iter (5|10|20):|htamerge|Error|error' "train_$mode.log" | head -20 >>"$R"
        q "train_$mode.db" "SELECT source, count(*), round(avg(dur) / 1e6, 2), round(avg(gpu_busy_us) / 1e3, 2) FROM steps GROUP BY 1"
        timeout 60 "$H" report "train_$mode.db" steps 2>&1 | head -12 >>"$R"
        timeout 60 "$H" report "train_$mode.db" steps --format csv 2>&1 | grep -A40 '^rank,step,step_ms' >>"$R"
        timeout 60 "$H" report "train_$mode.db" temporal 2>&1 >>"$R"
        gzip -c "train_$mode.db" >"$O/train_$mode.db.gz"
    done
fi

BENCH=(bench.py --real_data=False --batch_size=12)
count_kernels() {   # FOLDER: kernels in each trace file of the script's own profiler
    python3 - "$1" <<'EOF'
import glob, json, sys
for f in sorted(glob.glob(sys.argv[1] + "/*.json")):
    ev = json.load(open(f))["traceEvents"]
    k = sum(1 for e in ev if e.get("cat") == "kernel")
    print("kernels", k, "events", len(ev), f)
EOF
}
if want profiler; then
    for how in plain hm; do
        rm -rf bench_log
        t0=$(date +%s)
        if [ $how = plain ]; then
            timeout -k 5 300 python3 "${BENCH[@]}" --profile=True --compile=False >"profiler_$how.log" 2>&1
        else
            "${MPI[@]}" "$H" -o profiler.db "${BENCH[@]}" --profile=True --compile=False >"profiler_$how.log" 2>&1
        fi
        say "== profiler_$how rc=$? wall_s=$(($(date +%s) - t0)) $(count_kernels bench_log | tr '\n' ' ')"
        grep htamerge "profiler_$how.log" | head -5 >>"$R"
        f=$(ls bench_log/*.json 2>/dev/null | head -1)
        [ -n "$f" ] && gzip -c "$f" >"$O/trace_$how.json.gz"
    done
    q profiler.db "SELECT rank, path, slices FROM files"
    q profiler.db "SELECT source, count(*) FROM steps GROUP BY 1"
    q profiler.db "SELECT c.name, count(*) FROM slices s JOIN categories c ON c.id = s.cat GROUP BY 1"
    q profiler.db "SELECT n.str, count(*), min(c.value), max(c.value) FROM counters c JOIN strings n ON n.id = c.name WHERE n.str LIKE 'htamerge/cupti%' GROUP BY 1"
    timeout 60 "$H" report profiler.db temporal 2>&1 >>"$R"
    gzip -c profiler.db >"$O/profiler.db.gz"
fi

if want handover; then   # the profiler run again, every hand-over step on stderr
    rm -rf bench_log
    "${MPI[@]}" -x HTAMERGE_INJECT_DEBUG=1 "$H" -o handover.db "${BENCH[@]}" --profile=True --compile=False \
        >handover.log 2>&1
    say "== handover rc=$? $(count_kernels bench_log | tr '\n' ' ')"
    grep -E 'python hooks|CUPTI|cupti' handover.log | head -30 >>"$R"
    q handover.db "SELECT n.str, c.ts, c.value FROM counters c JOIN strings n ON n.id = c.name WHERE n.str LIKE 'htamerge/cupti%' ORDER BY 2"
    q handover.db "SELECT rank, path, slices FROM files"
    timeout 60 "$H" report handover.db steps 2>&1 | head -30 >>"$R"
    timeout 60 "$H" report handover.db temporal 2>&1 >>"$R"
    gzip -c handover.db >"$O/handover.db.gz"
fi

if want window; then   # CUPTI's cost inside one process: steps attached against steps detached
    t0=$(date +%s)
    "${MPI[@]}" "$H" -o window.db --cupti-window 1000/2000 "${TRAIN[@]}" --compile=False --max_iters=160 \
        --lr_decay_iters=160 >window.log 2>&1
    say "== window rc=$? wall_s=$(($(date +%s) - t0))"
    gzip -c window.db >"$O/window.db.gz"
fi

if want cost; then
    for mode in eager compiled; do
        comp=False; [ $mode = compiled ] && comp=True
        rounds=${ROUNDS:-1 2}; [ $mode = compiled ] && rounds=1
        [ -n "${EAGER_ONLY:-}" ] && [ $mode = compiled ] && continue
        for round in $rounds; do
            for how in plain hm; do
                if [ $how = plain ]; then
                    timeout -k 5 300 python3 "${BENCH[@]}" --compile=$comp >"cost.log" 2>&1
                else
                    "${MPI[@]}" "$H" -o "cost_$mode$round.db" "${BENCH[@]}" --compile=$comp >"cost.log" 2>&1
                fi
                say "RESULT cost $mode round $round $how rc=$? $(grep 'time per iteration' cost.log)"
            done
        done
    done
fi
# cost_long: train.py for LONG_ITERS iterations (no gradient accumulation,
# ~33 ms each), plain and under htamerge, interleaved ABAB: the mean
# iteration time after the first 100 (bench.py's 20 timed steps fall inside
# the budget's start-up, before its windows settle). Both under mpirun -n 1
# with torch's launcher variables set, so both run DDP at world 1 as
# htamerge's run does.
if want cost_long; then
    LONG=(train.py --dataset=synth --batch_size=12 --block_size=1024 --gradient_accumulation_steps=1
          --max_iters=${LONG_ITERS:-400} --lr_decay_iters=${LONG_ITERS:-400} --warmup_iters=5
          --eval_interval=100000 --eval_iters=2 --log_interval=1 --always_save_checkpoint=False
          --out_dir="$W/out")
    mean_iter() { grep -o '^iter [0-9]*: .*time [0-9.]*ms' "$1" |
        awk '{n = $2 + 0; t = $NF; sub("ms", "", t)} n >= 100 {s += t; c++} END {if (c) printf "%.3f", s / c}'; }
    for mode in ${LONG_MODES:-eager compiled}; do
        comp=False; [ $mode = compiled ] && comp=True
        rounds=${ROUNDS:-1 2}; [ $mode = compiled ] && rounds=${COMPILED_ROUNDS:-1}
        for round in $rounds; do
            # a how is "plain", "hm" or "hm,ARG,ARG..." (htamerge's options for that run)
            v=0
            for how in ${LONG_HOWS:-plain hm}; do
                v=$((v + 1)); db=long_$mode${round}_$v.db
                if [ $how = plain ]; then
                    "${MPI[@]}" -x RANK=0 -x LOCAL_RANK=0 -x WORLD_SIZE=1 -x MASTER_ADDR=127.0.0.1 \
                        -x MASTER_PORT=29533 python3 "${LONG[@]}" --compile=$comp >long.log 2>&1
                else
                    a=${how#hm}; IFS=, read -r -a hm_args <<<"${a#,}"
                    # shellcheck disable=SC2086
                    "${MPI[@]}" "$H" -o "$db" ${LONG_HM_ARGS:-} "${hm_args[@]}" "${LONG[@]}" --compile=$comp >long.log 2>&1
                fi
                say "RESULT cost_long $mode round $round $how rc=$? mean_iter_ms $(mean_iter long.log) $(grep 'capture plan' long.log | tail -1)"
                # the iteration times in groups of 25: where a change sets in
                say "SERIES $mode $round $how $(grep -o '^iter [0-9]*: .*time [0-9.]*ms' long.log |
                    awk '{t = $NF; sub("ms", "", t); s += t; c++} c == 25 {printf "%.1f ", s / c; s = c = 0}')"
                # where in the budget's cycle the steps are slow
                [ $how = plain ] || python3 "$S/budget_summary.py" "$db" "$db" |
                    python3 -c 'import json,sys; d=json.load(sys.stdin); print("CYCLE", d["label"], {k: d[k] for k in ("seconds", "slices", "records_per_s", "db_mb_per_min")}, {r: (v["windows"], v["step_ms_by_position"], v["excess_from_10"], v["excess_from_100"]) for r, v in d["ranks"].items()})' >>"$R" 2>&1
                # records that a detach returned without times: left out, counted
                [ $how = plain ] || say "INCOMPLETE $db $(python3 -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); print("min_ts", c.execute("SELECT min(ts) FROM slices").fetchone()[0], "counter", c.execute("SELECT max(c.value) FROM counters c JOIN strings n ON n.id = c.name WHERE n.str = ?", ("htamerge/cupti incomplete records",)).fetchone()[0])' "$db")"
            done
        done
    done
fi
say "done"

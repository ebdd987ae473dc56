#!/bin/bash
# What live capture costs, measured inside one process (issue 6, item 6):
# under --cupti-window ON/PERIOD CUPTI is attached for ON ms of every
# PERIOD ms and detached in between, so the train_steps of one process,
# with one warm-up, split into attached and detached ones
# (tests/gpu/window_check.sh). Ratio = attached / detached step time (the
# cost of continuous capture); whole run = all steps / detached steps (the
# cost of windowed capture); steps of the first 3 s after the first window
# (start-up, GPU clocks rising) are left out. torch.profiler's cost comes
# from torch_train.py ab_profiler (blocks with it on and off, one process).
#
# usage: tests/gpu/inprocess_cost.sh CARRY OUT [ROUNDS=1]
# Output: OUT/inprocess_cost.txt (the table), OUT/window_steps-*.csv.
set -u
C=${1:?carry}; O=$(realpath "${2:?out}"); ROUNDS=${3:-1}
T=$(dirname "$(realpath "$0")")
mkdir -p "$O"
LB="--warmup 100 --steps 600 --reps 1"
GH="--batch 64 --seq 512 --d 1024 --layers 6 --warmup 20 --steps 200 --reps 1"
for r in $(seq 1 "$ROUNDS"); do
    for cfg in "lb default all 1000/2000" "lb launches all,cupti-launches 1000/2000" "lb windowed all 500/5000" \
               "gh default all 1000/2000" "gh launches all,cupti-launches 1000/2000" "gh windowed all 500/5000"; do
        set -- $cfg
        args=$LB; [ "$1" = gh ] && args=$GH
        # shellcheck disable=SC2086
        CAPTURE=$3 LABEL=$1_$2_$r bash "$T/window_check.sh" "$C" "$O" "$4" $args >/dev/null 2>&1
    done
    MODES=ab_profiler bash "$T/overhead.sh" "$C" "$O" lb_$r 1 --warmup 30 --steps 20 --blocks 10 >/dev/null 2>&1
    # shellcheck disable=SC2086
    MODES=ab_profiler bash "$T/overhead.sh" "$C" "$O" gh_$r 1 ${GH%--steps*} --steps 6 --blocks 8 >/dev/null 2>&1
done
python3 - "$O" <<'PY' | tee "$O/inprocess_cost.txt"
import csv, glob, json, os, statistics as st, sys
o = sys.argv[1]
print("| step | capture | round | steps attached / detached | attached / detached: mean | median | whole run |")
print("|---|---|---|---|---|---|---|")
for f in sorted(glob.glob(o + "/window_steps-*.csv")):
    label = os.path.basename(f)[len("window_steps-"):-4]
    rows = [r for r in csv.DictReader(open(f)) if float(r["start_ms"]) > 3000]
    att = [float(r["dur_ms"]) for r in rows if r["attached"] == "1"]
    det = [float(r["dur_ms"]) for r in rows if r["attached"] == "0"]
    if not att or not det:
        print(f"| {label} | no steps | | | | | |")
        continue
    step, mode, rnd = label.rsplit("_", 2) if label.count("_") >= 2 else (label, "", "")
    whole = st.mean(float(r["dur_ms"]) for r in rows) / st.mean(det)
    print(f"| {step} | {mode} | {rnd} | {len(att)} / {len(det)} | {st.mean(att) / st.mean(det):.3f} | "
          f"{st.median(att) / st.median(det):.3f} | {whole:.4f} |")
for f in sorted(glob.glob(o + "/overhead-*.jsonl")):
    for line in open(f):
        d = json.loads(line)
        if "ratio_mean" in d:
            print(f"| {os.path.basename(f)[9:-6]} | torch.profiler (A/B blocks) | | | {d['ratio_mean']:.3f} | {d['ratio_median']:.3f} | |")
PY

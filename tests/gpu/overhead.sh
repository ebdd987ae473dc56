#!/bin/bash
# Overhead of live capture on the PyTorch step (issue 6, item 6), measured
# side by side: the modes below run interleaved, REPS rounds, each a fresh
# process with the same warm-up and step count; the table gives each mode's
# mean step time and its ratio to the uninstrumented run of the same round.
#
# usage: tests/gpu/overhead.sh CARRY OUT LABEL REPS [torch_train.py args...]
# Modes: plain, capture (the default: CUPTI kernels/copies/memsets, launches
# rebuilt from queued times, NVTX, NCCL), capture_launches (--capture
# all,cupti-launches: the launch calls' API records too), capture_nocupti (--capture nvtx,nccl,kineto),
# capture_noapi (CUPTI activity without the API records), capture_kernelonly
# (CUPTI kernel records alone), kinds=LIST (HTAMERGE_CUPTI_KINDS=LIST), profiler
# (torch.profiler, CPU+CUDA), ab_profiler (torch.profiler on and off in blocks
# of one process), ab_plain / ab_capture / ab_sync (torch_train.py
# ab: blocks with the CUDA profiler range off and on in one process, plain or
# under `--capture all,cupti-range` [,cupti-sync | ,cupti-lean]: CUPTI's
# cost without between-process noise), capture_lean (--capture all,cupti-lean),
# window=ON/PERIOD and lean_window=ON/PERIOD (--cupti-window, default or lean
# capture). MODES="plain capture" runs only those.
set -u
C=$(realpath "${1:?carry}"); O=$(realpath "${2:?out}"); LABEL=${3:?label}; REPS=${4:?reps}; shift 4
T=$(dirname "$(realpath "$0")")
W=$(mktemp -d /tmp/hmover.XXXX)
. "$T/carry_env.sh"
hm_carry_env "$C" "$W"
mkdir -p "$O"
H=$C/htamerge
P=$T/torch_train.py
R=$O/overhead-$LABEL.jsonl
for rep in $(seq 1 "$REPS"); do
    for mode in ${MODES:-plain capture capture_nocupti capture_noapi profiler}; do
        case $mode in
        plain) cmd=(python3 "$P" plain "$@") ;;
        profiler) cmd=(python3 "$P" profiler "$@") ;;
        capture) cmd=("$H" -o "$W/c.db" "$P" plain "$@") ;;
        capture_launches) cmd=("$H" -o "$W/c.db" --capture all,cupti-launches "$P" plain "$@") ;;
        capture_nocupti) cmd=("$H" -o "$W/c.db" --capture kineto,nvtx,nccl "$P" plain "$@") ;;
        capture_noapi) cmd=(env HTAMERGE_CUPTI_KINDS=kernel,memcpy,memset,sync "$H" -o "$W/c.db" "$P" plain "$@") ;;
        ab_plain) cmd=(python3 "$P" ab "$@") ;;
        ab_profiler) cmd=(python3 "$P" ab_profiler "$@") ;;
        ab_capture) cmd=("$H" -o "$W/c.db" --capture all,cupti-range "$P" ab "$@") ;;
        ab_lean) cmd=("$H" -o "$W/c.db" --capture all,cupti-range,cupti-lean "$P" ab "$@") ;;
        capture_lean) cmd=("$H" -o "$W/c.db" --capture all,cupti-lean "$P" plain "$@") ;;
        window=*) cmd=("$H" -o "$W/c.db" --cupti-window "${mode#window=}" "$P" plain "$@") ;;
        lean_window=*) cmd=("$H" -o "$W/c.db" --capture all,cupti-lean --cupti-window "${mode#lean_window=}" "$P" plain "$@") ;;
        ab_sync) cmd=("$H" -o "$W/c.db" --capture all,cupti-range,cupti-sync "$P" ab "$@") ;;
        capture_kernelonly) cmd=(env HTAMERGE_CUPTI_KINDS=kernel "$H" -o "$W/c.db" "$P" plain "$@") ;;
        kinds=*) cmd=(env HTAMERGE_CUPTI_KINDS="${mode#kinds=}" "$H" -o "$W/c.db" "$P" plain "$@") ;;
        esac
        rm -f "$W/c.db"
        line=$(timeout 300 "${cmd[@]}" 2>"$W/err.txt" | grep '^RESULT ' | cut -c8-)
        if [ -z "$line" ]; then echo "{\"mode\":\"$mode\",\"error\":true}" >>"$R"; tail -3 "$W/err.txt" >&2; continue; fi
        [ "$mode" = ab_capture ] && cp "$W/c.db" "$O/ab_capture-$LABEL.db" 2>/dev/null
        echo "$line" | python3 -c "import json,sys; d=json.load(sys.stdin); d['rep']=$rep; d['mode']='$mode'; print(json.dumps(d))" >>"$R"
    done
done
python3 - "$R" "$LABEL" <<'PY'
import json, sys, statistics as st
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
modes = ["plain", "capture", "capture_launches", "capture_lean", "capture_nocupti", "capture_noapi", "capture_kernelonly", "profiler"]
modes += sorted({r["mode"] for r in rows if r.get("mode", "").startswith(("kinds=", "window=", "lean_window="))})
by = {m: [r for r in rows if r.get("mode") == m and "mean_step_ms" in r] for m in modes}
base = {r["rep"]: r["mean_step_ms"] for r in by["plain"]}
print(f"### {sys.argv[2]}")
print("| mode | mean step ms per round | mean | ratio to plain (per-round mean) |")
print("|---|---|---|---|")
for m in modes:
    v = by[m]
    if not v: continue
    ratios = [r["mean_step_ms"] / base[r["rep"]] for r in v if r["rep"] in base]
    print(f"| {m} | {', '.join('%.2f' % r['mean_step_ms'] for r in v)} | {st.mean(r['mean_step_ms'] for r in v):.2f} | {st.mean(ratios):.4f} |")
ab = [r for r in rows if r.get("mode", "").startswith("ab_") and "ratio_mean" in r]
if ab:
    print()
    print("| in-process A/B (mode) | round | off ms (mean) | on ms (mean) | on/off per pair: mean | median |")
    print("|---|---|---|---|---|---|")
    for r in ab:
        print(f"| {r['mode']} | {r['rep']} | {r['mean_off_ms']:.2f} | {r['mean_step_ms']:.2f} | {r['ratio_mean']:.4f} | {r['ratio_median']:.4f} |")
    for m in sorted({r["mode"] for r in ab}):
        v = [r["ratio_mean"] for r in ab if r["mode"] == m]
        print(f"| {m}, all rounds | | | | {st.mean(v):.4f} | |")
PY

#!/usr/bin/env bash
# One step per iteration on unannotated loops that are not one
# optimizer.step() per backward (issue 22, item 3), run with Debian's torch
# under `mpirun -n 1 htamerge`: gradient accumulation (4 backwards per
# update: 12 steps, not 48), two optimizers (20 steps, not 40), and a
# manual SGD update with no optimizer object (20 steps, from the hooks: a
# forward after a backward starts a step when no optimizer exists); the
# manual loop again ending in os._exit, which skips atexit: the records the
# hooks batch must arrive all the same (20 steps). And report summary's
# python_hooks: what the hooks cost a step by their own clock.
# Skips (77) when $HTAMERGE_PYTHON (default /usr/bin/python3) has no torch.
set -u
. "$(dirname "$0")/../lib.sh"
H=${HTAMERGE:?}
export HTAMERGE_PYTHON=${HTAMERGE_PYTHON:-/usr/bin/python3}
SRC=${HM_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
"$HTAMERGE_PYTHON" -c 'import torch' >/dev/null 2>&1 || skip "$HTAMERGE_PYTHON has no torch"
mpi_env
export OMP_NUM_THREADS=1
export ASAN_OPTIONS=${ASAN_OPTIONS:-}:detect_leaks=0
hm_tmpdir step_patterns

for case in accum:12:hooks twoopt:20:hooks manual:20:hooks manual_os_exit:20:hooks; do
    IFS=: read -r mode want source <<<"$case"
    mkdir -p "$T/$mode" && cd "$T/$mode" || exit 1
    case $mode in *_os_exit) export EXIT=os ;; *) export EXIT= ;; esac
    MODE=${mode%_os_exit} run_mpi 240 -n 1 --bind-to none -x MODE -x EXIT -x OMP_NUM_THREADS "$H" -o "$mode.db" \
        "$SRC/tests/integration/py/step_patterns.py" >"$mode.log" 2>&1 || fail "$mode: the run failed: $(tail -3 "$mode.log")"
    got=$(sql1 "$mode.db" "SELECT count(*) || ' ' || group_concat(DISTINCT source) FROM steps")
    [ "$got" = "$want $source" ] || fail "$mode: steps '$got', want '$want $source'"
done
# What the hooks cost by their own clock, published after 8 steps, is in
# report summary (python_hooks): some microseconds a step, a share of it.
"$H" report "$T/manual/manual.db" summary --format json > "$T/summary.json" || fail "report summary"
python3 -c 'import json, sys
rows = json.load(open(sys.argv[1])).get("python_hooks", [])
assert len(rows) == 1 and rows[0]["rank"] == 0, rows
r = rows[0]
assert 0 < r["hooks_us_per_step"] < r["step_ms"] * 1000 and 0 < r["share_pct"] < 100, r' "$T/summary.json" ||
    fail "python_hooks in report summary: $(head -c 400 "$T/summary.json")"
finish

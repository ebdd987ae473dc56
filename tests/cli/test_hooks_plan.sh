#!/usr/bin/env bash
# The Python hooks' side of a capture plan (tests/tools/hooks_plan_check.py):
# the CUPTI word at each step boundary under windows of steps, the A/B step
# medians without the steps that switch, and a requested capture forcing
# CUPTI on under a plan in time; then the same windows through the C step
# path (_htamerge_steps), as a loop drives it. Runs without torch or a GPU: the GPU path
# that CI cannot run live. Skips (77) without python3.
set -u
SRC=${HM_SOURCE_DIR:?}
P=${HTAMERGE_PYTHON:-/usr/bin/python3}
command -v "$P" >/dev/null || { echo "SKIP: no $P"; exit 77; }
LIB=$(dirname "${HTAMERGE:?}")/libhtamerge-py.so
[ -f "$LIB" ] || { echo "FAIL: $LIB not built"; exit 1; }
STEPS=$(dirname "$HTAMERGE")/python/_htamerge_steps.abi3.so
[ -f "$STEPS" ] || { echo "FAIL: $STEPS not built"; exit 1; }
out=$("$P" "$SRC/tests/tools/hooks_plan_check.py" "$SRC/collector/sources/python" "$LIB" "$STEPS" 2>&1)
rc=$?
[ $rc -eq 0 ] && [ "$out" = ok ] || { echo "FAIL: $out"; exit 1; }
echo ok

#!/usr/bin/env bash
# The Python hooks' GPU memory samples (issue 19, live capture without
# torch.profiler's profile_memory), on real PyTorch without a GPU: the
# script tests/integration/py/memory_fake_cuda.py replaces torch.cuda's
# memory functions by a ledger with a known schedule (peaks: forward
# base + 300 MiB, backward base + 500 MiB), runs 5 plain steps under
# `htamerge -o`, and `report memory` must give the first step's phase peaks exactly,
# the run's peak in the first step's backward, reserved 2 GiB, and counters on
# device 0 only; HTAMERGE_MEMORY_EVERY thins the sampled steps; with CUDA
# "not initialised" the hooks sample nothing.
# Skips (77) when $HTAMERGE_PYTHON (default /usr/bin/python3) has no torch.
set -u
. "$(dirname "$0")/../lib.sh"
H=${HTAMERGE:?}
SRC=${HM_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
torch_python
hm_tmpdir memhooks
cd "$T" || exit 1
MIB=1048576

timeout -k 5 120 "$H" -o mem.db "$P" "$SRC/tests/integration/py/memory_fake_cuda.py" 5 > mem.log 2>&1 ||
    { fail "run: exit $?"; tail -20 mem.log >&2; }
grep -q "python hooks disabled" mem.log && fail "$(grep -m1 'python hooks disabled' mem.log)"
"$H" report mem.db memory --format json > mem.json || fail "report memory"
"$P" - mem.json "$MIB" <<'PY' || fail "memory from the hooks: $(head -c 600 mem.json)"
import json, sys
d, mib = json.load(open(sys.argv[1])), int(sys.argv[2])
base = 1000 * mib
ph = {(s["step"], s["peak_phase"]): s for s in d["steps"]}
steps = {s["step"]: s for s in d["steps"] if s["device"] == 0}
assert sorted(steps) == [1, 2, 3, 4, 5], steps
# The first step set both new peaks: forward's, then backward's.
assert steps[1]["peak_allocated_bytes"] == base + 500 * mib and steps[1]["peak_phase"] == "backward", steps[1]
r = [x for x in d["ranks"] if x["device"] == 0]
assert len(r) == 1 and r[0]["peak_allocated_bytes"] == base + 500 * mib and r[0]["peak_step"] == 1, r
assert r[0]["peak_phase"] == "backward" and r[0]["peak_reserved_bytes"] == 2048 * mib, r
assert {x["device"] for x in d["ranks"]} == {0}, d["ranks"]
h = d["highest"][0]
assert h["rank"] == 0 and h["peak_allocated_bytes"] == base + 500 * mib, h
PY
# The first step's forward: base + 300 MiB.
[ "$(sql1 mem.db "SELECT allocated_bytes FROM memory_peaks WHERE step = 1 AND phase = 'forward'")" = $(( 1300 * MIB )) ] ||
    fail "step 1 forward peak: $(sql1 mem.db "SELECT allocated_bytes FROM memory_peaks WHERE step = 1 AND phase = 'forward'")"
# Later steps set no new peak: the boundaries' levels (forward ends at base + 100 MiB).
[ "$(sql1 mem.db "SELECT max(allocated_bytes) FROM memory_peaks WHERE step = 3")" = $(( 1100 * MIB )) ] ||
    fail "step 3 peak: $(sql1 mem.db "SELECT max(allocated_bytes) FROM memory_peaks WHERE step = 3")"

# One step in N after the first N: HTAMERGE_MEMORY_EVERY=2 over 6 steps
# samples the hooks' steps 0, 1, 2 and 4 (the table's 1, 2, 3, 5); 0: none.
HTAMERGE_MEMORY_EVERY=2 HTAMERGE_MEMORY_GAP_MS=0 timeout -k 5 120 "$H" -o every.db "$P" "$SRC/tests/integration/py/memory_fake_cuda.py" 6 \
    > every.log 2>&1 || fail "HTAMERGE_MEMORY_EVERY=2 run: exit $?"
got=$(sql1 every.db "SELECT group_concat(step, ' ') FROM (SELECT DISTINCT step FROM memory_peaks
                     WHERE step IS NOT NULL AND phase <> 'other' ORDER BY step)")
[ "$got" = "1 2 3 5" ] || fail "HTAMERGE_MEMORY_EVERY=2: steps with memory samples: $got, want 1 2 3 5"
# Sampled steps at least HTAMERGE_MEMORY_GAP_MS apart: with a gap longer
# than the run, only the first EVERY steps.
HTAMERGE_MEMORY_EVERY=2 HTAMERGE_MEMORY_GAP_MS=600000 timeout -k 5 120 "$H" -o gap.db "$P" \
    "$SRC/tests/integration/py/memory_fake_cuda.py" 6 > gap.log 2>&1 || fail "HTAMERGE_MEMORY_GAP_MS run: exit $?"
got=$(sql1 gap.db "SELECT group_concat(step, ' ') FROM (SELECT DISTINCT step FROM memory_peaks
                   WHERE step IS NOT NULL AND phase <> 'other' ORDER BY step)")
[ "$got" = "1 2" ] || fail "HTAMERGE_MEMORY_GAP_MS=600000: steps with memory samples: $got, want 1 2"
HTAMERGE_MEMORY_EVERY=0 timeout -k 5 120 "$H" -o never.db "$P" "$SRC/tests/integration/py/memory_fake_cuda.py" 3 \
    > never.log 2>&1 || fail "HTAMERGE_MEMORY_EVERY=0 run: exit $?"
[ "$(sql1 never.db "SELECT count(*) FROM counters")" = 0 ] || fail "HTAMERGE_MEMORY_EVERY=0 still sampled"

CUDA_UNINIT=1 timeout -k 5 120 "$H" -o none.db "$P" "$SRC/tests/integration/py/memory_fake_cuda.py" 3 > none.log 2>&1 ||
    fail "run without CUDA initialised: exit $?"
[ "$(sql1 none.db "SELECT count(*) FROM counters")" = 0 ] || fail "memory sampled before CUDA was initialised"
[ "$(sql1 none.db "SELECT count(*) FROM slices s JOIN strings n ON n.id = s.name WHERE n.str = 'step'")" = 3 ] ||
    fail "steps not marked without CUDA"

finish "memory hooks: ok"

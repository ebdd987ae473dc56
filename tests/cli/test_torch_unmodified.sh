#!/usr/bin/env bash
# An unmodified training script on the GPU (issue 17): karpathy/nanoGPT
# (GPT-2 small, bf16, AdamW, gradient accumulation 2, DDP over NCCL with one
# rank) run on an H200 by tests/gpu/nanogpt_proof.sh; its databases are
# fixtures (tests/fixtures/gpu/README.md), read here without a GPU.
#   nanogpt_eager:    `mpirun -n 1 htamerge train.py`, 9 iterations: steps
#                     from the Python hooks, forward / backward / optimizer
#                     with GPU time summing to the step's GPU busy time
#                     within 5 %, the analysis window over the steps
#                     (warm-up and last step left out), never the start-up;
#   nanogpt_compiled: the same with torch.compile (cut to steps 2..9: the
#                     first holds 20 s of compilation and autotuning);
#   nanogpt_profiler: bench.py with its own torch.profiler (wait 5, warm-up
#                     5, active 5): CUPTI handed to the profiler for its
#                     session, the trace's 3 055 kernels (the count without
#                     htamerge, nanogpt_results.txt) in the profiled steps,
#                     each kernel stored once, live kernels elsewhere.
set -u
. "$(dirname "$0")/../lib.sh"
H=${HTAMERGE:?}
T=$(hm_mktemp cli_torch_unmodified)
trap 'rm -rf "$T"' EXIT
command -v python3 >/dev/null || skip "python3 is not installed"
gpu_fixtures "$T" nanogpt_eager nanogpt_compiled nanogpt_profiler

sql() { fixture_sql "$T/$1" "$2" "$3"; }
# check FILE PYTHON-EXPR: d = FILE as JSON.
check() {
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if eval(sys.argv[2]) else 1)' \
        "$1" "$2" 2>/dev/null || fail "$(basename "$1"): $2 ($(head -c 300 "$1" | tr '\n\t' '  '))"
}
PHASES="SELECT n.str, count(*) FROM slices s JOIN strings n ON n.id = s.name JOIN categories c ON c.id = s.cat
        WHERE c.name = 'nvtx' AND s.args LIKE '{\"domain\":\"htamerge\"%'
        AND n.str IN ('step', 'forward', 'backward', 'optimizer') GROUP BY 1 ORDER BY 1"
# Steps whose three phases' GPU time is off the step's GPU busy time by
# more than 5 %, or with a phase that launched nothing; past the warm-up
# (whose forward holds the script's first evaluation), a backward that
# costs the GPU less than its forward.
OFF="SELECT count(*) FROM step_breakdown b JOIN steps s ON s.rank = b.rank AND s.number = b.step
     WHERE abs((b.forward_gpu_ns + b.backward_gpu_ns + b.optimizer_gpu_ns) / 1e3 - s.gpu_busy_us) > 0.05 * s.gpu_busy_us
        OR b.forward_gpu_ns <= 0 OR b.backward_gpu_ns <= 0 OR b.optimizer_gpu_ns <= 0
        OR (s.number > 1 AND b.backward_gpu_ns <= b.forward_gpu_ns)"

# ---- eager: 9 iterations, 2 micro-batches each ----
sql nanogpt_eager "9|hooks|1|9" "SELECT count(*), min(source), min(number), max(number) FROM steps"
sql nanogpt_eager "1|9" "SELECT min(number), max(number) FROM steps WHERE dropped = 1"
sql nanogpt_eager "2" "SELECT count(*) FROM steps WHERE dropped = 1"
sql nanogpt_eager "backward|18
forward|18
optimizer|9
step|9" "$PHASES"
sql nanogpt_eager "9|0" "SELECT count(*), ($OFF) FROM step_breakdown"
"$H" report "$T/nanogpt_eager.db" temporal --format json > "$T/eager.temporal.json" || fail "report temporal"
check "$T/eager.temporal.json" 'd["window"] == "steps 2..8 (hooks)"'
# Steps of ~70 ms with ~63 ms of GPU work: idle near 10 %, not the 80 %+
# of a window that held the start-up.
check "$T/eager.temporal.json" '0 < d["ranks"][0]["idle_pct"] < 20'
"$H" report "$T/nanogpt_eager.db" temporal --all-steps --format json > "$T/eager.all.json" || fail "temporal --all-steps"
check "$T/eager.all.json" 'd["window"] == "steps 1..9 (hooks)"'
"$H" report "$T/nanogpt_eager.db" steps --format json > "$T/eager.steps.json" || fail "report steps"
check "$T/eager.steps.json" 'len(d["breakdown"]) == 9 and all(r["forward_gpu_ms"] > 0 and r["backward_gpu_ms"] > r["forward_gpu_ms"] for r in d["breakdown"][1:])'
check "$T/eager.steps.json" 'all(r["source"] == "hooks" for r in d["steps"])'
"$H" report "$T/nanogpt_eager.db" steps > "$T/eager.steps.txt" || fail "report steps (table)"
grep -q "forward_gpu_ms" "$T/eager.steps.txt" || fail "report steps: no forward_gpu_ms column"

# ---- compiled: steps 2..9 of the capture ----
sql nanogpt_compiled "8|hooks|2|9" "SELECT count(*), min(source), min(number), max(number) FROM steps"
sql nanogpt_compiled "8|0" "SELECT count(*), ($OFF) FROM step_breakdown"
sql nanogpt_compiled "1" "SELECT count(*) FROM meta WHERE key = 'trimmed_from'"

# ---- the script's own torch.profiler ----
sql nanogpt_profiler "5|profiler|10|14" "SELECT count(*), min(source), min(number), max(number) FROM steps"
sql nanogpt_profiler "1" "SELECT count(*) FROM files WHERE path LIKE '%.pt.trace.json' AND slices > 0"
# The hand-over, once each way, and no recording pause (Kineto recorded).
sql nanogpt_profiler "1
0" "SELECT CAST(c.value AS INTEGER) FROM counters c JOIN strings n ON n.id = c.name
    WHERE n.str = 'htamerge/cupti handed to torch.profiler' ORDER BY c.ts"
sql nanogpt_profiler "0" "SELECT count(*) FROM counters c JOIN strings n ON n.id = c.name
                          WHERE n.str = 'htamerge/cupti recording'"
# Kernels in the profiled steps: the trace's own count; each stored once
# (no two kernels of one name start within 2 us on one stream).
K="SELECT s.id, s.ts, s.name, s.track FROM slices s JOIN categories c ON c.id = s.cat WHERE c.name = 'kernel'"
W="SELECT min(ts) AS t0, max(ts + dur) AS t1 FROM steps"
sql nanogpt_profiler "3055" "SELECT count(*) FROM ($K) k, ($W) w WHERE k.ts >= w.t0 AND k.ts < w.t1"
sql nanogpt_profiler "0" "SELECT count(*) FROM ($K) a JOIN ($K) b ON a.track = b.track AND a.name = b.name
                          AND a.id < b.id AND abs(a.ts - b.ts) < 2000"
# Live capture before the session (5 waiting steps and the start-up).
sql nanogpt_profiler "1" "SELECT count(*) > 3000 FROM ($K) k, ($W) w WHERE k.ts < w.t0"
sql nanogpt_profiler "5|0" "SELECT count(*), ($OFF) FROM step_breakdown"
"$H" report "$T/nanogpt_profiler.db" temporal --format json > "$T/prof.temporal.json" || fail "report temporal"
# ProfilerSteps 10..13 (HTA drops the last): the GPU works 31 of each ~43 ms.
check "$T/prof.temporal.json" '10 < d["ranks"][0]["idle_pct"] < 50 and "window" not in d'
finish

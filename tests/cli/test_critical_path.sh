#!/usr/bin/env bash
# report critical-path (issue 18): the chain of work and communication
# across ranks that set each step's duration.
#   - two ranks whose path is known by construction (tests/tools/
#     gen_path_traces.py: a late rank's slow kernel, a collective's
#     transfer, a host-bound optimizer), every segment checked;
#   - the real 4-rank gloo DDP traces where rank 2 sleeps 20 ms a step:
#     rank 2's work holds most of every step's path; the balanced run's
#     path is not one rank's;
#   - the live synth run with a 20 ms straggler on rank 2 (the README's
#     main job): the same;
#   - the 2-GPU NCCL fixture where rank 1 sleeps: rank 1.
set -u
. "$(dirname "$0")/../lib.sh"
H=${HTAMERGE:?}; SRC=${HM_SOURCE_DIR:?}; SYN=${HTAMERGE_SYNTH:-$(dirname "$H")/htamerge-synth}
command -v python3 >/dev/null || skip "python3 is not installed"
hm_tmpdir cli_critical_path
mpi_env
check() {
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if eval(sys.argv[2]) else 1)' \
        "$1" "$2" 2>/dev/null || fail "$(basename "$1"): $2 ($(head -c 400 "$1" | tr '\n\t' '  '))"
}
# dominant FILE: the rank holding the largest share of the path, summed
# over the steps the HTA rule keeps, and that share in %.
DOMINANT='import json,sys,collections
d = json.load(open(sys.argv[1])); by = collections.Counter(); tot = 0
for s in d["segments"]:
    if s["kind"] == "work": by[s["rank"]] += s["dur_us"]
    tot += s["dur_us"]
r, v = by.most_common(1)[0]; print(r, round(100 * v / tot))'

mkdir "$T/made"
python3 "$SRC/tests/tools/gen_path_traces.py" "$T/made" || fail "gen_path_traces"
"$H" ingest -q -o "$T/made.db" "$T/made" || fail "ingest"
"$H" report "$T/made.db" critical-path --format json > "$T/made.json" || fail "report critical-path"
check "$T/made.json" '[(s["rank"], s["kind"], s["name"], s["start_us"], s["dur_us"], s["compute_us"]) for s in d["segments"] if s["step"] == 1] == [(1, "work", "forward", 0, 600, 450), (0, "comm", "allreduce", 600, 100, 0), (0, "work", "optimizer", 700, 300, 0)]'
check "$T/made.json" 'd["steps"][0]["summary"] == "45.0 % rank 1 forward (compute), 30.0 % rank 0 optimizer (host), 15.0 % rank 1 forward (host), 10.0 % allreduce on world (transfer)"'
check "$T/made.json" 'd["steps"][0]["path_ms"] == 1 and d["steps"][0]["ranks"] == 2'
"$H" report "$T/made.db" critical-path --steps 1 --format json > "$T/made1.json" || fail "--steps 1"
check "$T/made1.json" 'all(s["step"] == 1 for s in d["segments"]) and len(d["steps"]) == 1'
"$H" report "$T/made.db" critical-path | grep -q "summary" || fail "critical-path table"

# Real gloo DDP traces (torch 1.13, 4 ranks): rank 2 sleeps 20 ms a step.
FX=$SRC/tests/fixtures/gloo
for run in ddp4_straggler2 ddp4_none; do
    "$H" ingest -q -o "$T/$run.db" "$FX/$run" || fail "ingest $run"
    "$H" report "$T/$run.db" critical-path --format json > "$T/$run.json" || fail "report $run"
done
read -r r pct < <(python3 -c "$DOMINANT" "$T/ddp4_straggler2.json")
[ "$r" = 2 ] && [ "$pct" -ge 40 ] || fail "gloo straggler: the path's rank is $r ($pct %), want 2"
read -r r pct < <(python3 -c "$DOMINANT" "$T/ddp4_none.json")
[ "$pct" -lt 60 ] || fail "gloo balanced run: rank $r holds $pct % of the path"

# The README's main job: live synth ranks, rank 2 20 ms late each step.
# (Sanitizer builds: Open MPI's own allocations are not ours to judge.)
export ASAN_OPTIONS=${ASAN_OPTIONS:-}:detect_leaks=0
run_mpi 120 -n 4 "$H" -o "$T/syn.db" "$SYN" --steps 8 --straggler 2:20 >"$T/syn.log" 2>&1 || fail "synth run: $(tail -3 "$T/syn.log")"
"$H" report "$T/syn.db" critical-path --format json > "$T/syn.json" || fail "report synth"
read -r r pct < <(python3 -c "$DOMINANT" "$T/syn.json")
[ "$r" = 2 ] || fail "synth straggler: the path's rank is $r ($pct %), want 2"

# 2 H200s over NCCL, rank 1 sleeping 20 ms before each forward.
gunzip -c "$SRC/tests/fixtures/gpu/nccl2_straggler1.db.gz" > "$T/n2.db" || fail "fixture"
"$H" report "$T/n2.db" critical-path --format json > "$T/n2.json" || fail "report nccl2"
read -r r pct < <(python3 -c "$DOMINANT" "$T/n2.json")
[ "$r" = 1 ] || fail "nccl straggler: the path's rank is $r ($pct %), want 1"
check "$T/n2.json" 'all(abs(s["path_ms"] - sum(g["dur_us"] for g in d["segments"] if g["step"] == s["step"]) / 1e3) < 0.01 for s in d["steps"])'
finish

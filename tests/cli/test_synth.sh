#!/usr/bin/env bash
# htamerge-synth, the stand-in training rank: two ranks run by hand as the
# collector would start them (torchrun environment, one shared run start),
# with rank 1 a 20 ms straggler. Checks the traces (valid JSON, steps, Seq,
# equal collective exits, late enters, duration inversion, nesting), the
# wall time, determinism, --gzip, --ranks, --fail-at / --crash-at, bad arguments,
# and, when htamerge is built, that `htamerge ingest` accepts the output.
set -u
. "$(dirname "$0")/../lib.sh"
SYN=${HTAMERGE_SYNTH:-}
if [ -z "$SYN" ] && [ -n "${HTAMERGE:-}" ]; then SYN=$(dirname "$HTAMERGE")/htamerge-synth; fi
[ -x "${SYN:-}" ] || { echo "FAIL: set HTAMERGE_SYNTH to the htamerge-synth binary" >&2; exit 1; }
hm_tmpdir cli_synth
now_ns() { date +%s%N; }

# rank DIR START ARGS...: one rank of a 2-rank job, in the background.
rank() {
    local r=$1 dir=$2 start=$3; shift 3
    RANK=$r WORLD_SIZE=2 LOCAL_RANK=$r LOCAL_WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=29500 \
        HTAMERGE_TRACE_DIR=$dir HTAMERGE_RUN_START_NS=$start "$SYN" "$@" 2>"$dir.err" &
}

# ---- the main case: 4 steps, 2 per file, rank 1 late by 20 ms ----
ARGS=(--steps 4 --cycle 2 --straggler 1:20)
t_begin=$(now_ns)
START=$((t_begin + 200000000))
rank 0 "$T/r0" "$START" "${ARGS[@]}"; p0=$!
rank 1 "$T/r1" "$START" "${ARGS[@]}"; p1=$!
wait $p0; rc0=$?
wait $p1; rc1=$?
t_end=$(now_ns)
[ "$rc0" = 0 ] && [ "$rc1" = 0 ] || { fail "ranks exited $rc0 / $rc1"; cat "$T/r0.err" "$T/r1.err" >&2; }
grep -q '^htamerge-synth: rank 0 wrote 2 files, 4 steps, [0-9]* events$' "$T/r0.err" || fail "rank 0 summary: $(cat "$T/r0.err")"
grep -q '^htamerge-synth: rank 1 wrote 2 files, 4 steps, [0-9]* events$' "$T/r1.err" || fail "rank 1 summary"
ls -A "$T/r0" "$T/r1" | grep -q '^\.tmp-' && fail "temporary file left behind"
# Wall time: the run starts at START and lasts at least steps * period.
[ $((t_end - START)) -ge $((4 * 50000000)) ] || fail "ran $(( (t_end - START) / 1000000 )) ms after start, expected >= 200"

python3 - "$T/r0" "$T/r1" "$START" <<'EOF' || fail "trace checks"
import json, os, re, sys
dirs, start = sys.argv[1:3], int(sys.argv[3])
errors = []
def check(cond, msg):
    if not cond:
        errors.append(msg)

def load(d):
    names = sorted(os.listdir(d))
    check(len(names) == 2, f"{d}: {len(names)} files, expected 2")
    evs, base = [], None
    for n in names:
        check(re.fullmatch(r"[A-Za-z0-9._-]+_\d+\.\d+\.pt\.trace\.json", n) is not None, f"file name {n}")
        with open(os.path.join(d, n)) as f:
            doc = json.load(f)           # valid JSON or an exception
        di = doc["distributedInfo"]
        check(doc["schemaVersion"] == 1 and di["world_size"] == 2 and di["pg_config"][0]["ranks"] == [0, 1],
              f"{n}: top level")
        check(base in (None, doc["baseTimeNanoseconds"]), "baseTimeNanoseconds differs between files")
        base = doc["baseTimeNanoseconds"]
        check(base % 10**9 == 0 and base <= start, "baseTimeNanoseconds not a whole second before start")
        evs.append(doc["traceEvents"])
    return di["rank"], base, evs

def ns(base, v):  # "ts" written with exactly 3 decimals -> exact integer ns
    return base + round(v * 1000)

ranks = {}
for d in dirs:
    r, base, files = load(d)
    allev = [e for f in files for e in f]
    steps = sorted(int(e["name"].split("#")[1]) for e in allev if e.get("name", "").startswith("ProfilerStep#"))
    check(steps == [0, 1, 2, 3], f"rank {r}: steps {steps}")
    check(sorted(int(e["name"].split("#")[1]) for e in files[0] if e.get("name", "").startswith("ProfilerStep#")) == [0, 1],
          f"rank {r}: first file does not hold steps 0 and 1")
    names = {e.get("name") for e in allev}
    for want in ("train_step", "forward", "backward", "optimizer_step", "nccl:all_reduce", "record_param_comms",
                 "cudaLaunchKernel", "Memcpy HtoD (Pageable -> Device)", "Memset (Device)", "[memory]"):
        check(want in names, f"rank {r}: no {want}")
    kern = [e for e in allev if e.get("cat") == "kernel" and e["name"].startswith("ncclDevKernel_AllReduce")]
    for k in kern:
        check(k["pid"] == r and k["tid"] == 20 and k["args"]["stream"] == 20, "allreduce not on stream 20")
    rpc = [e for e in allev if e.get("name") == "record_param_comms"]
    check(len(kern) == 8 and len(rpc) == 8, f"rank {r}: {len(kern)} allreduce kernels, {len(rpc)} record_param_comms")
    # launches: every GPU op has a cuda_runtime launch with its correlation and an s/f flow pair
    gpu = [e for e in allev if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    launch = {e["args"]["correlation"]: e for e in allev if e.get("cat") == "cuda_runtime"}
    flows = {(e["ph"], e["id"]) for e in allev if e.get("cat") == "ac2g"}
    for g in gpu:
        c = g["args"]["correlation"]
        check(c in launch and ("s", c) in flows and ("f", c) in flows, f"GPU op {c} lacks launch or flow")
        if c in launch:
            check(ns(base, launch[c]["ts"]) <= ns(base, g["ts"]), f"GPU op {c} starts before its launch")
    # nesting on the CPU thread, no overlap on a GPU stream
    by_track = {}
    for e in allev:
        if e.get("ph") == "X":
            by_track.setdefault((e["pid"], e["tid"]), []).append((ns(base, e["ts"]), ns(base, e["dur"]) - base, e["name"]))
    for (pid, tid), xs in by_track.items():
        xs.sort(key=lambda x: (x[0], -x[1]))
        stack = []
        for t0, dur, name in xs:
            while stack and stack[-1][0] <= t0:
                stack.pop()
            if stack:
                check(t0 + dur <= stack[-1][0], f"track {pid}/{tid}: {name} overlaps {stack[-1][1]} without nesting")
            if pid == r:   # a GPU stream: one op at a time
                check(not stack, f"stream {tid}: {name} overlaps {stack[-1][1] if stack else ''}")
            stack.append((t0 + dur, name))
    ranks[r] = {k["args"]["Seq"]: (ns(base, k["ts"]), ns(base, k["ts"]) + ns(base, k["dur"]) - base) for k in kern}
    check(sorted(e["args"]["Seq"] for e in rpc) == sorted(ranks[r]), f"rank {r}: record_param_comms Seq")

check(sorted(ranks[0]) == sorted(ranks[1]) == list(range(1, 9)), "Seq values differ across ranks")
for s in ranks[0]:
    (e0, x0), (e1, x1) = ranks[0][s], ranks[1].get(s, (0, 0))
    check(abs(x0 - x1) <= 1000, f"seq {s}: exits differ by {x1 - x0} ns")
    check(18e6 <= e1 - e0 <= 22e6, f"seq {s}: rank 1 enters {(e1 - e0) / 1e6:.3f} ms after rank 0, expected ~20")
    check(x0 - e0 > x1 - e1, f"seq {s}: rank 0's kernel is not the longer one")
for e in errors:
    print("  " + e, file=sys.stderr)
sys.exit(1 if errors else 0)
EOF

# ---- determinism and --gzip: a run start in the past runs at once ----
PAST=1700000000123456789
for d in a b; do
    RANK=1 WORLD_SIZE=3 LOCAL_RANK=1 HTAMERGE_TRACE_DIR=$T/det$d HTAMERGE_RUN_START_NS=$PAST \
        "$SYN" --steps 3 --cycle 2 --straggler 2:5 --step-ms 10 2>/dev/null || fail "determinism run $d"
done
RANK=1 WORLD_SIZE=3 LOCAL_RANK=1 HTAMERGE_TRACE_DIR=$T/detgz HTAMERGE_RUN_START_NS=$PAST \
    "$SYN" --steps 3 --cycle 2 --straggler 2:5 --step-ms 10 --gzip 2>/dev/null || fail "gzip run"
[ "$(cat "$T"/deta/* | md5sum)" = "$(cat "$T"/detb/* | md5sum)" ] || fail "same arguments gave different traces"
[ "$(ls "$T/deta" | sed 's/^.*_[0-9]*\.//')" = "$(ls "$T/detb" | sed 's/^.*_[0-9]*\.//')" ] || fail "file names differ beyond host/pid"
[ "$(ls "$T/detgz" | grep -c '\.pt\.trace\.json\.gz$')" = 2 ] || fail "--gzip file names"
[ "$(zcat "$T"/detgz/* | md5sum)" = "$(cat "$T"/deta/* | md5sum)" ] || fail "--gzip content differs"

# ---- --ranks N: one command writes every rank's files as the per-rank invocations do ----
R_ARGS=(--steps 3 --cycle 2 --straggler 2:5 --step-ms 10 --gzip)
RANK=1 HTAMERGE_TRACE_DIR=$T/all HTAMERGE_RUN_START_NS=$PAST "$SYN" --ranks 3 "${R_ARGS[@]}" 2>"$T/all.err" ||
    fail "--ranks 3 exited $?"
for r in 0 1 2; do
    RANK=$r WORLD_SIZE=3 LOCAL_RANK=$r HTAMERGE_TRACE_DIR=$T/each HTAMERGE_RUN_START_NS=$PAST \
        "$SYN" "${R_ARGS[@]}" 2>/dev/null || fail "per-rank run $r"
done
[ "$(grep -c '^htamerge-synth: rank [0-2] wrote 2 files' "$T/all.err")" = 3 ] || fail "--ranks 3 summaries: $(cat "$T/all.err")"
[ "$(ls "$T/all" | sed 's/^.*_\([0-9]*\)\..*$/\1/' | sort -u | wc -l)" = 3 ] || fail "--ranks 3: one pid per rank in the file names"
sums() { for f in "$1"/*; do zcat "$f" | md5sum; done | sort; }
[ "$(sums "$T/all")" = "$(sums "$T/each")" ] || fail "--ranks 3 traces differ from the per-rank invocations'"
for bad in "--ranks 0" "--ranks x" "--ranks=-1"; do
    # shellcheck disable=SC2086
    HTAMERGE_TRACE_DIR=$T/bad "$SYN" $bad 2>/dev/null
    [ $? = 2 ] || fail "'$bad' did not exit 2"
done
HTAMERGE_TRACE_DIR=$T/rfail HTAMERGE_RUN_START_NS=$PAST "$SYN" --ranks 3 --steps 4 --cycle 2 --fail-at 1 2>/dev/null
[ $? = 3 ] && [ "$(ls "$T/rfail" | wc -l)" = 1 ] || fail "--ranks 3 --fail-at 1: exit 3 after rank 0's first file"

# ---- failures: --fail-at exits 3 keeping completed cycles, --crash-at dies of SIGSEGV ----
HTAMERGE_TRACE_DIR=$T/fail HTAMERGE_RUN_START_NS=$PAST "$SYN" --steps 4 --cycle 2 --fail-at 1 2>"$T/fail.err"
[ $? = 3 ] || fail "--fail-at 1 did not exit 3"
[ "$(ls "$T/fail" | wc -l)" = 1 ] || fail "--fail-at 1 should keep the first cycle's file"
HTAMERGE_TRACE_DIR=$T/fail2 HTAMERGE_RUN_START_NS=$PAST "$SYN" --steps 4 --cycle 2 --fail-at 0 2>/dev/null
[ $? = 3 ] && [ "$(ls -A "$T/fail2" | wc -l)" = 0 ] || fail "--fail-at 0: exit 3 and no file"
{ HTAMERGE_TRACE_DIR=$T/crash HTAMERGE_RUN_START_NS=$PAST "$SYN" --steps 4 --cycle 2 --crash-at 2; } 2>/dev/null
[ $? = $((128 + 11)) ] || fail "--crash-at 2 did not die of SIGSEGV"
[ "$(ls "$T/crash" | wc -l)" = 1 ] || fail "--crash-at 2 should keep the first cycle's file"

# ---- bad command lines exit 2 ----
for bad in "--steps 0" "--steps x" "--straggler 2:20" "--straggler 1" "--step-ms 0" "--cycle" "--bogus 1" \
           "--tp 1" "--tp 3" "--tp x"; do
    # shellcheck disable=SC2086
    RANK=0 WORLD_SIZE=2 HTAMERGE_TRACE_DIR=$T/bad "$SYN" $bad 2>/dev/null
    [ $? = 2 ] || fail "'$bad' did not exit 2"
done
RANK=5 WORLD_SIZE=2 HTAMERGE_TRACE_DIR=$T/bad "$SYN" 2>/dev/null
[ $? = 2 ] || fail "RANK >= WORLD_SIZE did not exit 2"

# ---- standalone (no run start, no trace folder variable) ----
(cd "$T" && mkdir alone && cd alone && env -u HTAMERGE_RUN_START_NS -u HTAMERGE_TRACE_DIR -u RANK -u WORLD_SIZE \
    "$SYN" --steps 1 --step-ms 5 2>/dev/null) || fail "standalone run"
[ "$(ls "$T/alone" | wc -l)" = 1 ] || fail "standalone run wrote no file in the working directory"

# ---- our own reader accepts the output (one file per rank: one profiler cycle) ----
if [ -n "${HTAMERGE:-}" ] && [ -x "$HTAMERGE" ]; then
    mkdir -p "$T/cyc0"
    cp "$(ls "$T"/r0/* | head -n 1)" "$T/cyc0/"; cp "$(ls "$T"/r1/* | head -n 1)" "$T/cyc0/"
    "$HTAMERGE" ingest -q -o "$T/s.db" "$T/cyc0" 2>"$T/ing.err" || { fail "ingest"; cat "$T/ing.err" >&2; }
    q() { "$HTAMERGE" sql "$T/s.db" "$1" --format csv | tail -n 1; }
    [ "$(q 'SELECT count(*) FROM ranks')" = 2 ] || fail "ingest: ranks"
    [ "$(q "SELECT count(*) FROM collectives WHERE seq IS NOT NULL")" = 16 ] || fail "ingest: collectives with Seq (record_param_comms and kernel, 2 steps, 2 ranks)"
    [ "$(q "SELECT count(*) FROM skipped WHERE reason <> 'unsupported_ph'")" = 0 ] || fail "ingest: skipped events"
    for topic in temporal overlap idle; do
        "$HTAMERGE" report "$T/s.db" $topic --format csv >"$T/$topic.csv" || fail "report $topic"
    done
    [ "$(q 'SELECT count(*) FROM v_temporal WHERE idle_pct > 0 AND compute_pct > 0')" = 2 ] || fail "temporal"
    [ "$(q 'SELECT count(*) FROM v_overlap WHERE overlap_pct > 0 AND overlap_pct < 100')" = 2 ] || fail "overlap"
fi

finish "test_synth: all passed"

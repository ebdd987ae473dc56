#!/usr/bin/env bash
# Cross-rank analyses end to end (analysis/cross_rank.h): collective matching,
# clock refinement from collectives, the straggler verdict, NVTX stitching
# and the step breakdown, on
#   - htamerge-synth runs (ncclDevKernel allreduces keyed by pg + Seq):
#     an injected 10 ms straggler, none, and the straggler run with three
#     ranks' clocks moved by ms and tens of ppm (recovered within 20 us);
#   - the real 4-rank gloo DDP fixtures (gloo:all_reduce ranges, matched by
#     order within the step): rank 2 sleeping 20 ms, none, and moved clocks
#     (recovered within 250 us);
#   - HTA's trace_filter (2 ranks of a 128-rank NCCL job without Seq) and
#     nccl_parser_config (one rank).
set -u
. "$(dirname "$0")/../lib.sh"
H=${HTAMERGE:?set HTAMERGE to the htamerge binary}
SYN=${HTAMERGE_SYNTH:-$(dirname "$H")/htamerge-synth}
SRC=${HM_SOURCE_DIR:?set HM_SOURCE_DIR}
FIX=$SRC/tests/fixtures
PERTURB="python3 $SRC/tests/tools/perturb_trace.py"
hm_tmpdir cli_xrank
q() { "$H" sql "$1" "$2" --format csv | tail -n +2 | tr -d '"'; }
ingest() { "$H" ingest -o "$1" "${@:2}" >"$T/ingest.out" 2>&1 || { fail "ingest $*: $(cat "$T/ingest.out")"; }; }
# verdict DB: the whole run's straggler ("null" for none).
verdict() {
    "$H" report "$1" stragglers --format json |
        python3 -c 'import json,sys; d=json.load(sys.stdin); print("null" if d["straggler"] is None else d["straggler"]); print(d["evidence"], file=sys.stderr)'
}

# synth OUT ARGS...: a 4-rank synth run, one trace file per rank in OUT/rank-N.json.
synth() {
    local out=$1 start pids=(); shift
    start=$(( $(date +%s%N) + 200000000 ))
    mkdir -p "$out"
    for r in 0 1 2 3; do
        mkdir -p "$out/d$r"
        RANK=$r WORLD_SIZE=4 LOCAL_RANK=$r LOCAL_WORLD_SIZE=4 HTAMERGE_TRACE_DIR=$out/d$r \
            HTAMERGE_RUN_START_NS=$start "$SYN" --steps 8 --cycle 8 --step-ms 40 "$@" 2>/dev/null &
        pids+=($!)
    done
    for p in "${pids[@]}"; do wait "$p" || fail "synth rank exited non-zero"; done
    for r in 0 1 2 3; do mv "$out/d$r"/*.json "$out/rank-$r.json" && rmdir "$out/d$r"; done
}

# max_err A.db B.db: largest |enter| and |exit| difference of the same
# collectives rows, in ns (the files were ingested from the same traces).
max_err() {
    "$H" sql "$1" "SELECT 1" >/dev/null || return
    sqlite3 "$1" "ATTACH '$2' AS o; SELECT max(max(abs(p.enter_ns - q.enter_ns)), max(abs(p.exit_ns - q.exit_ns)))
                  FROM collectives p JOIN o.collectives q ON q.id = p.id"
}

# perturb IN_DIR OUT_DIR: ranks 1-3 moved by ms and tens of ppm; rank 0 kept.
perturb() {
    local in=$1 out=$2 f
    mkdir -p "$out"
    f=$(ls "$in" | grep 'rank-0'); cp "$in/$f" "$out/"
    f=$(ls "$in" | grep 'rank-1'); $PERTURB "$in/$f" "$out/$f" 3000 40
    f=$(ls "$in" | grep 'rank-2'); $PERTURB "$in/$f" "$out/$f" -5000 -30
    f=$(ls "$in" | grep 'rank-3'); $PERTURB "$in/$f" "$out/$f" 1500 70
}

# ---- synthetic NCCL: straggler, none, moved clocks ----
synth "$T/s2" --straggler 2:10
synth "$T/s0"
ingest "$T/s2.db" "$T/s2"
ingest "$T/s0.db" "$T/s0"
[ "$(verdict "$T/s2.db" 2>"$T/ev")" = 2 ] || fail "synth: straggler is not rank 2"
grep -q '^rank 2 entered last in 16 of 16 allreduces; the others waited [0-9]* ms for it$' "$T/ev" ||
    fail "synth: evidence '$(cat "$T/ev")'"
[ "$(verdict "$T/s0.db" 2>/dev/null)" = null ] || fail "synth: a straggler without one"
[ "$(q "$T/s2.db" "SELECT count(*) || ' ' || min(ranks) || ' ' || group_concat(DISTINCT match) FROM collective_instances")" = "16 4 pg_seq" ] ||
    fail "synth: instances $(q "$T/s2.db" "SELECT count(*), min(ranks), max(ranks) FROM collective_instances")"
[ "$(q "$T/s2.db" "SELECT count(*) FROM collective_instance_ranks WHERE source <> 'gpu'")" = 0 ] ||
    fail "synth: a call not timed by its kernel"
[ "$(q "$T/s2.db" "SELECT late_count FROM v_stragglers WHERE rank = 2")" = 16 ] || fail "synth: v_stragglers"
[ "$(q "$T/s2.db" "SELECT count(*) FROM straggler_verdicts WHERE step IS NOT NULL AND straggler = 2")" = 8 ] ||
    fail "synth: per-step verdicts"
perturb "$T/s2" "$T/s2p"
ingest "$T/s2p.db" "$T/s2p"
[ "$(q "$T/s2p.db" "SELECT group_concat(clock_method) FROM ranks")" = "base_time,collectives,collectives,collectives" ] ||
    fail "synth: clock methods $(q "$T/s2p.db" "SELECT group_concat(clock_method) FROM ranks")"
err=$(max_err "$T/s2p.db" "$T/s2.db")
echo "synth NCCL clock recovery: max error $err ns"
[ -n "$err" ] && [ "$err" -le 20000 ] || fail "synth: clocks recovered within $err ns, want <= 20 us"
[ "$(q "$T/s2p.db" "SELECT CAST(round(clock_drift_ppm) AS INTEGER) FROM ranks WHERE rank = 3")" = "-70" ] ||
    fail "synth: drift of rank 3 $(q "$T/s2p.db" "SELECT clock_drift_ppm FROM ranks WHERE rank = 3")"
[ "$(verdict "$T/s2p.db" 2>/dev/null)" = 2 ] || fail "synth: straggler lost with moved clocks"
"$H" report "$T/s2p.db" clocks --format json | grep -q '"method":	"collectives"' || fail "report clocks: method"

# ---- real gloo DDP fixtures (4 ranks sharing one GPU) ----
ingest "$T/g2.db" "$FIX/gloo/ddp4_straggler2"
ingest "$T/g0.db" "$FIX/gloo/ddp4_none"
[ "$(verdict "$T/g2.db" 2>"$T/ev")" = 2 ] || fail "gloo: straggler is not rank 2"
grep -q '^rank 2 entered last in 12 of 12 allreduces; the others waited [0-9]* ms for it$' "$T/ev" ||
    fail "gloo: evidence '$(cat "$T/ev")'"
[ "$(verdict "$T/g0.db" 2>/dev/null)" = null ] || fail "gloo: a straggler without one"
[ "$(q "$T/g2.db" "SELECT count(*) || ' ' || min(ranks) || ' ' || group_concat(DISTINCT match) || ' ' || group_concat(DISTINCT op) FROM collective_instances")" = "12 4 order allreduce" ] ||
    fail "gloo: instances"
[ "$(q "$T/g2.db" "SELECT count(*) FROM collectives c LEFT JOIN collective_instance_ranks m ON m.collective = c.id WHERE m.instance IS NULL")" = 0 ] ||
    fail "gloo: a collective left unmatched"
[ "$(q "$T/g2.db" "SELECT late_rank FROM nvtx_stitched WHERE path = 'train_step/forward' AND step = 3")" = 2 ] ||
    fail "gloo: rank 2 does not enter forward last"
[ "$(q "$T/g2.db" "SELECT count(*) FROM nvtx_stitched WHERE path = 'train_step/backward' AND ranks = 4")" = 6 ] ||
    fail "gloo: backward not stitched over 6 steps"
[ "$(q "$T/g2.db" "SELECT count(*) FROM step_breakdown WHERE forward_ns + backward_ns + optimizer_ns + compute_ns + exposed_comm_ns + other_ns <> dur_ns")" = 0 ] ||
    fail "gloo: step breakdown does not add up"
[ "$(q "$T/g2.db" "SELECT count(*) FROM step_breakdown WHERE rank = 3 AND exposed_comm_ns > 15000000 AND source = 'annotations'")" -ge 5 ] ||
    fail "gloo: rank 3 does not wait ~20 ms per step in communication"
perturb "$FIX/gloo/ddp4_straggler2" "$T/g2p"
ingest "$T/g2p.db" "$T/g2p"
err=$(max_err "$T/g2p.db" "$T/g2.db")
echo "gloo clock recovery: max error $err ns"
[ -n "$err" ] && [ "$err" -le 250000 ] || fail "gloo: clocks recovered within $err ns, want <= 250 us"
[ "$(verdict "$T/g2p.db" 2>/dev/null)" = 2 ] || fail "gloo: straggler lost with moved clocks"
perturb "$FIX/gloo/ddp4_none" "$T/g0p"
ingest "$T/g0p.db" "$T/g0p"
[ "$(verdict "$T/g0p.db" 2>/dev/null)" = null ] || fail "gloo: a straggler without one (moved clocks)"

# ---- HTA fixtures: NCCL without Seq, and a lone rank ----
ingest "$T/tf.db" "$FIX/hta/trace_filter"
# The traces are sampled: each rank misses some calls. All-to-alls (sizes
# differ per rank) and the allgathers all match; allreduces only where the
# sizes agree (4 calls have no partner of their size).
[ "$(q "$T/tf.db" "SELECT count(*) FROM collective_instances WHERE ranks = 2 AND op IN ('alltoall', 'allgatherbase')")" = 6 ] ||
    fail "trace_filter: all-to-alls and allgathers not matched on both ranks"
[ "$(q "$T/tf.db" "SELECT count(*) || ' ' || sum(ranks) FROM collective_instances WHERE op = 'allreduce'")" = "6 8" ] ||
    fail "trace_filter: allreduces $(q "$T/tf.db" "SELECT count(*), sum(ranks) FROM collective_instances WHERE op = 'allreduce'")"
[ "$(q "$T/tf.db" "SELECT count(*) FROM collective_instances WHERE ranks = 2 AND step IS NULL")" = 0 ] ||
    fail "trace_filter: an instance without its step"
ingest "$T/npc.db" "$FIX/hta/nccl_parser_config"
[ "$(q "$T/npc.db" "SELECT count(*) FROM collective_instance_ranks WHERE source = 'gpu'")" = 21 ] ||
    fail "nccl_parser_config: calls timed by their kernels"
[ "$(verdict "$T/npc.db" 2>/dev/null)" = null ] || fail "nccl_parser_config: a straggler on one rank"

# ---- report topics ----
for topic in stragglers collectives nvtx steps clocks; do
    "$H" report "$T/g2.db" $topic --format json | python3 -c 'import json,sys; json.load(sys.stdin)' ||
        fail "report $topic: not JSON"
done
"$H" report "$T/g2.db" collectives --format json | grep -q '"late_rank":	2' || fail "report collectives"
"$H" report "$T/g2.db" stragglers --steps 3 --format csv | grep -q '^3,2,2,' || fail "report stragglers --steps"
"$H" report --help | grep -q 'stragglers' || fail "report --help lists stragglers"

# ---- HTA's get_potential_stragglers (--method hta) ----
# It needs ncclKernel* kernels (NCCL < 2.19): rank 2 starts the last long one
# latest in every iteration. It finds nothing on ncclDevKernel_* (g2.db).
synth "$T/old" --straggler 2:15 --nccl-kernel ncclKernel_AllReduce_RING_LL_Sum_float
"$H" ingest -o "$T/old.db" "$T/old" >/dev/null 2>&1 || fail "ingest old-NCCL synth"
hta=$("$H" report "$T/old.db" stragglers --method hta --format json)
echo "$hta" | python3 -c 'import json,sys; d=json.load(sys.stdin)
assert d["method"] == "hta" and d["candidates"][0] == 2 and len(d["candidates"]) == 2, d
r2 = [r for r in d["ranks"] if r["rank"] == 2][0]
assert r2["late_start_count"] == d["iterations"] == 7, d
assert d["kernel"].startswith("ncclKernel_AllReduce"), d' || fail "--method hta on old NCCL names: $hta"
"$H" report "$T/old.db" stragglers --method hta --candidates 1 --format json |
    python3 -c 'import json,sys; assert json.load(sys.stdin)["candidates"] == [2]' || fail "--candidates 1"
"$H" report "$T/g2.db" stragglers --method hta --format json |
    python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["candidates"] == [] and "ncclDevKernel" in d["evidence"], d' ||
    fail "--method hta on ncclDevKernel traces should say why it finds nothing"
"$H" report "$T/g2.db" stragglers --method bogus >/dev/null 2>&1
[ $? = 2 ] || fail "unknown --method is not a usage error"

finish "cross-rank: all checks passed"

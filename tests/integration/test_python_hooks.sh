#!/usr/bin/env bash
# The Python hooks (man htamerge, PYTHON HOOKS) on real PyTorch, CPU/gloo:
# three DDP scripts that know nothing of htamerge (tests/integration/py)
# under `mpirun -n 4 htamerge`:
#   annotated  record_function + torch.profiler writing to ./tb_log
#   plain      no annotations, no profiler; exits 5 (propagated)
#   straggler  plain, rank 2 sleeps 20 ms a step: the verdict names rank 2
# and checks from the database: step/forward/backward/optimizer ranges on
# every rank, one of each per step, children inside their step; gloo
# collectives on every rank, matched by (pg, seq) with all 4 ranks; the
# straggler verdict; the script's own trace files read in place (with a
# Kineto torch) and unchanged; --python-hooks off and HTAMERGE_PYTHON_HOOKS=0
# mark nothing; the program's own sitecustomize and PYTHONPATH still work;
# the process group ends with its owners (group_lifetime.py);
# a trace file the program reports is read where it is, byte for byte.
# Skips (77) when $HTAMERGE_PYTHON (default /usr/bin/python3) has no torch.
set -u
. "$(dirname "$0")/../lib.sh"
H=${HTAMERGE:?}
export HTAMERGE_PYTHON=${HTAMERGE_PYTHON:-/usr/bin/python3}
P=$HTAMERGE_PYTHON
SRC=${HM_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
PY=$SRC/tests/integration/py
"$P" -c 'import torch, torch.distributed as d; assert d.is_available() and d.is_gloo_available()' \
    >/dev/null 2>&1 || skip "$P has no torch with gloo"
mpi_env
# One intra-op thread a rank: 4 ranks share 2 loaded cores, and torch's
# default (a thread per core) makes the scheduler, not the script, pick a
# "straggler" in the balanced runs.
export OMP_NUM_THREADS=1
# Sanitizer builds: Open MPI's own allocations are not ours to judge.
export ASAN_OPTIONS=${ASAN_OPTIONS:-}:detect_leaks=0
hm_tmpdir pyhooks
KINETO=$("$P" -c 'import torch; print(int(torch.autograd.kineto_available()))')
STEPS=30

# run NAME SCRIPT [HTAMERGE OPTIONS] -- [SCRIPT ARGS]: in $T/NAME; sets rc.
run() {
    local name=$1 script=$2 opts=()
    shift 2
    while [ $# -gt 0 ] && [ "$1" != -- ]; do opts+=("$1"); shift; done
    shift
    mkdir -p "$T/$name" && cd "$T/$name" || exit 1
    # --bind-to none: real torch ranks bound to one core each crawl.
    run_mpi 300 -n 4 --bind-to none -x OMP_NUM_THREADS "$H" -o "$name.db" "${opts[@]}" \
        "$PY/$script" "$@" >"$name.log" 2>&1
    rc=$?
    if grep -q "python hooks disabled" "$name.log"; then fail "$name: $(grep -m1 'python hooks disabled' "$name.log")"; fi
    cd "$T" || exit 1
}

HOOKS="SELECT t.rank, n.str, count(*) FROM slices s JOIN tracks t ON t.id = s.track
       JOIN strings n ON n.id = s.name JOIN categories c ON c.id = s.cat
       WHERE c.name = 'nvtx' AND n.str IN ('step', 'forward', 'backward', 'optimizer')
       AND json_extract(s.args, '\$.domain') = 'htamerge' GROUP BY 1, 2"
OUTSIDE="SELECT count(*) FROM slices k JOIN strings n ON n.id = k.name JOIN categories c ON c.id = k.cat
         WHERE c.name = 'nvtx' AND n.str IN ('forward', 'backward', 'optimizer') AND NOT EXISTS
         (SELECT 1 FROM slices s JOIN strings m ON m.id = s.name WHERE s.track = k.track
          AND m.str = 'step' AND s.ts <= k.ts AND s.ts + s.dur >= k.ts + k.dur)"
LAST_STEP="SELECT max(json_extract(s.args, '\$.step')) FROM slices s JOIN strings n ON n.id = s.name
           WHERE n.str = 'step' AND json_extract(s.args, '\$.domain') = 'htamerge'"

# check_run NAME: hooks and matched collectives on every rank.
check_run() {
    local db=$T/$1/$1.db rows bad
    [ -f "$db" ] || { fail "$1: no database"; tail -5 "$T/$1/$1.log" >&2; return; }
    rows=$("$H" sql "$db" "$HOOKS" --format csv | tail -n +2)
    [ "$(echo "$rows" | grep -c ",$STEPS\$")" = 16 ] ||
        { fail "$1: want $STEPS of each hook range on 4 ranks, got:"; echo "$rows" >&2; }
    [ "$(sql1 "$db" "$OUTSIDE")" = 0 ] || fail "$1: forward/backward/optimizer ranges outside their step"
    [ "$(sql1 "$db" "$LAST_STEP")" = $((STEPS - 1)) ] || fail "$1: step numbers do not run 0..$((STEPS - 1))"
    [ "$(sql1 "$db" "SELECT count(DISTINCT c.rank) FROM collectives c JOIN slices s ON s.id = c.slice
            JOIN strings n ON n.id = s.name WHERE n.str = 'gloo:all_reduce' AND c.seq IS NOT NULL")" = 4 ] ||
        fail "$1: gloo all_reduce rows with a seq missing on some rank"
    bad=$(sql1 "$db" "SELECT count(*) FROM collective_instances WHERE match <> 'pg_seq' OR ranks <> 4
                      OR group_size <> 4")
    [ "$bad" = 0 ] || fail "$1: $bad collective instances not matched by (pg, seq) on all 4 ranks"
    [ "$(sql1 "$db" "SELECT count(*) FROM collective_instances WHERE op = 'allreduce'")" -ge $STEPS ] ||
        fail "$1: fewer than $STEPS matched all-reduces"
    [ "$(sql1 "$db" "SELECT count(DISTINCT rank) FROM collective_instance_ranks")" = 4 ] ||
        fail "$1: not every rank is a member of the matched collectives"
    [ "$(sql1 "$db" "SELECT count(*) FROM ranks WHERE world_size = 4")" = 4 ] || fail "$1: world_size not 4"
    [ "$(sql1 "$db" "SELECT count(*) FROM ranks WHERE backend = 'gloo'")" = 4 ] || fail "$1: backend not gloo on every rank"
}

verdict() { "$H" report "$1" stragglers --format json | "$P" -c 'import json, sys; print(json.load(sys.stdin)["straggler"])'; }
# sole_lateness DB RANK: microseconds a step by which RANK alone entered the
# collectives last (its enter minus the next latest), over $STEPS steps.
sole_lateness() {
    sql1 "$1" "WITH e AS (SELECT instance, rank, enter_ns,
                 row_number() OVER (PARTITION BY instance ORDER BY enter_ns DESC) AS rn
               FROM collective_instance_ranks)
               SELECT coalesce(sum(a.enter_ns - b.enter_ns), 0) / $STEPS / 1000 FROM e a JOIN e b
               ON a.instance = b.instance AND a.rn = 1 AND b.rn = 2 WHERE a.rank = $2"
}
# balanced NAME: a balanced run names no straggler. Four ranks share two
# cores here, so the scheduler can make one rank truly late (a loaded CI
# machine did, once in a few runs); such a verdict passes only when that
# rank's lateness is under half of what the 20 ms sleep gave rank 2 in the
# straggler run, and the note says so.
balanced() {
    local v late ref
    v=$(verdict "$1/$1.db")
    [ "$v" = None ] && return
    late=$(sole_lateness "$1/$1.db" "$v")
    ref=$(sole_lateness straggler/straggler.db 2)
    if [ -n "$late" ] && [ -n "$ref" ] && [ $((2 * late)) -lt "$ref" ]; then
        echo "note: $1 (balanced) named rank $v, late by $late us a step alone, under half of the" \
             "straggler run's $ref us: the scheduler on this loaded machine, not the script"
    else
        fail "$1: straggler $v (alone late by $late us a step; the 20 ms straggler: $ref us), want none"
        "$H" report "$1/$1.db" stragglers >&2
    fi
}

# (a) annotated, profiled into ./tb_log
run annotated ddp_annotated.py -- $STEPS
[ $rc = 0 ] || { fail "annotated: exit $rc"; grep -v "^ *$" "$T/annotated/annotated.log" | tail -40 >&2; }
check_run annotated
ntb=$(ls "$T"/annotated/tb_log/*.pt.trace.json 2>/dev/null | wc -l)
[ "$ntb" = 8 ] || fail "annotated: $ntb trace files in the script's tb_log, want 8 (2 cycles x 4 ranks)"
if [ "$KINETO" = 1 ]; then
    read_tb=$(sql1 annotated/annotated.db "SELECT count(*) FROM files WHERE path LIKE '$T/annotated/tb_log/%' AND slices > 0")
    [ "$read_tb" = 8 ] || fail "annotated: $read_tb of the script's 8 trace files read"
    [ "$(sql1 annotated/annotated.db "SELECT count(*) FROM slices s JOIN strings n ON n.id = s.name
          WHERE n.str LIKE 'ProfilerStep#%'")" -gt 0 ] || fail "annotated: no Kineto rows (ProfilerStep#N)"
else
    echo "note: $P's torch has no Kineto (legacy JSON arrays): its trace files are not read"
fi
find "$T/annotated/tb_log" -newer "$T/annotated/annotated.db" -type f | grep -q . &&
    fail "annotated: trace files changed after the run wrote the database"

# (b) plain, exit status 5
run plain ddp_plain.py -- $STEPS -1 5
[ $rc = 5 ] || { fail "plain: exit $rc, want the script's 5"; tail -5 "$T/plain/plain.log" >&2; }
check_run plain

# (c) rank 2 sleeps 20 ms a step
run straggler ddp_straggler.py -- $STEPS
[ $rc = 0 ] || { fail "straggler: exit $rc"; tail -5 "$T/straggler/straggler.log" >&2; }
check_run straggler
[ "$(verdict straggler/straggler.db)" = 2 ] || fail "straggler: verdict $(verdict straggler/straggler.db), want 2"
# Communication by group: the world group, its all-reduces most often late on rank 2.
"$H" report straggler/straggler.db comms --format json | "$P" -c 'import json, sys
d = json.load(sys.stdin); r = max((g for g in d["groups"] if g["op"] == "allreduce"), key=lambda g: g["calls"])
sys.exit(0 if r["dim"] == "world" and r["late_rank"] == 2 and r["ranks"] == 4 else 1)' || fail "straggler: report comms"
[ "$(sole_lateness straggler/straggler.db 2)" -ge 10000 ] ||
    fail "straggler: rank 2 alone late by $(sole_lateness straggler/straggler.db 2) us a step, want >= 10 ms of its 20 ms sleep"
balanced annotated
balanced plain

# --python-hooks off: nothing marked, nothing recorded
run off ddp_plain.py --python-hooks off -- 5
[ $rc = 0 ] || fail "off: exit $rc"
[ "$(sql1 off/off.db "SELECT count(*) FROM slices")" = 0 ] || fail "--python-hooks off still recorded slices"

# The hooks keep no process group alive: one that outlives its owners ends
# in the interpreter's shutdown, where a gloo worker freeing a finished
# call's tensor aborts the process ("terminate called without an active
# exception", ~1 run in 30 on a loaded machine). The script checks it with
# a weak reference and exits 3 if the group is still there.
run lifetime group_lifetime.py -- 5
[ $rc = 0 ] || { fail "lifetime: exit $rc"; grep -m2 "outlived\|rror" "$T/lifetime/lifetime.log" >&2; }
# -o: mpirun may join two ranks' lines into one
[ "$(grep -o 'rank [0-9]*: group freed' "$T/lifetime/lifetime.log" | sort -u | wc -l)" = 4 ] ||
    { fail "lifetime: not every rank freed its group"; cat "$T/lifetime/lifetime.log" >&2; }

# One rank, no launcher: what the child sees.
cd "$T" || exit 1
mkdir -p usersite && printf 'MARK = "user sitecustomize ran"\n' > usersite/sitecustomize.py
PYTHONPATH=$T/usersite timeout -k 5 120 "$H" -o env.db "$P" -c \
    'import os, sitecustomize; print(os.environ["PYTHONPATH"]); print(sitecustomize.MARK)' > env.log 2>&1 ||
    fail "python -c under htamerge: exit $?"
# Any line: htamerge's own notes (a sweep of an ended run's leftovers) share the log.
grep -q ":$T/usersite\$" env.log || fail "the user's PYTHONPATH is not kept after the bootstrap: $(head -3 env.log)"
grep -q "user sitecustomize ran" env.log || fail "the user's sitecustomize did not run"
HTAMERGE_PYTHON_HOOKS=0 timeout -k 5 120 "$H" -o env0.db "$P" -c 'import os; print(os.environ.get("PYTHONPATH"))' \
    > env0.log 2>&1 || fail "HTAMERGE_PYTHON_HOOKS=0 run: exit $?"
grep -v '^htamerge: ' env0.log | head -1 | grep -qx None ||
    fail "HTAMERGE_PYTHON_HOOKS=0 still set PYTHONPATH: $(grep -v '^htamerge: ' env0.log | head -1)"

# A trace file the program reports where it wrote it: read in place, unchanged.
mkdir -p mine && cp "$SRC/tests/fixtures/gloo/ddp4_none/rank-0.pt.trace.json.gz" mine/
sum0=$(sha256sum mine/rank-0.pt.trace.json.gz | cut -d' ' -f1)
timeout -k 5 120 "$H" -o rep.db "$P" -c '
import sys
hooks = sys.modules["_htamerge_hooks"]
hooks._report_trace("mine/rank-0.pt.trace.json.gz")' > rep.log 2>&1 || fail "reporting a trace file: exit $?"
[ "$(sql1 rep.db "SELECT slices > 1000 FROM files WHERE path = '$T/mine/rank-0.pt.trace.json.gz'")" = 1 ] ||
    { fail "a reported trace file was not read"; cat rep.log >&2; }
[ "$(sha256sum mine/rank-0.pt.trace.json.gz | cut -d' ' -f1)" = "$sum0" ] || fail "a reported trace file changed"

finish "python hooks: ok"

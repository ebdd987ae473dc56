#!/usr/bin/env bash
# On-demand capture in a running job (man htamerge, CAPTURE BUDGET): a real
# 4-rank PyTorch DDP loop over gloo runs under `mpirun -n 4 htamerge`, and
# from another shell `htamerge capture --steps N` asks rank 0, through its
# control socket, for the next N steps in full. On the CPU the Python hooks
# run torch's profiler for exactly those steps. Checks, from the database:
# every rank's "htamerge/capture window" holds the same steps, the ones the
# command printed; each window has the profiler's CPU ops, and no op lies
# outside a window; the command's errors (no job, bad arguments, no steps
# yet) and exit statuses; the same request through the job's server (POST
# /api/capture); the socket is gone after the job. Also a loop
# with no optimizer object (a hand-written SGD update): one step per
# iteration, each with its forward and backward.
set -u
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../tools/serve_port.sh"
H=${HTAMERGE:?}
SRC=${HM_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
PY=$SRC/tests/integration/py
torch_python
"$P" -c 'import torch.distributed as d; assert d.is_available() and d.is_gloo_available()' \
    >/dev/null 2>&1 || skip "$P has no torch with gloo"
mpi_env
hm_tmpdir capreq
export HTAMERGE_CONTROL_DIR=$T/control

# --- the command's errors, without a job --------------------------------------
"$H" capture --steps 3 >"$T/nojob.out" 2>&1
[ $? -eq 2 ] || fail "capture without a job: want exit 2"
grep -q "no running htamerge job" "$T/nojob.out" || fail "capture without a job: $(cat "$T/nojob.out")"
"$H" capture >"$T/noarg.out" 2>&1
[ $? -eq 2 ] || fail "capture without --steps/--seconds: want exit 2"
"$H" capture --steps 0 >/dev/null 2>&1
[ $? -eq 2 ] || fail "capture --steps 0: want exit 2"
"$H" capture --steps 2 --seconds 1 >/dev/null 2>&1
[ $? -eq 2 ] || fail "capture with both --steps and --seconds: want exit 2"

# --- a running job -------------------------------------------------------------
mkdir -p "$T/job" && cd "$T/job" || exit 1
STOP=$T/job/stop
run_mpi 400 -n 4 --bind-to none -x OMP_NUM_THREADS -x HTAMERGE_CONTROL_DIR "$H" -o run.db \
    --serve 127.0.0.1:0 --serve-linger 0 "$PY/ddp_until.py" "$STOP" >job.log 2>&1 &
JOB=$!
# Wait for rank 0's socket and its first steps: "no steps" until then.
capture_when_steps "$H" $JOB 3 req1
REQ1=$(grep -o 'steps [0-9]* to [0-9]*' req1.out | head -1)
grep -q "recorded on rank 0" req1.out || fail "capture did not wait for its steps: $(cat req1.out)"
# The job named by its file, without waiting.
timeout 60 "$H" capture run.db --steps 2 --no-wait >req2.out 2>req2.err ||
    fail "capture run.db --no-wait: $(cat req2.err)"
REQ2=$(grep -o 'steps [0-9]* to [0-9]*' req2.out | head -1)
timeout 60 "$H" capture other.db --steps 2 >/dev/null 2>req3.err
[ $? -eq 2 ] || fail "capture for a file no job writes: want exit 2"
# The same through the job's server (POST /api/capture).
PORT=$(serve_port job.log 300) || fail "the job's server never said its port"
sleep 2
api=$(curl -s -m 10 -X POST -d '{"steps": 2}' "http://127.0.0.1:$PORT/api/capture")
REQ3=$(echo "$api" | grep -o 'steps [0-9]* to [0-9]*' | head -1)
[ -n "$REQ3" ] || fail "POST /api/capture: $api"
code=$(curl -s -m 10 -o /dev/null -w '%{http_code}' -X POST -d '{"steps": 0}' "http://127.0.0.1:$PORT/api/capture")
[ "$code" = 400 ] || fail "POST /api/capture with steps 0: HTTP $code"
code=$(curl -s -m 10 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/api/capture")
[ "$code" = 405 ] || fail "GET /api/capture: HTTP $code"
sleep 3   # rank 0 is a few steps ahead of the request's end
touch "$STOP"
wait $JOB
rc=$?
[ $rc -eq 0 ] || { fail "job exit $rc"; tail -40 job.log >&2; }
ls "$T/control/"*.sock >/dev/null 2>&1 && fail "the control socket outlived the job"

# The steps each rank's windows hold, "rank:first-last" per window.
got=$(capture_windows run.db)
r1=${REQ1#steps }; r1=${r1/ to /-}
r2=${REQ2#steps }; r2=${r2/ to /-}
r3=${REQ3#steps }; r3=${r3/ to /-}
want="0:$r1 0:$r2 0:$r3 1:$r1 1:$r2 1:$r3 2:$r1 2:$r2 2:$r3 3:$r1 3:$r2 3:$r3 "
[ "$got" = "$want" ] || fail "windows by rank: got '$got', want '$want' (requests '$REQ1', '$REQ2')"
# CPU ops: in every window of every rank, and nowhere else.
OPS="SELECT t.rank, count(*) FROM slices s JOIN tracks t ON t.id = s.track JOIN categories c ON c.id = s.cat
     WHERE c.name = 'cpu_op' GROUP BY 1 HAVING count(*) > 20"
[ "$(sqlite3 run.db "$OPS" | wc -l)" -eq 4 ] || fail "CPU ops per rank: $(sqlite3 run.db "$OPS" | tr '\n' ' ')"
OUTSIDE="SELECT count(*) FROM slices s JOIN tracks t ON t.id = s.track JOIN categories c ON c.id = s.cat
         WHERE c.name = 'cpu_op' AND NOT EXISTS (SELECT 1 FROM counters a JOIN strings n ON n.id = a.name
           WHERE n.str = 'htamerge/capture window' AND a.rank = t.rank AND a.value = 1 AND a.ts <= s.ts
             AND (SELECT min(b.ts) FROM counters b WHERE b.rank = a.rank AND b.name = a.name
                  AND b.ts > a.ts AND b.value = 0) >= s.ts + s.dur)"
if [ "$(sqlite3 run.db "$OUTSIDE")" != 0 ]; then
    fail "$(sqlite3 run.db "$OUTSIDE") CPU ops outside the windows"
    sqlite3 run.db "${OUTSIDE/count(\*)/t.rank, s.ts, s.dur, (SELECT str FROM strings WHERE id = s.name)}" | head -5 >&2
    sqlite3 run.db "SELECT c.rank, c.ts, c.value FROM counters c JOIN strings n ON n.id = c.name
                    WHERE n.str = 'htamerge/capture window'" >&2
fi
grep -q "python hooks disabled" job.log && fail "$(grep -m1 'python hooks disabled' job.log)"

# --- a loop without an optimizer object ----------------------------------------
mkdir -p "$T/sgd" && cd "$T/sgd" || exit 1
run_mpi 300 -n 2 --bind-to none -x OMP_NUM_THREADS "$H" -o sgd.db "$PY/manual_sgd.py" 12 >sgd.log 2>&1 ||
    { fail "manual SGD job"; tail -20 sgd.log >&2; }
PHASES="SELECT t.rank, n.str, count(*) FROM slices s JOIN tracks t ON t.id = s.track
        JOIN strings n ON n.id = s.name JOIN categories c ON c.id = s.cat
        WHERE c.name = 'nvtx' AND n.str IN ('step', 'forward', 'backward')
          AND json_extract(s.args, '\$.domain') = 'htamerge' GROUP BY 1, 2 ORDER BY 1, 2"
got=$(sqlite3 sgd.db "$PHASES" | tr '\n' ' ')
want="0|backward|12 0|forward|12 0|step|12 1|backward|12 1|forward|12 1|step|12 "
[ "$got" = "$want" ] || fail "manual SGD phases: got '$got', want '$want'"
src=$(sqlite3 sgd.db "SELECT group_concat(DISTINCT source) FROM steps")
[ "$src" = hooks ] || fail "manual SGD steps' source: '$src'"
finish

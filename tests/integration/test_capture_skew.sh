#!/usr/bin/env bash
# On-demand capture when ranks are far apart in steps: two ranks of real
# PyTorch that share no collective, rank 0 starting its loop once rank 1
# finished 150 steps (py/skewed_ranks.py), so rank 1 runs 150 steps and
# more ahead. `htamerge capture --steps 6` must still record the same six steps
# on both ranks: rank 0 places the request ahead of the rank furthest
# ahead (each collector reports its step, HM_TAG_PROGRESS), not only of
# itself. Before that, rank 1 had passed the first step asked for when the
# request reached it.
set -u
. "$(dirname "$0")/../lib.sh"
H=${HTAMERGE:?}
SRC=${HM_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
PY=$SRC/tests/integration/py
torch_python
mpi_env
hm_tmpdir capskew
export HTAMERGE_CONTROL_DIR=$T/control
cd "$T" || exit 1
STOP=$T/stop
run_mpi 300 -n 2 --bind-to none -x OMP_NUM_THREADS -x HTAMERGE_CONTROL_DIR "$H" -o run.db \
    "$PY/skewed_ranks.py" "$STOP" >job.log 2>&1 &
JOB=$!
capture_when_steps "$H" $JOB 6 req
REQ=$(grep -o 'steps [0-9]* to [0-9]*' req.out | head -1)
sleep 1
touch "$STOP"
wait $JOB
rc=$?
[ $rc -eq 0 ] || { fail "job exit $rc"; tail -30 job.log >&2; }

# The ranks really were apart: rank 1's step count when rank 0 began.
apart=$(sqlite3 run.db "SELECT (SELECT count(*) FROM steps WHERE rank = 1 AND ts <
                          (SELECT min(ts) FROM steps WHERE rank = 0))")
[ "${apart:-0}" -ge 150 ] || fail "rank 1 was only ${apart:-?} steps ahead of rank 0; the test needs more"
got=$(capture_windows run.db)
r=${REQ#steps }; r=${r/ to /-}
[ "$got" = "0:$r 1:$r " ] || fail "windows by rank: got '$got', want '0:$r 1:$r ' (request '$REQ')"
finish

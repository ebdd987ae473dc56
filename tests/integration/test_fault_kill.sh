#!/usr/bin/env bash
# Fault injection, kill -9 (issue 9): of one rank's child, of a collector
# rank and of rank 0 (the merger) in the middle of a run. Each time the job
# must end (bounded), non-zero, and leave a file that opens, passes
# integrity_check and holds whole batches only: htamerge-synth writes 128
# slices per step and one file (one batch) per --cycle steps, so every
# rank's rows must be exactly 128 * steps and steps = cycle * batches.
# test_run.sh covers a crashing/failing child and the basic kill of a rank;
# this one checks the counts and the other victims.
set -u
. "$(dirname "$0")/../lib.sh"
H=${HTAMERGE:?}; S=${HTAMERGE_SYNTH:-$(dirname "$H")/htamerge-synth}
mpi_env
export ASAN_OPTIONS=${ASAN_OPTIONS:-}:detect_leaks=0
# Killed ranks cannot remove their trace folders ($TMPDIR/htamerge-PID-MS):
# keep them in a folder of this test's own (short: Open MPI puts sockets there).
TMPDIR=$(mktemp -d /tmp/hmf.XXXXXX); export TMPDIR
T=$(hm_mktemp fault_kill); trap '[ -n "${KEEP:-}" ] || rm -rf "$T" "$TMPDIR"' EXIT
cd "$T" || exit 1
T=$(pwd -P)
CYCLE=2

# The pid of this test's process named $1 (htamerge or htamerge-synth) that
# runs as rank $2: found by working directory, so that other jobs on the
# machine are never touched.
find_proc() {
    local p
    for p in $(pgrep -x "$1"); do
        [ "$(readlink /proc/$p/cwd 2>/dev/null)" = "$T" ] || continue
        tr '\0' '\n' < /proc/$p/environ 2>/dev/null | grep -qx "$3=$2" && { echo "$p"; return; }
    done
}

# Waits (<= 10 s) until every rank of FILE has committed at least one step.
wait_data() {
    for _ in $(seq 1 100); do
        [ -s "$1" ] && [ "$(sql1 "$1" 'SELECT count(DISTINCT rank) FROM steps' 2>/dev/null)" = "$2" ] && return 0
        sleep 0.1
    done
    return 1
}

# Whole batches only, rank by rank, and a clean file.
check_file() {
    local db=$1 what=$2 bad
    [ "$(sqlite3 "$db" 'PRAGMA integrity_check')" = ok ] || fail "$what: integrity_check"
    bad=$(sql1 "$db" "WITH s AS (SELECT t.rank, count(*) AS n FROM slices s JOIN tracks t ON t.id = s.track GROUP BY 1),
        st AS (SELECT rank, count(*) AS n FROM steps GROUP BY 1)
      SELECT count(*) FROM ranks r LEFT JOIN s ON s.rank = r.rank LEFT JOIN st ON st.rank = r.rank
      WHERE coalesce(s.n, 0) != 128 * coalesce(st.n, 0) OR coalesce(st.n, 0) != $CYCLE * r.batches")
    [ "$bad" = 0 ] || { fail "$what: $bad ranks hold partial batches"; sqlite3 "$db" 'SELECT rank, batches FROM ranks' >&2; }
}

# Leaves no process of this test behind, ranks or their children (mpirun
# may return first; a child whose collector died gets SIGKILL from the kernel).
left() {
    local r
    for r in 0 1 2; do find_proc htamerge $r OMPI_COMM_WORLD_RANK; find_proc htamerge-synth $r RANK; done
}
wait_gone() {
    for _ in $(seq 1 100); do
        [ -z "$(left)" ] && return 0
        sleep 0.1
    done
    fail "$1: processes still running after mpirun returned: $(left | tr '\n' ' ')"
}

# The report judges a "running" file by whether its merger still exists;
# a killed rank may linger a moment as a zombie after mpirun returns.
report_incomplete() {
    for _ in $(seq 1 50); do
        "$H" report "$1" summary > "$2" 2>&1 && grep -q "run_status: incomplete" "$2" && return
        sleep 0.1
    done
}

# 1. kill -9 of rank 1's child: the collector survives, so the run
#    completes, keeps everything the child wrote (counted from its kept
#    trace folder), names the exit code, and the job fails.
run_mpi 90 -n 3 "$H" -o child.db --keep-traces "$S" --steps 120 --cycle $CYCLE > child.log 2>&1 &
mp=$!
wait_data child.db 3 || fail "child: no data after 10 s"
victim=$(find_proc htamerge-synth 1 RANK)
[ -n "$victim" ] && kill -9 "$victim" || fail "child: no child of rank 1 to kill"
wait $mp; rc=$?
[ $rc != 0 ] && [ $rc != 124 ] || fail "child: mpirun exit $rc (124: it hung)"
check_file child.db child
[ "$(sql1 child.db "SELECT value FROM meta WHERE key = 'run_status'")" = complete ] || fail "child: run not complete"
[ "$(sql1 child.db 'SELECT count(*) FROM ranks WHERE complete')" = 3 ] || fail "child: a collector was marked incomplete"
"$H" report child.db summary | grep -q "failed_programs: 1:137" || fail "child: summary does not name rank 1's exit 137"
dir=$(sed -n 's/^htamerge: rank 1 traces kept in //p' child.log)
files=$(find "$dir" -name '*.json*' 2>/dev/null | wc -l)
got=$(sql1 child.db 'SELECT count(*) FROM steps WHERE rank = 1')
[ "$files" -gt 0 ] && [ "$got" = $((files * CYCLE)) ] || fail "child: rank 1 wrote $files files but the file holds $got steps"
[ "$(sql1 child.db 'SELECT count(*) FROM steps WHERE rank = 0')" = 120 ] || fail "child: rank 0 lost steps"
case $dir in */htamerge-*/rank-1) rm -rf "$(dirname "$dir")" ;; esac
echo "kill -9 child: exit $rc; rank 1 kept $got steps from $files files; ranks 0, 2 complete"
wait_gone child

# 2. kill -9 of collector rank 2: mpirun tears the job down; rank 0 writes
#    what arrived and marks the run and the ranks incomplete.
run_mpi 90 -n 3 "$H" -o rank.db "$S" --steps 400 --cycle $CYCLE > rank.log 2>&1 &
mp=$!
wait_data rank.db 3 || fail "rank: no data after 10 s"
victim=$(find_proc htamerge 2 OMPI_COMM_WORLD_RANK)
[ -n "$victim" ] && kill -9 "$victim" || fail "rank: no rank 2 to kill"
wait $mp; rc=$?
wait_gone rank
[ $rc != 0 ] && [ $rc != 124 ] || fail "rank: mpirun exit $rc (124: it hung)"
grep -q "rank 2 .*exited on signal 9" rank.log || fail "rank: the log does not name the dead rank"
check_file rank.db rank
[ "$(sql1 rank.db 'SELECT complete FROM ranks WHERE rank = 2')" = 0 ] || fail "rank: rank 2 not marked incomplete"
report_incomplete rank.db rank.txt
grep -q "run_status: incomplete" rank.txt || { fail "rank: not reported incomplete"; cat rank.txt rank.log >&2; }
echo "kill -9 rank 2: exit $rc; kept $(sql1 rank.db 'SELECT group_concat(n) FROM (SELECT count(*) AS n FROM steps GROUP BY rank)') steps"

# 3. kill -9 of rank 0, the merger: no finishing at all. The WAL file
#    must still open clean with every commit so far, and the report must
#    see that its merger is gone.
run_mpi 90 -n 3 "$H" -o zero.db "$S" --steps 400 --cycle $CYCLE > zero.log 2>&1 &
mp=$!
wait_data zero.db 3 || fail "zero: no data after 10 s"
victim=$(find_proc htamerge 0 OMPI_COMM_WORLD_RANK)
[ -n "$victim" ] && kill -9 "$victim" || fail "zero: no rank 0 to kill"
wait $mp; rc=$?
wait_gone zero
[ $rc != 0 ] && [ $rc != 124 ] || fail "zero: mpirun exit $rc (124: it hung)"
grep -q "rank 0 .*exited on signal 9" zero.log || fail "zero: the log does not name rank 0"
check_file zero.db zero
[ "$(sql1 zero.db 'SELECT count(DISTINCT rank) FROM steps')" = 3 ] || fail "zero: committed data lost"
report_incomplete zero.db zero.txt
grep -q "run_status: incomplete" zero.txt || { fail "zero: not reported incomplete"; cat zero.txt >&2; }
echo "kill -9 rank 0: exit $rc; kept $(sql1 zero.db 'SELECT count(*) FROM steps') steps"

# The killed ranks could not remove their shared-memory rings (64 MiB of
# memory each, in /dev/shm); the next run on the host removes them. The
# jobs of this test are the trace folders in its own TMPDIR.
jobs=$(cd "$TMPDIR" && ls -d htamerge-* 2>/dev/null)
left=0
for j in $jobs; do left=$((left + $(ls /dev/shm | grep -c "^htamerge-$j-"))); done
[ "$left" -gt 0 ] || fail "rings: the killed runs left none behind (nothing to check)"
# Their creators (the collectors, pid after "-p") may still be exiting.
for j in $jobs; do
    for pid in $(ls /dev/shm | grep "^htamerge-$j-" | sed 's/.*-p//'); do
        for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    done
done
run_mpi 60 -n 2 "$H" -o again.db "$S" --steps 2 --cycle 2 > again.log 2>&1 || fail "rings: the next run failed"
grep -q "removed .* shared-memory rings of ended runs" again.log || fail "rings: the next run did not say it removed any"
for j in $jobs; do
    ls /dev/shm | grep -q "^htamerge-$j-" && fail "rings: /dev/shm still holds rings of $j"
done
echo "rings: $left left by killed ranks, removed by the next run"

finish

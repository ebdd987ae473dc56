#!/usr/bin/env bash
# Fault injection, the disk fills (issue 9): the output lives on a small
# tmpfs. A live run that fills it mid-way must stop the whole job at once
# (no rank left waiting), exit non-zero, say "disk is full", and leave a
# file that passes integrity_check with whole batches only and says why it
# ends there (run_status "failed: ... disk is full", written with the space
# the merger held in reserve, PATH-reserve, which is gone); a run whose
# disk is full from the start fails the same way; ingest (temporary file +
# rename) leaves no file at all. Skipped where mounting is not permitted.
set -u
. "$(dirname "$0")/../lib.sh"
H=${HTAMERGE:?}; S=${HTAMERGE_SYNTH:-$(dirname "$H")/htamerge-synth}
mpi_env
export ASAN_OPTIONS=${ASAN_OPTIONS:-}:detect_leaks=0
# Killed ranks cannot remove their trace folders ($TMPDIR/htamerge-PID-MS):
# keep them in a folder of this test's own (short: Open MPI puts sockets there).
TMPDIR=$(mktemp -d /tmp/hmf.XXXXXX); export TMPDIR
T=$(hm_mktemp fault_disk)
cd "$T" || exit 1
T=$(pwd -P)
mkdir mnt
cleanup() { cd /; [ -n "${KEEP:-}" ] && mkdir -p "$T/kept" && cp -a "$T/mnt/." "$T/kept/"; umount "$T/mnt" 2>/dev/null; [ -n "${KEEP:-}" ] || rm -rf "$T" "$TMPDIR"; }
trap cleanup EXIT
if ! mount -t tmpfs -o size=8m tmpfs mnt 2>/dev/null; then
    skip "cannot mount a tmpfs here (not root, or no CAP_SYS_ADMIN)"
fi
mine() { # processes of this test still running (found by working directory)
    local p n=0
    for p in $(pgrep -x htamerge) $(pgrep -x htamerge-synth); do
        [ "$(readlink /proc/$p/cwd 2>/dev/null)" = "$T" ] && n=$((n + 1))
    done
    echo $n
}
wait_gone() {
    for _ in $(seq 1 100); do [ "$(mine)" = 0 ] && return 0; sleep 0.1; done
    fail "$1: processes still running after mpirun returned"
}

# 1. Full mid-run: 3 ranks x 300 steps is ~20 MB of WAL, the disk holds 8
#    (1 of them the merger's reserve).
t0=$(date +%s)
run_mpi 90 -n 3 "$H" -o mnt/run.db "$S" --steps 300 --step-ms 10 --cycle 2 > run.log 2>&1
rc=$?
wait_gone mid-run
secs=$(( $(date +%s) - t0 ))
[ $rc != 0 ] && [ $rc != 124 ] || fail "mid-run: mpirun exit $rc (124: it hung)"
grep -q "mnt/run.db: .*disk is full" run.log || { fail "mid-run: no 'disk is full' message"; cat run.log >&2; }
[ "$(sqlite3 mnt/run.db 'PRAGMA integrity_check')" = ok ] || fail "mid-run: integrity_check"
bad=$(sql1 mnt/run.db "WITH s AS (SELECT t.rank, count(*) AS n FROM slices s JOIN tracks t ON t.id = s.track GROUP BY 1),
    st AS (SELECT rank, count(*) AS n FROM steps GROUP BY 1)
  SELECT count(*) FROM ranks r LEFT JOIN s ON s.rank = r.rank LEFT JOIN st ON st.rank = r.rank
  WHERE coalesce(s.n, 0) != 128 * coalesce(st.n, 0) OR coalesce(st.n, 0) != 2 * r.batches")
[ "$bad" = 0 ] || fail "mid-run: $bad ranks hold partial batches"
kept=$(sql1 mnt/run.db 'SELECT count(*) FROM steps')
[ "${kept:-0}" -gt 0 ] || fail "mid-run: nothing committed before the disk filled"
[ "$(sql1 mnt/run.db 'SELECT count(*) FROM ranks WHERE complete')" = 0 ] || fail "mid-run: ranks marked complete"
status=$(sql1 mnt/run.db "SELECT value FROM meta WHERE key = 'run_status'")
case $status in
"failed: "*"disk is full"*) ;;
*) fail "mid-run: run_status '$status', expected 'failed: ... disk is full'" ;;
esac
[ ! -e mnt/run.db-reserve ] || fail "mid-run: the reserve file is left behind"
"$H" report mnt/run.db summary > sum.txt 2>&1
grep -q "run_status: failed: .*disk is full" sum.txt || { fail "mid-run: report does not say it failed"; cat sum.txt >&2; }
echo "disk full mid-run: exit $rc after $secs s, $kept steps committed, file intact"

# 2. Full before the first commit: same outcome, nothing to keep.
rm -f mnt/*
head -c $((8 * 1024 * 1024)) /dev/zero > mnt/filler 2>/dev/null
run_mpi 60 -n 2 "$H" -o mnt/start.db "$S" --steps 4 > start.log 2>&1
rc=$?
wait_gone start
[ $rc != 0 ] && [ $rc != 124 ] || fail "full at start: mpirun exit $rc (124: it hung)"
grep -q "mnt/start.db: .*disk is full" start.log || { fail "full at start: no 'disk is full' message"; cat start.log >&2; }
rm -f mnt/*

# 3. ingest writes a temporary file and renames it: on a full disk it
#    fails with the reason and leaves neither file behind.
umount mnt && mount -t tmpfs -o size=2m tmpfs mnt || fail "remount"
"$H" ingest -o mnt/x.db "$HM_SOURCE_DIR/tests/fixtures/hta/nccl_parser_config" > ingest.log 2>&1
rc=$?
[ $rc = 1 ] || fail "ingest on a full disk: exit $rc, expected 1"
grep -q "mnt/x.db: .*disk is full" ingest.log || fail "ingest on a full disk: no 'disk is full' message"
[ -z "$(ls -A mnt)" ] || fail "ingest on a full disk left files: $(ls -A mnt)"

finish

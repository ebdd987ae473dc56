#!/usr/bin/env bash
# Fault injection, bad trace files during a run (issue 9): the program
# writes, into its HTAMERGE_TRACE_DIR, one good trace plus a truncated one,
# an empty one, a ".json.gz" of random bytes, one that grows by appends
# (closed after each, so it is seen before it is whole) and one shrunk
# right after it was written. Every rank must survive, name every bad file
# with its byte offset and reason, keep the good data and finish the run.
# The grown file is read again after each round, so its refused partial
# rounds give way to the whole one: its data is kept and it is not
# reported. The shrunk file's cut round is refused (its first round is
# kept when it was read before the cut). The run then exits 3 (as ingest
# --keep-going), and says how many files were refused; a program's own
# non-zero status still wins.
set -u
. "$(dirname "$0")/../lib.sh"
H=${HTAMERGE:?}; S=${HTAMERGE_SYNTH:-$(dirname "$H")/htamerge-synth}
mpi_env
export ASAN_OPTIONS=${ASAN_OPTIONS:-}:detect_leaks=0
hm_tmpdir fault_traces
cd "$T" || exit 1

mkdir gen
HTAMERGE_TRACE_DIR=gen RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 "$S" --steps 4 --cycle 2 --step-ms 5 2>/dev/null
[ "$(ls gen | wc -l)" = 2 ] || { echo "FAIL: htamerge-synth wrote no traces"; exit 1; }
cat > writer.sh <<'SH'
#!/bin/bash
D=$HTAMERGE_TRACE_DIR G=$1
f=( "$G"/*.json )
cp "${f[0]}" "$D/good.pt.trace.json"
head -c 40000 "${f[1]}" > "$D/truncated.pt.trace.json"
: > "$D/empty.pt.trace.json"
# No 1f first byte: gz_load then names byte 1, not byte 0 (1 run in 128 failed so).
head -c 5000 /dev/urandom | tr '\037' x > "$D/garbage.pt.trace.json.gz"
n=$(stat -c %s "${f[1]}"); q=$((n / 4 + 1))
for i in 0 1 2 3; do
    dd if="${f[1]}" bs=$q skip=$i count=1 status=none >> "$D/growing.pt.trace.json"
    sleep 0.3
done
cp "${f[1]}" "$D/shrunk.pt.trace.json"; truncate -s 1000 "$D/shrunk.pt.trace.json"
sleep 0.5
SH
chmod +x writer.sh

run_mpi 60 -n 2 "$H" -o tr.db ./writer.sh "$T/gen" > tr.log 2>&1
rc=$?
[ $rc = 3 ] || { fail "run exit $rc, expected 3 (trace files refused)"; cat tr.log >&2; }
refused=$(sql1 tr.db "SELECT sum(count) FROM skipped WHERE reason = 'unreadable_file'")
grep -q "^htamerge: wrote tr.db (2 ranks, run complete; $refused trace files refused: see \`htamerge report tr.db summary\`)\$" tr.log ||
    fail "no final line naming the $refused refused files: $(grep 'wrote' tr.log)"
[ "$(sqlite3 tr.db 'PRAGMA integrity_check')" = ok ] || fail "integrity_check"
[ "$(sql1 tr.db "SELECT value FROM meta WHERE key = 'run_status'")" = complete ] || fail "run not complete"
for r in 0 1; do
    for f in truncated empty garbage shrunk; do
        grep -q "rank $r: skipping .*/$f\.pt\.trace\.json[.gz]*: byte [0-9]*: ." tr.log ||
            fail "rank $r: $f file not reported with its byte offset"
    done
    # Random bytes named .json.gz: the same reason on every rank.
    grep -q "rank $r: skipping .*/garbage\.pt\.trace\.json\.gz: byte 0: not a gzip file (no 1f 8b header" tr.log ||
        fail "rank $r: garbage .json.gz not reported as not gzip"
    # ... and in the database: one unreadable_file row per refused file.
    bad=$(sql1 tr.db "SELECT count(*) FROM skipped WHERE rank = $r AND reason = 'unreadable_file'
                      AND (file GLOB '*/truncated.pt.trace.json' OR file GLOB '*/empty.pt.trace.json'
                           OR file GLOB '*/garbage.pt.trace.json.gz' OR file GLOB '*/shrunk.pt.trace.json')")
    [ "$bad" = 4 ] || fail "rank $r: $bad of 4 refused files in the skipped table"
    grep -q "rank $r: skipping .*/growing\.pt\.trace\.json" tr.log && fail "rank $r: the grown file was refused"
    [ "$(sql1 tr.db "SELECT count(*) FROM skipped WHERE rank = $r AND file GLOB '*/growing*'")" = 0 ] ||
        fail "rank $r: the grown file is in the skipped table"
    # The good and the grown file always (each once: the grown one's rounds
    # are not read twice); the shrunk one if it was read before the cut.
    n=$(sql1 tr.db "SELECT count(*) FROM slices s JOIN tracks t ON t.id = s.track WHERE t.rank = $r")
    [ "$n" = 512 ] || [ "$n" = 768 ] || fail "rank $r: $n slices, expected the good and grown files' 512 (+256)"
done
grep -qi "sigbus\|sigsegv\|core dumped\|signal" tr.log && fail "a rank died: $(grep -i signal tr.log | head -1)"
"$H" report tr.db summary | grep -q unreadable_file || fail "report summary does not show the refused files"
echo "bad traces: $(grep -c skipping tr.log) files reported, $(sql1 tr.db 'SELECT count(*) FROM files') read, exit $rc"

# A program's non-zero status wins over refused files (mpirun reports the
# first non-zero one: rank 0 must not add its 3); one rank alone exits 3.
cat > failer.sh <<'SH'
#!/bin/bash
head -c 300 /dev/urandom | tr '\037' x > "$HTAMERGE_TRACE_DIR/garbage.pt.trace.json.gz"
[ "$RANK" = 1 ] && exit 7
exit 0
SH
chmod +x failer.sh
run_mpi 60 -n 2 "$H" -o fail.db ./failer.sh > fail.log 2>&1
rc=$?
[ $rc = 7 ] || { fail "failing program with refused files: exit $rc, expected 7"; cat fail.log >&2; }
timeout -k 5 60 "$H" -o one.db ./failer.sh > one.log 2>&1
rc=$?
[ $rc = 3 ] || { fail "one rank with a refused file: exit $rc, expected 3"; cat one.log >&2; }
grep -q "run complete; 1 trace file refused: see" one.log || fail "one rank: no refused count in $(grep wrote one.log)"

finish

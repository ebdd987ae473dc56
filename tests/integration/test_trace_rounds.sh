#!/usr/bin/env bash
# A trace file written in several rounds under one name (RELIABILITY.md,
# found item 3): a handler that exports every profiler cycle to the same
# file name rewrites it, and the collector must read each round once: both
# cycles' events are kept, a close that changed nothing reads nothing
# again, and nothing is refused.
set -u
. "$(dirname "$0")/../lib.sh"
H=${HTAMERGE:?}; S=${HTAMERGE_SYNTH:-$(dirname "$H")/htamerge-synth}
mpi_env
export ASAN_OPTIONS=${ASAN_OPTIONS:-}:detect_leaks=0
hm_tmpdir trace_rounds
cd "$T" || exit 1

mkdir gen
HTAMERGE_TRACE_DIR=gen RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 "$S" --steps 4 --cycle 2 --step-ms 5 2>/dev/null
[ "$(ls gen | wc -l)" = 2 ] || { echo "FAIL: htamerge-synth wrote no traces"; exit 1; }
# What each cycle holds alone (ingest takes one file per rank).
want=0 want_steps=0 i=0
for f in gen/*.json; do
    "$H" ingest -o "ref$i.db" "$f" > /dev/null 2>&1 || { echo "FAIL: ingest of $f"; exit 1; }
    want=$((want + $(sql1 "ref$i.db" "SELECT count(*) FROM slices")))
    want_steps=$((want_steps + $(sql1 "ref$i.db" "SELECT count(*) FROM steps")))
    i=$((i + 1))
done
cat > writer.sh <<'SH'
#!/bin/bash
f=( "$1"/*.json )
cat "${f[0]}" > "$HTAMERGE_TRACE_DIR/cycle.pt.trace.json"
sleep 0.5
cat "${f[1]}" > "$HTAMERGE_TRACE_DIR/cycle.pt.trace.json"
sleep 0.5
: >> "$HTAMERGE_TRACE_DIR/cycle.pt.trace.json"   # opened for writing, closed, unchanged
sleep 0.3
SH
chmod +x writer.sh
timeout -k 5 60 "$H" -o run.db ./writer.sh "$T/gen" > run.log 2>&1
rc=$?
[ $rc = 0 ] || { fail "run exit $rc"; cat run.log >&2; }
grep -q skipping run.log && fail "a round was refused: $(grep skipping run.log)"
[ "$(sql1 run.db "SELECT count(*) FROM skipped WHERE reason = 'unreadable_file'")" = 0 ] || fail "refused files recorded"
got=$(sql1 run.db "SELECT count(*) FROM slices")
[ "$got" = "$want" ] || fail "$got slices, want both cycles' $want"
[ "$(sql1 run.db "SELECT count(*) FROM steps")" = "$want_steps" ] || fail "steps of a cycle lost or doubled"
finish "trace rounds: ok ($got slices from 2 rounds of one file)"

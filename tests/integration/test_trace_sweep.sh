#!/usr/bin/env bash
# Run folders left behind by killed runs (RELIABILITY.md): rank 0 of the
# next run removes $TMPDIR/htamerge-PID-MS folders of ended runs (dead pid,
# untouched for 10 minutes, no KEEP file) and says so; a live run's folder,
# a kept one and the run's own are handled right. Unit test of the rules:
# tests/unit/collector/test_trace_sweep.c.
set -u
. "$(dirname "$0")/../lib.sh"
H=${HTAMERGE:?}; S=${HTAMERGE_SYNTH:-$(dirname "$H")/htamerge-synth}
mpi_env
export ASAN_OPTIONS=${ASAN_OPTIONS:-}:detect_leaks=0
hm_tmpdir trace_sweep
cd "$T" || exit 1
folders() { (cd tmp && ls -d htamerge-* 2>/dev/null | sort | tr '\n' ' '); }

mkdir tmp
export TMPDIR=$T/tmp
sh -c 'exit 0' & dead=$!; wait $dead
mkdir -p "tmp/htamerge-$dead-1000/rank-1" "tmp/htamerge-$dead-2000/rank-0" "tmp/htamerge-$$-3000"
echo '{}' > "tmp/htamerge-$dead-1000/rank-1/a.pt.trace.json"
: > "tmp/htamerge-$dead-2000/KEEP"
touch -d '1 hour ago' "tmp/htamerge-$dead-1000" "tmp/htamerge-$dead-2000" "tmp/htamerge-$$-3000"

run_mpi 60 -n 2 "$H" -o run.db "$S" --steps 2 > run.log 2>&1 || { fail "run exit $?"; cat run.log >&2; }
grep -q "htamerge: removed 1 leftover trace folder of ended runs from $TMPDIR\$" run.log ||
    { fail "no 'removed 1 leftover' line"; cat run.log >&2; }
[ -e "tmp/htamerge-$dead-1000" ] && fail "the dead run's folder is still there"
[ -e "tmp/htamerge-$dead-2000/KEEP" ] || fail "the kept folder was removed"
[ -e "tmp/htamerge-$$-3000" ] || fail "the live pid's folder was removed"
want=$(printf '%s\n' "htamerge-$dead-2000" "htamerge-$$-3000" | sort | tr '\n' ' ')
[ "$(folders)" = "$want" ] || fail "left: $(folders), expected $want"

# --keep-traces: its folder is marked, and an aged copy survives the next run.
run_mpi 60 -n 2 "$H" -o keep.db --keep-traces "$S" --steps 2 > keep.log 2>&1 || fail "keep run exit $?"
kept=$(sed -n 's/^htamerge: rank 0 traces kept in \(.*\)\/rank-0$/\1/p' keep.log)
[ -n "$kept" ] && [ -e "$kept/KEEP" ] && [ -d "$kept/rank-1" ] || fail "kept folder '$kept' lacks KEEP or rank-1"
touch -d '1 hour ago' "$kept"
run_mpi 60 -n 2 "$H" -o run2.db "$S" --steps 2 > run2.log 2>&1 || fail "second run exit $?"
grep -q "leftover" run2.log && fail "second run removed something: $(grep leftover run2.log)"
[ -d "$kept/rank-0" ] || fail "the kept run's folder was swept"
[ "$(folders | wc -w)" = 3 ] || fail "left after the second run: $(folders)"
finish

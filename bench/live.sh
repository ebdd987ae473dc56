#!/usr/bin/env bash
# Live-run benchmarks (issue 3, items 5 and 7), side by side in one run:
#   1. merge throughput: 8 ranks stream records through the live-capture ring
#      (tests/tools/ring_producer) to the merger; records/s into SQLite;
#   2. collector overhead: htamerge-synth on 4 ranks alone vs under htamerge,
#      wall time and the collectors' own CPU time (HTAMERGE_STATS);
#   3. parallel ingest: the bench corpus (bench/make_corpus.py) with one
#      process vs `mpirun -n 3` and `-n 5` (readers on ranks 1..N-1).
# Usage: BUILD_DIR=build bash bench/live.sh   (prints a markdown table)
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
B=${BUILD_DIR:-build}; case $B in /*) ;; *) B=$ROOT/$B ;; esac
H=$B/htamerge; S=$B/htamerge-synth; R=$B/ring_producer
W=${BENCH_DIR:-/tmp/htamerge-bench}/live; mkdir -p "$W"; cd "$W"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
now() { date +%s.%N; }
med() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
REPS=${REPS:-3}

# 1. Merge throughput.
N=${RECORDS:-250000}
for i in $(seq "$REPS"); do
    t0=$(now); HTAMERGE_STATS=1 timeout -k 5 300 mpirun -n 8 -x HTAMERGE_STATS "$H" -o ring.db "$R" --records "$N" > ring.log 2>&1; t1=$(now)
    rows=$("$H" sql ring.db "SELECT count(*) FROM slices" --format csv | tail -1)
    echo "$(echo "$rows / ($t1 - $t0)" | bc -l) $rows $(echo "$t1 - $t0" | bc -l)"
done > merge.txt
read -r rate rows wall < <(sort -n merge.txt | awk '{a[NR]=$0} END {print a[int((NR+1)/2)]}')
stream=$(grep -o 'merger wrote [0-9]* records in [0-9.]* s of writing + [0-9.]* s of decoding ([0-9]* records/s)' ring.log | head -1)
dropped=$("$H" sql ring.db "SELECT coalesce(max(value),0) FROM counters c JOIN strings s ON s.id=c.name WHERE s.str LIKE '%dropped%'" --format csv | tail -1)

# 2. Collector overhead: the same schedule with and without collection.
STEPS=${STEPS:-40}
alone() {
    local start=$(( $(date +%s%N) + 300000000 ))
    for r in 0 1 2 3; do
        RANK=$r WORLD_SIZE=4 LOCAL_RANK=$r HTAMERGE_TRACE_DIR=$W/alone/$r HTAMERGE_RUN_START_NS=$start \
            "$S" --steps "$STEPS" 2>/dev/null &
    done
    wait
}
for i in $(seq "$REPS"); do rm -rf alone; t0=$(now); alone; t1=$(now); echo "$t1 - $t0" | bc -l; done | med > alone.txt
for i in $(seq "$REPS"); do
    t0=$(now); HTAMERGE_STATS=1 timeout -k 5 300 mpirun -n 4 -x HTAMERGE_STATS "$H" -o syn.db "$S" --steps "$STEPS" > syn.log 2>&1; t1=$(now)
    echo "$t1 - $t0" | bc -l
done | med > with.txt
cpu=$(grep htamerge-stats syn.log | awk '{u+=$5; s+=$7; n++} END {printf "%.3f", (u+s)/n}')

# 3. Parallel ingest of the corpus.
C=${BENCH_DIR:-/tmp/htamerge-bench}/corpus
[ -d "$C" ] || python3 "$ROOT/bench/make_corpus.py" "$C"
ing() { for i in $(seq "$REPS"); do t0=$(now); "$@" > /dev/null 2>&1; t1=$(now); echo "$t1 - $t0" | bc -l; done | med; }
one=$(ing "$H" ingest -q -o one.db "$C")
n3=$(ing timeout -k 5 300 mpirun -n 3 "$H" ingest -q -o n3.db "$C")
n5=$(ing timeout -k 5 300 mpirun -n 5 "$H" ingest -q -o n5.db "$C")

cat <<MD
| measurement | value |
|---|---|
| merge: 8 ranks x $N ring records, wall (incl. MPI start, finish, indexes) | $(printf %.2f "$wall") s |
| merge throughput, records/s into SQLite (whole job) | $(printf %.0f "$rate") |
| merger while streaming (HTAMERGE_STATS) | ${stream:-n/a} |
| ring records dropped | ${dropped:-0} |
| synth 4 ranks x $STEPS steps alone, wall | $(printf %.2f "$(cat alone.txt)") s |
| same under \`mpirun -n 4 htamerge\`, wall | $(printf %.2f "$(cat with.txt)") s |
| collector CPU per rank (user+sys) | $cpu s |
| ingest corpus, one process | $(printf %.2f "$one") s |
| ingest corpus, \`mpirun -n 3\` (2 readers) | $(printf %.2f "$n3") s ($(echo "$one / $n3" | bc -l | xargs printf %.2f)x) |
| ingest corpus, \`mpirun -n 5\` (4 readers) | $(printf %.2f "$n5") s ($(echo "$one / $n5" | bc -l | xargs printf %.2f)x) |
MD

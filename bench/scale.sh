#!/usr/bin/env bash
# Ingest wall time and peak memory against the number of ranks (issue 20,
# item 3):
# makes synthetic corpora of N ranks with `htamerge-synth --ranks N` (2 files
# and 1,024 slices per rank, the collectives carrying N-long "Process Group
# Ranks" lists as PyTorch writes them), ingests each with every build given,
# and prints one table, each figure the median of REPS runs measured in one
# sitting. Not a test: nothing fails on a number.
#
#   bash bench/scale.sh
#
# Environment:
#   BUILD_DIR       build to measure (default build)
#   BASE_BUILD_DIR  a second build (say, before a change), measured side by side
#   RANKS           rank counts (default "16 64 1024")
#   REPS            runs per cell (default 3)
#   CORPUS_DIR      where the synthetic corpora live and are reused
#                   (default /tmp/htamerge-bench/scale)
#   REAL_CORPUS     a folder of real traces measured too, once per build
#                   (default /tmp/c64 when it exists: 64 x 55 MB made by
#                   `python3 bench/make_corpus.py /tmp/c64 --ranks 64 --target-mb 55`;
#                   empty: skip)
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-build}
case $BUILD_DIR in /*) ;; *) BUILD_DIR=$ROOT/$BUILD_DIR ;; esac
BASE_BUILD_DIR=${BASE_BUILD_DIR:-}
case $BASE_BUILD_DIR in /* | '') ;; *) BASE_BUILD_DIR=$ROOT/$BASE_BUILD_DIR ;; esac
RANKS=${RANKS:-16 64 1024}
REPS=${REPS:-3}
CORPUS_DIR=${CORPUS_DIR:-/tmp/htamerge-bench/scale}
if [ -z "${REAL_CORPUS+set}" ]; then REAL_CORPUS=/tmp/c64; [ -d "$REAL_CORPUS" ] || REAL_CORPUS=; fi
START_NS=1700000000000000000   # in the past: the synthetic ranks run at once

builds=("$BUILD_DIR")
[ -n "$BASE_BUILD_DIR" ] && builds=("$BASE_BUILD_DIR" "$BUILD_DIR")
for b in "${builds[@]}"; do
    [ -x "$b/htamerge" ] || { echo "scale.sh: no $b/htamerge (set BUILD_DIR)" >&2; exit 2; }
done
SYN=$BUILD_DIR/htamerge-synth
[ -x "$SYN" ] || { echo "scale.sh: no $SYN" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "scale.sh: needs /usr/bin/time (apt-get install time)" >&2; exit 2; }
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT

# corpus N: the folder of the N-rank corpus, made once (a .done marker says complete).
corpus() {
    local n=$1 d=$CORPUS_DIR/ranks-$1
    if [ ! -f "$d/.done" ]; then
        rm -rf "$d"
        HTAMERGE_TRACE_DIR=$d HTAMERGE_RUN_START_NS=$START_NS \
            "$SYN" --ranks "$n" --steps 8 --gzip --straggler "$((n / 2 + 5)):20" 2>/dev/null
        touch "$d/.done"
    fi
    echo "$d"
}

# median of the numbers on stdin
median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

# measure BUILD DIR REPS: prints "wall_s peak_kb slices" (medians)
measure() {
    local b=$1 dir=$2 reps=$3 i
    : > "$work/runs"
    for ((i = 0; i < reps; i++)); do
        rm -f "$work/x.db"
        /usr/bin/time -f '%e %M' -o "$work/t" "$b/htamerge" ingest -q -o "$work/x.db" "$dir"
        cat "$work/t" >> "$work/runs"
    done
    echo "$(cut -d' ' -f1 "$work/runs" | median) $(cut -d' ' -f2 "$work/runs" | median)" \
         "$("$b/htamerge" sql "$work/x.db" 'SELECT count(*) FROM slices' --format csv | tail -n 1)"
}

row() {   # row NAME RANKS BUILD DIR REPS
    local m wall kb sl
    m=$(measure "$3" "$4" "$5"); read -r wall kb sl <<< "$m"
    awk -v c="$1" -v n="$2" -v b="$3" -v w="$wall" -v k="$kb" -v s="$sl" -v r="$5" 'BEGIN {
        printf "| %s | %d | %d | %s | %.2f | %.0f | %.1f | %.0f | %d |\n",
               c, n, s, b, w, k / 1024, 1000 * w / n, k / n, r }'
}

echo "load before: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores"
echo
echo "| corpus | ranks | slices | build | wall s | peak RSS MB | ms per rank | KB per rank | runs |"
echo "|---|---:|---:|---|---:|---:|---:|---:|---:|"
for n in $RANKS; do
    d=$(corpus "$n")
    for b in "${builds[@]}"; do row "synthetic" "$n" "$b" "$d" "$REPS"; done
done
if [ -n "$REAL_CORPUS" ]; then
    n=$(find "$REAL_CORPUS" -maxdepth 1 -name '*.json*' | wc -l)
    for b in "${builds[@]}"; do row "$(basename "$REAL_CORPUS")" "$n" "$b" "$REAL_CORPUS" 1; done
fi
echo
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"

#!/usr/bin/env bash
# Two builds side by side, interleaved in one sitting (issue 21): on a shared
# 2-core machine lone absolute times drift by tens of per cent between
# minutes, so each round runs zcat (the floor), the old build and the new
# build back to back, and the table gives medians and ratios.
#
#   bench/ab.sh OLD_BUILD_DIR NEW_BUILD_DIR [CORPUS_DIR]
#
# End to end = `htamerge ingest` then `report temporal`, `report idle` and
# `report overlap` (what a user runs; the reports take ~10 ms each).
# Environment: REPS (default 5), INGEST_ARGS (extra ingest options),
# BENCH_DIR (scratch, default /tmp/htamerge-bench), STATS=1 (also print the
# new build's HTAMERGE_STATS stage times of one more run).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
[ $# -ge 2 ] || { echo "usage: bench/ab.sh OLD_BUILD_DIR NEW_BUILD_DIR [CORPUS_DIR]" >&2; exit 2; }
OLD=$(cd "$1" && pwd)/htamerge NEW=$(cd "$2" && pwd)/htamerge
BENCH_DIR=${BENCH_DIR:-/tmp/htamerge-bench}
CORPUS=${3:-$BENCH_DIR/corpus}
REPS=${REPS:-5}
W=$BENCH_DIR/ab; mkdir -p "$W"
read -r -a XARGS <<<"${INGEST_ARGS:-}"
if [ ! -d "$CORPUS" ]; then python3 "$ROOT/bench/make_corpus.py" "$CORPUS" --json >&2; fi
FILES=("$CORPUS"/*.json.gz)
[ -e "${FILES[0]}" ] || FILES=("$CORPUS"/*.json)
cat "${FILES[@]}" >/dev/null   # warm the page cache
json=$(for f in "${FILES[@]}"; do gzip -dcf "$f"; done | wc -c)

now() { date +%s.%N; }
# e2e TAG BIN: one ingest + three reports; appends "TAG wall user sys rss_kb".
e2e() {
    local tag=$1 bin=$2 db=$W/$1.db t0 t1
    rm -f "$db"
    t0=$(now)
    /usr/bin/time -f '%U %S %M' -o "$W/time.$tag" "$bin" ingest -q "${XARGS[@]}" -o "$db" "$CORPUS"
    for t in temporal idle overlap; do "$bin" report "$db" "$t" >/dev/null; done
    t1=$(now)
    echo "$tag $(echo "$t1 - $t0" | bc -l) $(cat "$W/time.$tag")" >>"$W/runs.txt"
}
: >"$W/runs.txt"
for i in $(seq "$REPS"); do
    t0=$(now); for f in "${FILES[@]}"; do zcat -f "$f"; done >/dev/null; t1=$(now)
    echo "zcat $(echo "$t1 - $t0" | bc -l) 0 0 0" >>"$W/runs.txt"
    # Alternate which build goes first so neither always runs on a cooler machine.
    if [ $((i % 2)) = 1 ]; then e2e old "$OLD"; e2e new "$NEW"; else e2e new "$NEW"; e2e old "$OLD"; fi
    echo "round $i/$REPS: $(tail -3 "$W/runs.txt" | awk '{printf "%s %.2f  ", $1, $2}')" >&2
done
med() { awk -v t="$1" -v c="$2" '$1 == t { print $c }' "$W/runs.txt" | sort -n |
        awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
runs() { awk -v t="$1" '$1 == t { printf "%.2f ", $2 }' "$W/runs.txt"; }
z=$(med zcat 2)
printf '%s JSON in %d files, %d rounds (median)\n\n' "$(awk -v b="$json" 'BEGIN { printf "%.1f MB", b / 1e6 }')" \
    "${#FILES[@]}" "$REPS"
echo "| | wall s (runs) | median wall | / zcat | MB/s JSON | user s | sys s | peak RSS MB |"
echo "|---|---|---|---|---|---|---|---|"
printf '| zcat (the floor) | %s| %.2f | 1.00x | %.0f | | | |\n' "$(runs zcat)" "$z" "$(echo "$json / 1000000 / $z" | bc -l)"
for t in old new; do
    m=$(med $t 2)
    printf '| %s (%s) | %s| %.2f | %.2fx | %.0f | %.2f | %.2f | %.0f |\n' "$t" "$([ $t = old ] && echo "$1" || echo "$2")" \
        "$(runs $t)" "$m" "$(echo "$m / $z" | bc -l)" "$(echo "$json / 1000000 / $m" | bc -l)" \
        "$(med $t 3)" "$(med $t 4)" "$(echo "$(med $t 5) / 1024" | bc -l)"
done
printf '\nnew / old (median wall): %.3f\n' "$(echo "$(med new 2) / $(med old 2)" | bc -l)"
if [ "${STATS:-0}" = 1 ]; then
    rm -f "$W/stats.db"
    HTAMERGE_STATS=1 "$NEW" ingest -q "${XARGS[@]}" -o "$W/stats.db" "$CORPUS" 2>&1 | grep -v cross-rank
fi

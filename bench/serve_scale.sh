#!/usr/bin/env bash
# `htamerge serve` at scale (issue 20, item 2): what a viewer session
# costs the server on a file of many ranks. From the repo root:
#
#   bash bench/serve_scale.sh FILE.db [FILE.db ...]
#
# For each file, with the page cache dropped first when allowed (root):
#   - the first /api/run (what the page asks first), /api/ranks and the
#     whole-run /api/heatmap as the Overview asks it (600 columns, at most
#     700 rows): time and size;
#   - then a scripted session like the viewer's: for every block of 16 ranks
#     (the most one /api/timeline request names), the whole-run timeline of
#     those ranks, their summary rows (/api/heatmap) and three zoomed
#     windows; the largest answer, the slowest request and the server's
#     peak resident memory (VmRSS, sampled after each block).
# Prints one markdown row per file. Environment: BUILD_DIR (default build),
# MEMORY_MB (serve --memory; default: the server's own, 512).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-build}
case $BUILD_DIR in /*) ;; *) BUILD_DIR=$ROOT/$BUILD_DIR ;; esac
HM=$BUILD_DIR/htamerge
. "$ROOT/tests/tools/serve_port.sh"
[ $# -ge 1 ] || { echo "usage: bash bench/serve_scale.sh FILE.db [FILE.db ...]" >&2; exit 2; }
T=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$T"' EXIT

get() {   # get PATH: prints "code bytes seconds"
    curl -s -o /dev/null -w '%{http_code} %{size_download} %{time_total}' "http://127.0.0.1:$port/api/$1"
}
rss() { awk '/VmRSS/ {print $2}' "/proc/$pid/status"; }

echo "| file | ranks | slices | first /api/run | /api/ranks | whole-run heat map | timelines: largest answer, slowest | peak RSS |"
echo "|---|---|---|---|---|---|---|---|"
for db in "$@"; do
    n=$("$HM" sql "$db" 'SELECT count(*) FROM ranks' --format csv | tail -n 1)
    slices=$("$HM" report "$db" summary --format json | python3 -c 'import json,sys; print(json.load(sys.stdin)["slices"])')
    span=$("$HM" sql "$db" 'SELECT max(ts + dur) - min(ts) FROM slices' --format csv | tail -n 1)
    sync; echo 3 2>/dev/null >/proc/sys/vm/drop_caches || true
    "$HM" serve "$db" --listen 127.0.0.1:0 ${MEMORY_MB:+--memory "$MEMORY_MB"} 2>"$T/serve.err" &
    pid=$!
    port=$(serve_port "$T/serve.err") || { cat "$T/serve.err" >&2; exit 1; }
    read -r _ rb rt <<<"$(get run)"
    read -r _ kb kt <<<"$(get ranks)"
    read -r _ hb ht <<<"$(get 'heatmap?cols=600&rows=700')"
    big=0 slow=0 peak=$(rss)
    for first in $(seq 0 16 $((n - 1))); do
        last=$((first + 15 < n - 1 ? first + 15 : n - 1))
        for q in "timeline?px=1200&ranks=$first-$last" "heatmap?cols=1200&ranks=$first-$last&rows=16" \
                 "timeline?px=1200&t0=$((span / 3))&t1=$((span / 3 + span / 50))&ranks=$first-$last" \
                 "timeline?px=1200&t0=$((span / 2))&t1=$((span / 2 + span / 500))&ranks=$first-$last" \
                 "timeline?px=1200&t0=$((span / 2))&t1=$((span / 2 + span / 50000 + 1000))&ranks=$first-$last"; do
            read -r code b s <<<"$(get "$q")"
            [ "$code" = 200 ] || { echo "GET $q: $code" >&2; exit 1; }
            big=$((b > big ? b : big))
            slow=$(python3 -c "print(max($slow, $s))")
        done
        r=$(rss); peak=$((r > peak ? r : peak))
    done
    kill "$pid"; wait "$pid" 2>/dev/null || true; pid=
    printf '| %s | %s | %s | %.2f s, %d KB | %.2f s, %d KB | %.2f s, %d KB | %d KB, %.2f s | %d MB |\n' \
        "$(basename "$db")" "$n" "$slices" "$rt" $((rb / 1000)) "$kt" $((kb / 1000)) "$ht" $((hb / 1000)) \
        $((big / 1000)) "$slow" $((peak / 1024))
done

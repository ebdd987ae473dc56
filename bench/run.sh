#!/usr/bin/env bash
# htamerge benchmark runner (issue 2, item 7). From the repository root:
#
#   bash bench/run.sh
#
# 1. builds (or reuses) $BUILD_DIR/htamerge (RelWithDebInfo, -O2) and compiles
#    the harnesses bench/bench_parse.c and bench/bench_stages.c against that
#    build's static libraries (no CMake change needed);
# 2. makes the corpus with bench/make_corpus.py (8 ranks x ~35 MB of JSON,
#    gzip level 6; kept between runs);
# 3. measures, side by side, each REPS times (median): zcat of all files (the
#    floor); `htamerge ingest` end to end under /usr/bin/time -v (wall, peak
#    RSS); `htamerge report temporal`; parse-only MB/s on one core (plain JSON
#    and .json.gz); and a single-thread stage breakdown;
# 4. prints a markdown table and writes it as today's section of
#    bench/RESULTS.md (replacing a section of the same day).
#
# Environment:
#   BUILD_DIR    build folder (default build), relative to the repo root or absolute
#   BENCH_DIR    scratch + corpus (default /tmp/htamerge-bench)
#   REPS         repetitions per measurement (default 3)
#   PARSE_RUNS   runs per bench_parse call (default 11)
#   PERF         1: also `perf record` one ingest and list the hot symbols
#                (default: 1 when perf works)
#   NO_BUILD     1: do not run cmake, use what is in BUILD_DIR (harnesses already
#                in BUILD_DIR/bench are used when the static libraries are absent)
#   NO_WRITE     1: do not touch bench/RESULTS.md
#   RESULTS      results file to update (default bench/RESULTS.md)
#   CPUS         e.g. 0,1: run every measured command under `taskset -c CPUS`
#   INGEST_ARGS  extra ingest options, e.g. "-j 1" (with CPUS, to mimic a smaller machine)
#   TIME         GNU time binary (default /usr/bin/time)
#   LABEL        machine label in the section heading (default: cores and CPU model)
#   HTA_DIR      a clone of facebookresearch/HolisticTraceAnalysis: HTA loads the corpus and
#                runs temporal, idle and overlap each round (bench/hta_run.py), side by side
#                with zcat and htamerge (default: the first of ../HolisticTraceAnalysis,
#                /tmp/hta, $HOME/HolisticTraceAnalysis that holds hta/trace_analysis.py;
#                HTA_DIR=none skips it). HTA_PYTHON: its interpreter (default /usr/bin/python3,
#                Debian's, with python3-pandas python3-plotly python3-pydot python3-networkx)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
BUILD_DIR=${BUILD_DIR:-build}
case $BUILD_DIR in /*) ;; *) BUILD_DIR=$ROOT/$BUILD_DIR ;; esac
BENCH_DIR=${BENCH_DIR:-/tmp/htamerge-bench}
CORPUS=$BENCH_DIR/corpus
PLAIN=$BENCH_DIR/rank-0.pt.trace.json
WORK=$BENCH_DIR/work
REPS=${REPS:-3}
PARSE_RUNS=${PARSE_RUNS:-11}
RAW=$WORK/raw.txt
HM=$BUILD_DIR/htamerge
TIME=${TIME:-/usr/bin/time}
RESULTS=${RESULTS:-$ROOT/bench/RESULTS.md}
read -r -a XARGS <<<"${INGEST_ARGS:-}"
PIN=()
[ -n "${CPUS:-}" ] && PIN=(taskset -c "$CPUS")

say() { printf 'bench: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }
[ -x "$TIME" ] || die "$TIME missing (apt-get install time)"
mkdir -p "$WORK"
: >"$RAW"
rm -f "$WORK"/perf_*.txt
put() { printf '%s %s\n' "$1" "$2" >>"$RAW"; }

# HTA, when a checkout is at hand (issue 21: the speedup is measured, not quoted).
HTA_PYTHON=${HTA_PYTHON:-/usr/bin/python3}
if [ -z "${HTA_DIR:-}" ]; then
    for d in "$ROOT/../HolisticTraceAnalysis" /tmp/hta "$HOME/HolisticTraceAnalysis"; do
        [ -f "$d/hta/trace_analysis.py" ] && { HTA_DIR=$d; break; }
    done
fi
[ "${HTA_DIR:-none}" != none ] && [ ! -f "$HTA_DIR/hta/trace_analysis.py" ] &&
    { say "warning: no HTA in $HTA_DIR; measuring without it"; HTA_DIR=none; }
HTA_DIR=${HTA_DIR:-none}

# --- 1. build ------------------------------------------------------------
if [ "${NO_BUILD:-0}" != 1 ]; then
    if [ ! -f "$BUILD_DIR/CMakeCache.txt" ]; then
        cmake -S "$ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
    fi
    # A failed link deletes htamerge: keep the last good one to fall back on
    # (the tree may be mid-edit by someone else).
    mkdir -p "$BUILD_DIR/bench"
    if cmake --build "$BUILD_DIR" -j"$(nproc)" --target htamerge >"$WORK/build.log" 2>&1; then
        cp "$HM" "$BUILD_DIR/bench/htamerge.last-good"
        rev=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
        [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ] &&
            rev="$rev + uncommitted changes"
        echo "$rev" >"$BUILD_DIR/bench/htamerge.rev"
    else
        tail -20 "$WORK/build.log" >&2
        if [ ! -x "$HM" ] && [ -x "$BUILD_DIR/bench/htamerge.last-good" ]; then
            HM=$BUILD_DIR/bench/htamerge.last-good
        fi
        [ -x "$HM" ] || die "build failed and there is no $HM to fall back on"
        say "warning: build failed (see $WORK/build.log); measuring the existing $HM"
        put build_note "build-failed-used-existing-binary"
    fi
fi
[ -x "$HM" ] || die "no $HM (build first, or set BUILD_DIR)"
btype=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$BUILD_DIR/CMakeCache.txt" 2>/dev/null || true)
san=$(sed -n 's/^HTAMERGE_SANITIZE:[A-Z]*=//p' "$BUILD_DIR/CMakeCache.txt" 2>/dev/null || true)
case "$btype" in Release|RelWithDebInfo|MinSizeRel) ;; *) say "warning: build type '$btype' is not optimised" ;; esac
[ "$san" = ON ] && say "warning: $BUILD_DIR is a sanitizer build: numbers are meaningless"
put build_type "${btype:-unknown}"
put binary_built "$(date -u -r "$HM" '+%Y-%m-%d_%H:%M')"

# Harnesses: CMake targets when bench/ is wired in, else compiled by hand
# against the build's static libraries.
lib() { find "$BUILD_DIR" -name "lib$1.a" -print -quit; }
K=$(lib hm_kineto) C=$(lib hm_common) A=$(lib hm_analysis) M=$(lib hm_merger)
BIN=$BUILD_DIR/bench
mkdir -p "$BIN"
have_stages=0
if [ "${NO_BUILD:-0}" != 1 ] && [ -d "$BUILD_DIR/bench/CMakeFiles" ] &&
        cmake --build "$BUILD_DIR" -j"$(nproc)" --target bench_parse bench_stages \
            >"$WORK/bench_build.log" 2>&1; then
    have_stages=1    # bench/ is wired into CMake (add_subdirectory(bench))
elif [ -n "$K" ] && [ -n "$C" ]; then
    CFLAGS="-O2 -g -std=c11 -D_GNU_SOURCE -Wall -Wextra -I$ROOT -I$BUILD_DIR/generated"
    gcc $CFLAGS bench/bench_parse.c "$K" "$C" -lsimdjson -ldeflate -lz -lstdc++ -lm -lpthread \
        -o "$BIN/bench_parse"
    if [ -n "$A" ] && [ -n "$M" ] && gcc $CFLAGS bench/bench_stages.c "$M" "$A" "$K" "$C" \
            -lsqlite3 -lsimdjson -ldeflate -lz -lstdc++ -lm -lpthread -o "$BIN/bench_stages" \
            2>"$WORK/stages_cc.log"; then
        have_stages=1
    else
        say "warning: bench_stages did not build (see $WORK/stages_cc.log); no stage breakdown"
    fi
elif [ -x "$BIN/bench_parse" ]; then
    say "no static libraries under $BUILD_DIR: using the prebuilt harnesses in $BIN"
    [ -x "$BIN/bench_stages" ] && have_stages=1
else
    die "no libhm_kineto.a / libhm_common.a under $BUILD_DIR"
fi

# --- 2. corpus -----------------------------------------------------------
python3 bench/make_corpus.py "$CORPUS" --json >&2
FILES=("$CORPUS"/rank-*.pt.trace.json.gz)
cat "${FILES[@]}" "$PLAIN" >/dev/null          # warm the page cache
largest=0 total_json=0 total_gz=0
for f in "${FILES[@]}"; do
    n=$(gzip -dc "$f" | wc -c)
    total_json=$((total_json + n))
    total_gz=$((total_gz + $(stat -c %s "$f")))
    [ "$n" -gt "$largest" ] && largest=$n
done
put files "${#FILES[@]}"
put largest_json_bytes "$largest"
put total_json_bytes "$total_json"
put total_gz_bytes "$total_gz"

# SQLite page cache the writer asks for (store/writer_int.h), in bytes.
cs=$(sed -n 's/.*PRAGMA cache_size = \(-\{0,1\}[0-9]*\).*/\1/p' store/writer_int.h | head -1)
ps=$(sed -n 's/.*PRAGMA page_size = \([0-9]*\).*/\1/p' store/writer.c | head -1)
ps=${ps:-4096}
if [ -z "$cs" ]; then cache=$((2000 * 1024))        # SQLite's default: -2000 (KiB)
elif [ "$cs" -lt 0 ]; then cache=$((-cs * 1024))
else cache=$((cs * ps)); fi
put sqlite_cache_bytes "$cache"
put sqlite_cache_pragma "${cs:-default}"

# --- 3. measurements -----------------------------------------------------
put nproc "$(nproc)"
put nproc_all "$(nproc --all)"
put cpus "${CPUS:-all}"
put ingest_args "${INGEST_ARGS:-none}"
put cpu "$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1 | tr ' ' '_')"
put mem_gb "$(awk '/MemTotal/ {printf "%.0f", $2/1048576}' /proc/meminfo)"
put load_start "$(cut -d' ' -f1 /proc/loadavg)"
# The source the binary was built from (recorded when this script built it),
# else the tree as it is now.
if [ -s "$BUILD_DIR/bench/htamerge.rev" ] && [ "$HM" = "$BUILD_DIR/htamerge" ]; then
    put git_rev "$(tr ' ' '_' <"$BUILD_DIR/bench/htamerge.rev")"
else
    rev=$(git rev-parse --short HEAD 2>/dev/null || echo none)
    [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ] && rev="${rev}_+_uncommitted_changes"
    [ "$rev" = none ] || put git_rev "tree_at_run_time:_$rev"
fi
put default_jobs "$(n=$(nproc --all); [ "$n" -gt 2 ] && echo $((n - 1)) || echo 1)"

tv() {   # tv PREFIX CMD...: /usr/bin/time -v; records PREFIX_wall/_rss/_user/_sys
    local p=$1 out=$WORK/time.txt; shift
    "$TIME" -v -o "$out" "$@"
    awk -v p="$p" -F': ' '
        /Elapsed \(wall clock\)/ { n = split($2, a, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + a[i]; print p "_wall", s }
        /Maximum resident set size/ { print p "_rss_kb", $2 }
        /User time/ { print p "_user", $2 }
        /System time/ { print p "_sys", $2 }' "$out" >>"$RAW"
}
wall() { # wall KEY CMD...: wall seconds with ns resolution
    local k=$1 t0 t1; shift
    t0=$(date +%s.%N); "$@"; t1=$(date +%s.%N)
    put "$k" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.4f", b - a }')"
}

DB=$WORK/bench.db
for i in $(seq "$REPS"); do
    say "round $i/$REPS"
    wall zcat_wall "${PIN[@]}" bash -c 'zcat "$@" >/dev/null' _ "${FILES[@]}"
    rm -f "$DB"
    wall ingest_wall_hr tv ingest "${PIN[@]}" "$HM" ingest -q "${XARGS[@]}" -o "$DB" "$CORPUS"
    wall report_temporal_wall "${PIN[@]}" bash -c '"$1" report "$2" temporal >/dev/null' _ "$HM" "$DB"
    # End to end = ingest + the three reports HTA is timed on (summarize.py adds them up).
    wall report_idle_wall "${PIN[@]}" bash -c '"$1" report "$2" idle >/dev/null' _ "$HM" "$DB"
    wall report_overlap_wall "${PIN[@]}" bash -c '"$1" report "$2" overlap >/dev/null' _ "$HM" "$DB"
    if [ "$HTA_DIR" != none ]; then
        "${PIN[@]}" "$HTA_PYTHON" bench/hta_run.py "$HTA_DIR" "$CORPUS" >>"$RAW" ||
            say "warning: HTA failed (see above)"
    fi
    rm -f "$WORK/j1.db"
    wall ingest_j1_wall "${PIN[@]}" "$HM" ingest -q -j 1 -o "$WORK/j1.db" "$CORPUS"
    rm -f "$WORK/noargs.db"
    wall ingest_noargs_wall "${PIN[@]}" "$HM" ingest -q "${XARGS[@]}" --no-args -o "$WORK/noargs.db" "$CORPUS"
    if [ $have_stages = 1 ]; then
        rm -f "$WORK/stages.db"
        "${PIN[@]}" "$BIN/bench_stages" -o "$WORK/stages.db" "${FILES[@]}" | sed 's/^/stages_/' >>"$RAW"
    fi
    "${PIN[@]}" "$BIN/bench_parse" -n "$PARSE_RUNS" "$PLAIN" | sed 's/^/parse_json_/' >>"$RAW"
    "${PIN[@]}" "$BIN/bench_parse" -n "$PARSE_RUNS" "${FILES[0]}" | sed 's/^/parse_gz_/' >>"$RAW"
done
put db_bytes "$(stat -c %s "$DB")"
put db_noargs_bytes "$(stat -c %s "$WORK/noargs.db")"
"${PIN[@]}" "$HM" ingest "${XARGS[@]}" -o "$WORK/summary.db" "$CORPUS" 2>&1 | head -1 | sed 's/^/ingest_line /' >>"$RAW"
rm -f "$WORK/summary.db"

# Optional: where the CPU goes in one ingest (perf, if it works here).
if [ "${PERF:-auto}" != 0 ] && command -v perf >/dev/null &&
        perf record -q -o "$WORK/perf.probe" -- true >/dev/null 2>&1; then
    rm -f "$WORK/perf.db" "$WORK"/perf_*.txt
    perf record -q -F 2000 -g -o "$WORK/perf.data" -- "${PIN[@]}" "$HM" ingest -q "${XARGS[@]}" -o "$WORK/perf.db" "$CORPUS" \
        >/dev/null 2>&1 || true
    perf report -i "$WORK/perf.data" --no-children --sort pid,sym --stdio -g none 2>/dev/null |
        grep -E '^ +[0-9.]+%' | head -30 >"$WORK/perf_sym.txt" || true
    perf report -i "$WORK/perf.data" --no-children --sort pid,dso --stdio -g none 2>/dev/null |
        grep -E '^ +[0-9.]+%' | head -12 >"$WORK/perf_thread.txt" || true
fi
# The finish stage split into its statements (indexes, ANALYZE), on a copy.
python3 bench/finish_breakdown.py "$DB" | sed 's/^/finish_/' >>"$RAW" ||
    say "warning: finish_breakdown.py failed"
put load_end "$(cut -d' ' -f1 /proc/loadavg)"
put measured_at "$(date -u +%Y-%m-%dT%H:%M)"

# --- 4. report -----------------------------------------------------------
args=("$RAW" --work "$WORK")
[ "${NO_WRITE:-0}" = 1 ] || args+=(--results "$RESULTS")
[ -n "${LABEL:-}" ] && args+=(--label "$LABEL")
python3 bench/summarize.py "${args[@]}"

#!/usr/bin/env bash
# CI's fuzzing step (issue 9): configures a clang build with HTAMERGE_FUZZ=ON
# in BUILD_DIR (default build-fuzz), builds the fuzz_* targets, replays
# every committed crash reproducer (fuzz/regressions/<target>/*), then
# fuzzes each target for SECONDS (default 20) from its committed corpus,
# as many at a time as there are cores. Fails on any crash, leak, timeout
# or broken invariant; the crashing input is kept in BUILD_DIR/fuzz-out/.
# Skips (exit 0, with a message) when clang or libFuzzer is missing.
#   usage: tests/fuzz/run_short.sh [BUILD_DIR] [SECONDS]
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-build-fuzz}
secs=${2:-20}
jobs=$(nproc 2>/dev/null || echo 2)
targets=(fuzz_kineto_file fuzz_kineto_event fuzz_gzip fuzz_wire fuzz_params fuzz_sql_guard fuzz_api)

if ! command -v clang >/dev/null || ! command -v clang++ >/dev/null; then
    echo "fuzz: skipped: clang not found (deploy/install-deps.sh installs it)"
    exit 0
fi
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
printf 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { (void)d; (void)n; return 0; }\n' \
    >"$probe/p.c"
if ! clang -fsanitize=fuzzer,address,undefined "$probe/p.c" -o "$probe/p" 2>"$probe/err"; then
    echo "fuzz: skipped: clang cannot link libFuzzer (install libfuzzer-14-dev): $(head -c 300 "$probe/err")"
    exit 0
fi

cd "$src"
CC=clang CXX=clang++ cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHTAMERGE_FUZZ=ON \
    -DHTAMERGE_TESTS=OFF >/dev/null
cmake --build "$build" -j"$jobs" --target fuzz_all
out=$(cd "$build" && pwd)/fuzz-out
rm -rf "$out"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

# Seeds that live elsewhere in the tree, read but never written by libFuzzer.
seeds_of() {
    case $1 in
    fuzz_sql_guard) echo "sql/queries" ;;
    esac
}

dict_of() {
    case $1 in
    fuzz_kineto_*|fuzz_gzip) echo "-dict=$src/fuzz/kineto.dict" ;;
    fuzz_sql_guard) echo "-dict=$src/fuzz/sql.dict" ;;
    fuzz_api) echo "-dict=$src/fuzz/api.dict" ;;
    esac
}

# Replays the reproducers, then fuzzes; the log stays in $out/<target>.log.
run_target() {
    local t=$1 bin="$build/fuzz/$1" d="$out/$1" rc=0
    mkdir -p "$d/corpus"
    if compgen -G "fuzz/regressions/$t/*" >/dev/null; then
        "$bin" -runs=1 fuzz/regressions/"$t"/* >"$d.replay.log" 2>&1 || rc=$?
        if [ $rc -ne 0 ]; then
            echo "fuzz: $t: a committed reproducer fails again (see $d.replay.log)"
            tail -n 30 "$d.replay.log"
            return 1
        fi
    fi
    "$bin" $(dict_of "$t") -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len=16384 \
        -artifact_prefix="$d/" -print_final_stats=1 "$d/corpus" "fuzz/corpus/$t" $(seeds_of "$t") >"$d.log" 2>&1 || rc=$?
    if [ $rc -ne 0 ]; then
        echo "fuzz: $t: FAILED (rc $rc); input kept in $d/, log $d.log"
        grep -E 'ERROR|invariant failed|SUMMARY' "$d.log" | head -n 10
        tail -n 40 "$d.log"
        return 1
    fi
    echo "fuzz: $t: ok, $(grep -E 'stat::number_of_executed_units' "$d.log" | awk '{print $2}') runs in ${secs}s"
}

pids=() names=() failed=0
for t in "${targets[@]}"; do
    run_target "$t" &
    pids+=($!) names+=("$t")
    if [ ${#pids[@]} -ge "$jobs" ]; then
        wait "${pids[0]}" || failed=1
        pids=("${pids[@]:1}") names=("${names[@]:1}")
    fi
done
for p in "${pids[@]}"; do
    wait "$p" || failed=1
done
if [ $failed -ne 0 ]; then
    echo "fuzz: FAILED"
    exit 1
fi
echo "fuzz: all ${#targets[@]} targets ran ${secs}s each without a finding"

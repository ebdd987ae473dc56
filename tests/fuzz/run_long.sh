#!/usr/bin/env bash
# Long fuzzing runs behind fuzz/RESULTS.md: each target for SECONDS
# (default 620) over a scratch copy of its corpus, PAR targets at a time
# (default 2, niced), in libFuzzer's fork mode so that one crash does not
# end the run (every crash lands in WORK/<target>/artifacts/). Prints one
# summary line per target; the logs stay in WORK.
#   usage: tests/fuzz/run_long.sh BUILD_DIR WORK [SECONDS] [PAR] [TARGET...]
set -uo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "$1" && pwd); work=$2; secs=${3:-620}; par=${4:-2}; shift 4 2>/dev/null || shift $#
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(fuzz_kineto_file fuzz_sql_guard fuzz_kineto_event fuzz_gzip fuzz_wire fuzz_params fuzz_api)
mkdir -p "$work"

# Seeds that live elsewhere in the tree, read but never written by libFuzzer.
seeds_of() {
    case $1 in
    fuzz_sql_guard) echo "$src/sql/queries" ;;
    esac
}

dict_of() {
    case $1 in
    fuzz_kineto_*|fuzz_gzip) echo "-dict=$src/fuzz/kineto.dict" ;;
    fuzz_sql_guard) echo "-dict=$src/fuzz/sql.dict" ;;
    fuzz_api) echo "-dict=$src/fuzz/api.dict" ;;
    esac
}

run_one() {
    local t=$1 d="$work/$1"
    mkdir -p "$d/corpus" "$d/artifacts"
    (cd "$d" && nice "$build/fuzz/$t" $(dict_of "$t") -fork=1 -ignore_crashes=1 -ignore_timeouts=1 \
        -ignore_ooms=1 -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len=16384 \
        -artifact_prefix="$d/artifacts/" -print_final_stats=1 "$d/corpus" "$src/fuzz/corpus/$t" $(seeds_of "$t") \
        >"$d/log" 2>&1)
    local rc=$? last; last=$(grep -E '^#[0-9]+: cov' "$d/log" | tail -1)
    echo "$t rc=$rc secs=$secs last: $last artifacts: $(ls "$d/artifacts" | wc -l)"
}

i=0
for t in "${targets[@]}"; do
    run_one "$t" &
    i=$((i + 1))
    if [ $((i % par)) -eq 0 ]; then wait; fi
done
wait

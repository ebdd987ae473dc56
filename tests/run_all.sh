#!/usr/bin/env bash
# Builds htamerge twice (release, and ASan+UBSan) and runs every test in both,
# then a clang release build with its quicker tests, then a short run of
# every libFuzzer target (a clang build).
# This is the README's test command and what CI runs after installing deps.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc 2>/dev/null || echo 2)

cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build build -j"$jobs"
(cd build && ctest --output-on-failure -j"$jobs")

cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DHTAMERGE_SANITIZE=ON
cmake --build build-asan -j"$jobs"
# The browser test's 1,024-rank page is checked in the release build above:
# making that run under the sanitizers costs minutes and finds nothing the
# 256-rank one does not.
(cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 HM_BROWSER_SCALE_RANKS="8 256" \
    ctest --output-on-failure -j"$jobs")

# A clang build of everything with the same warnings as errors (clang warns
# where gcc does not, e.g. -Wfor-loop-analysis), and its unit tests. The
# command-line, integration, browser and valgrind tests exercise the same
# code as in the gcc builds above and take most of CI's time, so they are
# left out here; CLANG_TESTS=all runs them too.
if command -v clang >/dev/null; then
    CC=clang CXX=clang++ cmake -S . -B build-clang -DCMAKE_BUILD_TYPE=RelWithDebInfo
    cmake --build build-clang -j"$jobs"
    clang_skip='^(cli_|integration_|browser_|valgrind_)'
    [ "${CLANG_TESTS:-}" = all ] && clang_skip='^$'
    (cd build-clang && ctest --output-on-failure -j"$jobs" -E "$clang_skip")
else
    echo "SKIP: clang is not installed (deploy/install-deps.sh installs it)"
fi

# Short libFuzzer runs of every fuzz target plus the committed crash
# reproducers (issue 9); skips with a message when clang is missing.
bash tests/fuzz/run_short.sh build-fuzz 20
echo "all tests passed (release, ASan+UBSan and clang builds, fuzz targets)"

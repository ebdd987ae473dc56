#!/usr/bin/env bash
# Builds htamerge twice (release, and ASan+UBSan) and runs every test in both,
# then a short run of every libFuzzer target (a clang build).
# This is the README's test command and what CI runs after installing deps.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc 2>/dev/null || echo 2)

cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build build -j"$jobs"
(cd build && ctest --output-on-failure -j"$jobs")

cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DHTAMERGE_SANITIZE=ON
cmake --build build-asan -j"$jobs"
(cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
    ctest --output-on-failure -j"$jobs")

# Short libFuzzer runs of every fuzz target plus the committed crash
# reproducers (issue 9); skips with a message when clang is missing.
bash tests/fuzz/run_short.sh build-fuzz 20
echo "all tests passed (release and ASan+UBSan builds, fuzz targets)"

#!/bin/bash
# Builds what tests/gpu/run_device.sh needs into one folder to carry to a GPU
# machine: htamerge and libhtamerge-inject.so (build-gpu, CUDA toolkit
# found) with the Python hooks, the CUDA C and NCCL test programs (the
# CUDA graph one too) and the launch-cost benchmark (nvcc, sm_90), and the
# shared libraries htamerge links that a CUDA image may lack.
#
# usage: tests/gpu/prepare_carry.sh [BUILD=build-gpu] [CARRY=build-gpu-carry]
# then:  run (device) with carry [CARRY]: bash tests/gpu/run_device.sh CARRY $OUT
#        (or bash tests/gpu/launch_cost.sh CARRY $OUT [ROUNDS],
#         bash tests/gpu/graph_proof.sh CARRY $OUT)
set -eu
B=${1:-build-gpu}
C=${2:-build-gpu-carry}
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
CUDA=$(dirname "$(dirname "$NVCC")")
cmake -S . -B "$B" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$B" -j"$(nproc)"
test -f "$B/libhtamerge-inject.so" || { echo "no libhtamerge-inject.so: CUDA toolkit not found?" >&2; exit 1; }
rm -rf "$C"
mkdir -p "$C/lib"
"$NVCC" -O2 -arch=sm_90 -o "$C/cuda_kernels" tests/gpu/cuda_kernels.cu
"$NVCC" -O2 -arch=sm_90 -o "$C/launch_cost" tests/gpu/launch_cost.cu
"$NVCC" -O2 -arch=sm_90 -o "$C/cuda_graph" tests/gpu/cuda_graph.cu
"$NVCC" -O2 -arch=sm_90 -x cu -o "$C/nccl_loop" tests/gpu/nccl_loop.c -L"$CUDA/lib" -L"$CUDA/lib64" -lnccl
cp "$B/htamerge" "$B/libhtamerge-inject.so" "$C/"
# The Python hooks (found beside htamerge) for the PyTorch scripts.
if [ -f "$B/libhtamerge-py.so" ]; then cp "$B/libhtamerge-py.so" "$C/" && cp -r "$B/python" "$C/"; fi
ldd "$B/htamerge" | awk '/=> \// {print $3}' | grep -E 'simdjson|deflate|cjson|libevent-|sqlite3' |
    while read -r l; do cp -L "$l" "$C/lib/"; done
du -sh "$C"

#!/bin/bash
# Capture overhead at G ranks (issue 7): ddp_train.py (no torch.profiler)
# under plain mpirun and under htamerge, interleaved, ROUNDS rounds.
# usage: [MODES="plain capture capture=LIST"] tests/gpu/overhead_multi.sh CARRY OUT [ROUNDS] [STEPS]
set -u
C=$(realpath "${1:?carry}"); O=$(realpath "${2:?out}"); ROUNDS=${3:-2}; STEPS=${4:-30}
T=$(dirname "$(realpath "$0")")
W=$(mktemp -d /tmp/hmovm.XXXX)
mkdir -p "$O" "$W/lib"
for f in "$C"/lib/*; do ldconfig -p | grep -q "$(basename "$f")" || cp "$f" "$W/lib/"; done
export LD_LIBRARY_PATH=$W/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 PYTHONUNBUFFERED=1
G=$(nvidia-smi -L | wc -l)
X=(-x LD_LIBRARY_PATH -x NCCL_NVLS_ENABLE -x TORCH_SYMM_MEM_DISABLE_MULTICAST -x NVSHMEM_DISABLE_NVLS -x PYTHONUNBUFFERED)
for r in $(seq 1 "$ROUNDS"); do
    for mode in ${MODES:-plain capture}; do
        case $mode in
        plain) cmd=(python3 "$T/ddp_train.py") ;;
        capture) cmd=("$C/htamerge" -o "$W/c$r.db" "$T/ddp_train.py") ;;
        capture=*) cmd=("$C/htamerge" -o "$W/c$r.db" --capture "${mode#capture=}" "$T/ddp_train.py") ;;
        esac
        ms=$(timeout -k 5 200 mpirun --allow-run-as-root --bind-to none -n "$G" "${X[@]}" "${cmd[@]}" --no-profiler --steps "$STEPS" 2>&1 |
             sed -n 's/^RESULT .*"mean_step_ms": \([0-9.]*\).*/\1/p' | sort -n | tail -1)
        echo "round $r $mode G=$G mean_step_ms ${ms:-failed}" | tee -a "$O/overhead_multi.txt"
    done
done

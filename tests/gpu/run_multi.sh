#!/bin/bash
# Multi-GPU proof (issue 7): `mpirun -n G htamerge train.py` with DDP over
# NCCL on every GPU of the machine, one clean run and one where rank 1
# sleeps 20 ms a step; then what htamerge says about them.
#
# usage: tests/gpu/run_multi.sh CARRY OUT [STEPS]
# Output: OUT/results.txt, OUT/nccl<G>_clean.db.gz, OUT/nccl<G>_straggler1.db.gz
set -u
C=$(realpath "${1:?carry}"); O=$(realpath "${2:?out}"); STEPS=${3:-20}
T=$(dirname "$(realpath "$0")")
W=$(mktemp -d /tmp/hmmulti.XXXX)
mkdir -p "$O" "$W/lib"
R=$O/results.txt
for f in "$C"/lib/*; do ldconfig -p | grep -q "$(basename "$f")" || cp "$f" "$W/lib/"; done
export LD_LIBRARY_PATH=$W/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
# NVLink multicast stays off on these shared hosts (device docs).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 PYTHONUNBUFFERED=1
G=$(nvidia-smi -L | wc -l)
H=$C/htamerge
X=(-x LD_LIBRARY_PATH -x NCCL_NVLS_ENABLE -x TORCH_SYMM_MEM_DISABLE_MULTICAST -x NVSHMEM_DISABLE_NVLS -x PYTHONUNBUFFERED)
echo "== $G GPUs" >"$R"
for run in clean straggler1; do
    extra=()
    [ $run = straggler1 ] && extra=(--sleep-rank 1 --sleep-ms 20)
    db=$W/nccl${G}_$run.db
    t0=$(date +%s.%N)
    timeout -k 5 240 mpirun --allow-run-as-root --bind-to none -n "$G" "${X[@]}" "$H" -o "$db" "$T/ddp_train.py" --steps "$STEPS" "${extra[@]}" \
        >"$O/$run.log" 2>&1
    echo "[$run] rc=$? wall_s=$(awk "BEGIN{print $(date +%s.%N) - $t0}") $(grep -h '^EXPECT\|^RESULT' "$O/$run.log" | tr '\n' ' ')" >>"$R"
    grep 'htamerge:' "$O/$run.log" | head -5 >>"$R"
    for topic in summary stragglers clocks collectives nvtx overlap; do
        echo "-- report $topic" >>"$R"
        timeout 60 "$H" report "$db" $topic 2>&1 | head -25 >>"$R"
    done
    timeout 60 "$H" sql "$db" "select match, count(*) n, sum(ranks = group_size) full_groups, max(skew_ns)/1000 max_skew_us from collective_instances group by 1" >>"$R" 2>&1
    timeout 60 "$H" sql "$db" "select op, count(*) n, count(distinct seq) seqs, count(distinct comms_id) comms, min(seq), max(seq) from collectives group by op" >>"$R" 2>&1
    timeout 60 "$H" sql "$db" "select category, kind, count(*) n from v_slices group by 1,2 order by 1" >>"$R" 2>&1
    gzip -c "$db" >"$O/nccl${G}_$run.db.gz"
done

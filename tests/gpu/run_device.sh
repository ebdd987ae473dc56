#!/bin/bash
# Live GPU capture proof on a GPU machine (issue 6, items 4-6). Runs each
# test program plain and under `htamerge -o X.db PROGRAM`, then prints what
# the program says it did ("EXPECT ...") next to what the database holds,
# and the overhead of capture on the PyTorch step ("RESULT ...").
#
# usage: [SECTIONS="cuda torch nccl coexist"] tests/gpu/run_device.sh CARRY OUT
#   CARRY: folder with htamerge, libhtamerge-inject.so, cuda_kernels,
#          nccl_loop and lib/ (shared libraries the machine may lack);
#   OUT: results folder.
# Output: OUT/results.txt (the comparison), OUT/all.log (every run's
# output), OUT/*.db.gz (the merged databases).
set -u
C=$(realpath "${1:?carry folder}")
O=$(realpath "${2:?out folder}")
mkdir -p "$O"
R=$O/results.txt
L=$O/all.log
H=$C/htamerge
T=$(dirname "$(realpath "$0")")
W=$(mktemp -d /tmp/hmgpu.XXXX)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export MASTER_ADDR=127.0.0.1 PYTHONUNBUFFERED=1
mkdir -p "$W/lib"
for f in "$C"/lib/*; do   # only what the machine lacks
    ldconfig -p | grep -q "$(basename "$f")" || cp "$f" "$W/lib/"
done
export LD_LIBRARY_PATH=$W/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

SECTIONS=${SECTIONS:-cuda torch torch_fixture nccl coexist}
want() { [[ " $SECTIONS " == *" $1 "* ]]; }
say() { echo "$*" | tee -a "$R"; }
q() { echo "sql> $2" >>"$R"; timeout 60 "$H" sql "$1" "$2" >>"$R" 2>&1; }
now() { date +%s.%N; }
# run NAME TIMEOUT CMD...: runs CMD, logs its output, records wall seconds.
run() {
    local name=$1 limit=$2 t0 t1 rc
    shift 2
    echo "### $name: $*" >>"$L"
    t0=$(now)
    timeout "$limit" "$@" >"$W/$name.out" 2>&1
    rc=$?
    t1=$(now)
    cat "$W/$name.out" >>"$L"
    say "[$name] rc=$rc wall_s=$(awk "BEGIN{printf \"%.2f\", $t1 - $t0}") $(grep -h '^EXPECT\|^RESULT' "$W/$name.out" | tr '\n' ' ')"
}

say "== machine"
{ nvidia-smi -L; df -h /dev/shm | tail -1; ls "$W/lib"; ldd "$H" | grep 'not found';
  python3 -c 'import torch; print("torch", torch.__version__, "nccl", torch.cuda.nccl.version())'; } >>"$R" 2>&1
HR=("$H")
if ! timeout 60 "$H" -o "$W/sanity.db" true >>"$L" 2>&1; then
    say "singleton MPI failed; using mpirun -n 1"
    HR=(mpirun --allow-run-as-root -n 1 "$H")
fi

if want cuda; then
say "== 1. CUDA C program: kernels, copies, memsets, 2 streams, nested NVTX"
run cuda_plain 120 "$C/cuda_kernels"
# Launch calls recorded (cupti-launches), so that each kernel's launch can be
# checked against its thread's NVTX ranges; the default (launches rebuilt
# from queued times) is checked by the PyTorch step below.
run cuda_capture 180 "${HR[@]}" -o "$W/cuda.db" --capture all,cupti-launches "$C/cuda_kernels"
grep -h 'htamerge' "$W/cuda_capture.out" | head -5 >>"$R"
D=$W/cuda.db
q "$D" "select category, kind, count(*) n, sum(dur) dur_ns, count(distinct stream) streams from v_slices group by 1,2 order by 1"
q "$D" "select name, count(*) n, cast(avg(dur) as int) avg_ns, min(dur) min_ns, max(dur) max_ns from v_slices where category in ('kernel','gpu_memcpy','gpu_memset') group by name"
q "$D" "select name, count(*) n, min(depth) mind, max(depth) maxd, sum(dur=0) instants from v_slices where category='nvtx' group by name"
q "$D" "select name, count(*) n from v_slices where category in ('cuda_runtime','cuda_driver') group by name order by n desc limit 12"
q "$D" "select count(*) launches_outside_program from v_slices r where r.name='cudaLaunchKernel' and not exists (select 1 from v_slices n where n.category='nvtx' and n.name='program' and n.tid=r.tid and r.ts>=n.ts and r.ts+r.dur<=n.end_ts)"
q "$D" "select count(*) kernels_without_launch from v_slices k where k.category='kernel' and not exists (select 1 from v_slices r where r.category='cuda_runtime' and r.correlation=k.correlation)"
q "$D" "select count(*) kernels_starting_before_launch from v_slices k join v_slices r on r.category='cuda_runtime' and r.correlation=k.correlation where k.category='kernel' and k.ts < r.ts"
q "$D" "select n.name, count(distinct n.id) ranges, count(k.id) gpu_ops, sum(k.dur) gpu_ns from v_slices n join v_slices r on r.category='cuda_runtime' and r.tid=n.tid and r.ts>=n.ts and r.ts<n.end_ts join v_slices k on k.correlation=r.correlation and k.kind='gpu_stream' where n.category='nvtx' group by n.name"
q "$D" "select s.str name, c.value from counters c join strings s on s.id=c.name"

fi
if want torch; then
say "== 2. PyTorch MoE training step (bf16 autocast, AdamW, NVTX)"
run torch_plain 240 python3 "$T/torch_train.py" plain
run torch_capture 300 "${HR[@]}" -o "$W/torch.db" "$T/torch_train.py" plain
run torch_profiler 300 python3 "$T/torch_train.py" profiler
run torch_capture_launches 300 "${HR[@]}" -o "$W/torch_launches.db" --capture all,cupti-launches "$T/torch_train.py" plain
grep -h 'htamerge' "$W/torch_capture.out" | head -5 >>"$R"
D=$W/torch.db
q "$D" "select category, kind, count(*) n, sum(dur) dur_ns from v_slices group by 1,2 order by 1"
q "$D" "select name, count(*) n, cast(avg(dur) as int) avg_ns from v_slices where category='nvtx' group by name"
q "$D" "select n.name, count(distinct n.id) ranges, count(k.id) gpu_ops, sum(k.dur) gpu_ns from v_slices n join v_slices r on r.category in ('cuda_runtime','cuda_driver') and r.tid=n.tid and r.ts>=n.ts and r.ts<n.end_ts join v_slices k on k.correlation=r.correlation and k.kind='gpu_stream' where n.category='nvtx' group by n.name"
q "$D" "select s.str name, c.value from counters c join strings s on s.id=c.name"
echo "report nvtx (first lines):" >>"$R"; timeout 60 "$H" report "$D" nvtx 2>&1 | grep -v "/cub::\|^cub::" | head -20 >>"$R"
echo "report temporal:" >>"$R"; timeout 60 "$H" report "$D" temporal >>"$R" 2>&1
python3 - "$W" >>"$R" 2>&1 <<'EOF'
import json, sys, glob
r = {}
for f in ("torch_plain", "torch_capture", "torch_capture_launches", "torch_profiler"):
    for line in open(f"{sys.argv[1]}/{f}.out") if glob.glob(f"{sys.argv[1]}/{f}.out") else []:
        if line.startswith("RESULT "):
            r[f] = json.loads(line[7:])
if "torch_plain" in r:
    base = r["torch_plain"]["mean_step_ms"]
    for k, v in r.items():
        print(f"overhead {k}: mean_step_ms={v['mean_step_ms']} reps={v['step_ms']} ratio={v['mean_step_ms']/base:.4f}")
EOF

fi
if want torch_fixture; then
say "== 2b. PyTorch step, short capture for tests/fixtures/gpu"
run torch_fixture 300 "${HR[@]}" -o "$W/torch_fixture.db" "$T/torch_train.py" plain --warmup 3 --steps 3 --reps 1
q "$W/torch_fixture.db" "select category, kind, count(*) n from v_slices group by 1,2 order by 1"
echo "report nvtx:" >>"$R"; timeout 60 "$H" report "$W/torch_fixture.db" nvtx 2>&1 | head -12 >>"$R"
fi
if want nccl; then
say "== 3. one-rank NCCL all_reduce loop"
export HTAMERGE_INJECT_DEBUG=1
NCCL_DEBUG=INFO run nccl_capture 240 "${HR[@]}" -o "$W/nccl.db" "$T/nccl_allreduce.py"
grep -ih 'profiler\|htamerge' "$W/nccl_capture.out" | head -8 >>"$R"
D=$W/nccl.db
q "$D" "select op, count(*) n, min(seq), max(seq), count(distinct seq) seqs, comms_id, group_size, in_nelems, dtype from collectives group by op, comms_id"
q "$D" "select category, kind, name, count(*) n from v_slices where name like 'nccl%' group by 1,2,3"
q "$D" "select name, count(*) from v_slices where category='nvtx' group by name"
NL=$(python3 -c 'import glob,os,torch; d=os.path.dirname(torch.__file__)+"/.."; print(":".join(sorted({os.path.dirname(p) for p in glob.glob(d+"/nvidia/**/libnccl.so.2", recursive=True)})))' 2>/dev/null)
LD_LIBRARY_PATH=$LD_LIBRARY_PATH:/usr/local/cuda/lib:/usr/local/cuda/lib64:$NL run nccl_c 120 "${HR[@]}" -o "$W/nccl_c.db" "$C/nccl_loop"
grep -h 'htamerge' "$W/nccl_c.out" | head -20 >>"$R"
q "$W/nccl_c.db" "select op, count(*) n, min(seq), max(seq), count(distinct seq) seqs, comms_id, group_size, in_nelems, dtype from collectives group by op, comms_id"
q "$W/nccl_c.db" "select category, kind, name, count(*) n, cast(avg(dur) as int) avg_ns from v_slices where name like 'nccl%' group by 1,2,3"
unset HTAMERGE_INJECT_DEBUG

fi
if want coexist; then
say "== 4. coexistence with torch.profiler (CUPTI has one client on CUDA 13)"
export PYTHONFAULTHANDLER=1 HTAMERGE_INJECT_DEBUG=1
run coexist_late 300 "${HR[@]}" -o "$W/coexist_late.db" "$T/torch_train.py" profiler --steps 5 --reps 1
grep -h 'htamerge\|CUPTI\|cupti' "$W/coexist_late.out" | head -5 >>"$R"
q "$W/coexist_late.db" "select category, count(*) n from v_slices group by 1"
q "$W/coexist_late.db" "select s.str name, c.value from counters c join strings s on s.id=c.name"
run coexist_early 300 "${HR[@]}" -o "$W/coexist_early.db" "$T/torch_train.py" profiler_early --steps 5 --reps 1
grep -h 'htamerge\|CUPTI\|cupti' "$W/coexist_early.out" | head -5 >>"$R"
q "$W/coexist_early.db" "select category, count(*) n from v_slices group by 1"
q "$W/coexist_early.db" "select s.str name, c.value from counters c join strings s on s.id=c.name"
HTAMERGE_CAPTURE=nvtx,nccl run coexist_optout 300 "${HR[@]}" -o "$W/coexist_optout.db" "$T/torch_train.py" profiler --steps 5 --reps 1
grep -h 'htamerge\|CUPTI\|cupti' "$W/coexist_optout.out" | head -5 >>"$R"
q "$W/coexist_optout.db" "select category, count(*) n from v_slices group by 1"
q "$W/coexist_optout.db" "select s.str name, c.value from counters c join strings s on s.id=c.name"
fi

for d in cuda torch torch_fixture nccl nccl_c coexist_late coexist_optout; do
    [ -f "$W/$d.db" ] && gzip -c "$W/$d.db" >"$O/$d.db.gz"
done
ls -la "$O" >>"$R"

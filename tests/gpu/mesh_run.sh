#!/bin/bash
# tests/gpu/mesh_pg.py on the GPU machine's torch (2.x: DeviceMesh names its
# groups "mesh_dp" / "mesh_tp"): 4 ranks on the CPU over gloo under
# `mpirun -n 4 htamerge`, then `report comms` on the live database (groups
# seen by the Python hooks) and on the script's own torch.profiler traces
# ingested (groups from Kineto's record_param_comms).
#
# usage: tests/gpu/mesh_run.sh CARRY OUT
# Output: OUT/results.txt, OUT/mesh.db.gz, OUT/mesh_traces.tar.gz
set -u
C=$(realpath "${1:?carry folder}")
O=$(realpath "${2:?out folder}")
S=$(dirname "$(realpath "$0")")
mkdir -p "$O"
R=$O/results.txt
. "$S/carry_env.sh"
W=$(mktemp -d /tmp/hmmesh.XXXX)
hm_carry_env "$C" "$W"
H=$C/htamerge
cd "$W" || exit 1
python3 -c 'import torch; print("torch", torch.__version__)' >>"$R" 2>&1
timeout -k 5 300 mpirun -n 4 --oversubscribe --bind-to none "$H" -o mesh.db "$S/mesh_pg.py" 12 >mesh.log 2>&1
echo "== live rc=$?" >>"$R"
tail -5 mesh.log >>"$R"
for topic in comms critical-path stragglers; do timeout 60 "$H" report mesh.db "$topic" >>"$R" 2>&1; done
timeout 60 "$H" sql mesh.db "SELECT * FROM process_groups" >>"$R" 2>&1
ls -l mesh_traces >>"$R" 2>&1
timeout 120 "$H" ingest -o traces.db mesh_traces >>"$R" 2>&1
echo "== ingested rc=$?" >>"$R"
timeout 60 "$H" report traces.db comms >>"$R" 2>&1
gzip -c mesh.db >"$O/mesh.db.gz"
tar czf "$O/mesh_traces.tar.gz" mesh_traces
echo done >>"$R"

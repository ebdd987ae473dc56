#!/usr/bin/env bash
# deploy/slurm/htamerge.sbatch for real: a one-node Slurm cluster on this
# machine (munged, slurmctld, slurmd, all in a temporary folder with free
# loopback ports, never the system's /etc/slurm), the example submitted
# with `sbatch --wait` twice (srun --mpi=pmix, then mpirun inside the
# allocation), running htamerge-synth on 2 tasks with a straggler; each
# merged file must have both ranks and name rank 1 the straggler.
# Skips (exit 77) when Slurm or munge is not installed
# (apt-get install -y slurm-wlm munge). Every daemon is stopped on exit.
set -u
. "$(dirname "$0")/../lib.sh"
H=${HTAMERGE:?}; SRC=${HM_SOURCE_DIR:?}
SYN=${HTAMERGE_SYNTH:-$(dirname "$H")/htamerge-synth}
for tool in slurmctld slurmd sbatch squeue scontrol munged; do
    if ! command -v "$tool" >/dev/null && [ ! -x "/usr/sbin/$tool" ]; then
        skip "$tool not installed (apt-get install -y slurm-wlm munge)"
    fi
done
if [ "$(id -u)" -ne 0 ]; then skip "a test cluster needs root (slurmd starts jobs as their user)"; fi
export PATH=$PATH:/usr/sbin
T=$(hm_mktemp slurm)
chmod 755 "$T"
pids=()
cleanup() {
    # The daemons run in the foreground as our children: stop them by pid.
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
    for p in "${pids[@]}"; do
        for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$p" 2>/dev/null
    done
    wait 2>/dev/null
    rm -rf "$T"
}
trap cleanup EXIT
dump_logs() { for f in "$T"/*.log; do echo "--- $f"; tail -n 30 "$f"; done >&2; }

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
ctld_port=$(free_port); slurmd_port=$(free_port)
while [ "$slurmd_port" = "$ctld_port" ]; do slurmd_port=$(free_port); done
host=$(hostname -s)
ncpu=$(nproc)

# ---- munge: a private key and socket ----
mkdir -p "$T/munge" "$T/spool" "$T/state" "$T/tmp"
chmod 700 "$T/munge"
dd if=/dev/urandom of="$T/munge/munge.key" bs=1024 count=1 status=none
chmod 400 "$T/munge/munge.key"
munged --foreground --force --key-file="$T/munge/munge.key" --socket="$T/munge/munge.sock" \
       --pid-file="$T/munged.pid" --log-file="$T/munged.log" --seed-file="$T/munge/seed" \
       >"$T/munged.out.log" 2>&1 &
pids+=($!)
for _ in $(seq 50); do [ -S "$T/munge/munge.sock" ] && break; sleep 0.1; done
[ -S "$T/munge/munge.sock" ] || { fail "munged did not start"; dump_logs; exit 1; }

cat >"$T/slurm.conf" <<EOF
ClusterName=hmtest
# Job ids (and so PMIx's /tmp/spmix_appdir_* names) unlike another test cluster's.
FirstJobId=$((RANDOM * 10 + 100000))
TmpFS=$T/tmp
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$T/munge/munge.sock
StateSaveLocation=$T/state
SlurmdSpoolDir=$T/spool
SlurmctldPidFile=$T/slurmctld.pid
SlurmdPidFile=$T/slurmd.pid
SlurmctldLogFile=$T/slurmctld.log
SlurmdLogFile=$T/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/builtin
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
ReturnToService=2
SlurmdParameters=config_overrides
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
MinJobAge=300
KillWait=5
NodeName=$host NodeAddr=127.0.0.1 CPUs=$ncpu State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=10 State=UP OverSubscribe=FORCE:4
EOF
export SLURM_CONF=$T/slurm.conf
slurmctld -D -i >"$T/slurmctld.out.log" 2>&1 &
pids+=($!)
slurmd -D >"$T/slurmd.out.log" 2>&1 &
pids+=($!)
ready=
for _ in $(seq 60); do
    state=$(timeout 5 sinfo -h -N -o %T 2>/dev/null | head -n 1)
    case $state in idle*|mixed*) ready=1; break ;; esac
    sleep 0.5
done
[ -n "$ready" ] || { fail "the node did not come up (state '$state')"; dump_logs; exit 1; }

# submit NAME LAUNCH: runs the example on 2 tasks; checks its merged file.
submit() {
    local name=$1 launch=$2 db=$T/$1.db rc
    (cd "$T" && HTAMERGE=$H HTAMERGE_OUTPUT=$db HTAMERGE_LAUNCH=$launch \
        OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 \
        ASAN_OPTIONS=${ASAN_OPTIONS:-}:detect_leaks=0 \
        timeout -k 5 150 sbatch --wait --nodes=1 --ntasks=2 --ntasks-per-node=2 --cpus-per-task=1 \
            --time=3 --output="$T/$name.job.log" "$SRC/deploy/slurm/htamerge.sbatch" \
            "$SYN" --steps 6 --straggler 1:20 >"$T/$name.sbatch.log" 2>&1)
    rc=$?
    if [ $rc -ne 0 ]; then
        fail "$name: sbatch --wait exited $rc"; cat "$T/$name.sbatch.log" "$T/$name.job.log" >&2; return
    fi
    grep -q "merged file $db" "$T/$name.job.log" || fail "$name: the script did not finish: $(cat "$T/$name.job.log")"
    [ "$("$H" sql "$db" 'SELECT count(*) FROM ranks WHERE complete = 1' --format csv 2>&1 | tail -n 1)" = 2 ] ||
        fail "$name: want 2 complete ranks in $db: $("$H" sql "$db" 'SELECT * FROM ranks' 2>&1)"
    "$H" report "$db" stragglers --format json >"$T/$name.json" 2>&1 || fail "$name: report failed"
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if d["straggler"] == 1 else 1)' \
        "$T/$name.json" || fail "$name: straggler is not rank 1: $(head -c 300 "$T/$name.json")"
}
submit srun srun
submit mpirun mpirun

# A bad launcher name is refused by the script, inside the allocation.
(cd "$T" && HTAMERGE_LAUNCH=bogus timeout -k 5 60 sbatch --wait --nodes=1 --ntasks=1 --ntasks-per-node=1 \
    --cpus-per-task=1 --time=1 --output="$T/bogus.job.log" "$SRC/deploy/slurm/htamerge.sbatch" "$SYN" >/dev/null 2>&1)
[ $? -ne 0 ] && grep -q "must be srun or mpirun" "$T/bogus.job.log" ||
    fail "HTAMERGE_LAUNCH=bogus was not refused: $(cat "$T/bogus.job.log" 2>/dev/null)"

if [ $fails -ne 0 ]; then dump_logs; echo "test_slurm: $fails failure(s)"; exit 1; fi
echo "test_slurm: ok (srun --mpi=pmix and mpirun under sbatch)"

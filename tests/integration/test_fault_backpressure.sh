#!/usr/bin/env bash
# Fault injection, a merger slower than its producers (issue 9): with the
# test hook HTAMERGE_TEST_MERGER_DELAY_US (merger/live.c) every batch costs
# rank 0 extra time, so the producers outrun it. Credits (common/protocol.h)
# and the collector's backlog cap (COL_LINK_MAX_BACKLOG, 64 MiB) must keep
# every rank's memory bounded, and nothing may be lost: the run completes
# with every step of every rank. Peak memory is sampled from /proc VmHWM.
set -u
. "$(dirname "$0")/../lib.sh"
H=${HTAMERGE:?}; S=${HTAMERGE_SYNTH:-$(dirname "$H")/htamerge-synth}
mpi_env
export ASAN_OPTIONS=${ASAN_OPTIONS:-}:detect_leaks=0
hm_tmpdir fault_bp
cd "$T" || exit 1
T=$(pwd -P)
STEPS=160 DELAY_US=${DELAY_US:-15000}

# run NAME [mpirun -x args]: the job, with every rank's peak RSS (kB) in
# NAME.hwm as "rank kB" and the wall time in NAME.secs.
run() {
    local name=$1 p r k t0
    shift
    t0=$(date +%s%N)
    run_mpi 100 -n 3 "$@" "$H" -o "$name.db" "$S" --steps $STEPS --step-ms 5 --cycle 2 > "$name.log" 2>&1 &
    local mp=$!
    declare -A peak=()
    while kill -0 $mp 2>/dev/null; do
        for p in $(pgrep -x htamerge); do
            [ "$(readlink /proc/$p/cwd 2>/dev/null)" = "$T" ] || continue
            r=$(tr '\0' '\n' < /proc/$p/environ 2>/dev/null | sed -n 's/^OMPI_COMM_WORLD_RANK=//p')
            k=$(sed -n 's/^VmHWM:[[:space:]]*\([0-9]*\).*/\1/p' /proc/$p/status 2>/dev/null)
            [ -n "$r" ] && [ -n "$k" ] && [ "$k" -gt "${peak[$r]:-0}" ] && peak[$r]=$k
        done
        sleep 0.1
    done
    wait $mp
    echo $? > "$name.rc"
    echo $(( ($(date +%s%N) - t0) / 1000000 )) > "$name.ms"
    for r in "${!peak[@]}"; do echo "$r ${peak[$r]}"; done | sort -n > "$name.hwm"
}
hwm() { awk -v r="$2" '$1 == r { print $2 }' "$1.hwm"; }

run fast
run slow -x HTAMERGE_TEST_MERGER_DELAY_US=$DELAY_US
for name in fast slow; do
    [ "$(cat $name.rc)" = 0 ] || { fail "$name: exit $(cat $name.rc)"; tail -5 $name.log >&2; }
    [ "$(sql1 $name.db "SELECT value FROM meta WHERE key = 'run_status'")" = complete ] || fail "$name: not complete"
    [ "$(sql1 $name.db 'SELECT count(*) FROM steps')" = $((3 * STEPS)) ] || fail "$name: steps lost"
    [ "$(sql1 $name.db 'SELECT count(*) FROM slices')" = $((3 * STEPS * 128)) ] || fail "$name: slices lost"
done
# The merger really was the bottleneck: 3 x STEPS/2 batches at DELAY_US each.
min_ms=$((3 * STEPS / 2 * DELAY_US / 1000))
[ "$(cat slow.ms)" -ge "$min_ms" ] || fail "slow run took $(cat slow.ms) ms, less than the $min_ms ms of delays"
# Bounded memory: rank 0 holds one batch at a time, whatever the senders
# do; a sender holds at most its backlog cap (64 MiB) more than when fast.
for r in 0 1 2; do
    f=$(hwm fast $r) s=$(hwm slow $r)
    [ -n "$f" ] && [ -n "$s" ] || { fail "no memory sample for rank $r"; continue; }
    bound=$((f + (r == 0 ? 32768 : 65536 + 16384)))
    [ "$s" -le "$bound" ] || fail "rank $r peak RSS $s kB with a slow merger, bound $bound kB (fast: $f kB)"
    echo "rank $r peak RSS: $f kB fast, $s kB slow"
done
echo "slow merger: ${DELAY_US} us per batch, run $(cat fast.ms) ms -> $(cat slow.ms) ms, nothing lost"
finish

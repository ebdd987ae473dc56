#!/bin/bash
# Runs a program under htamerge and, when its own output (lines not
# htamerge's) stops growing for QUIET seconds, writes every thread's stack of every process in the job
# (eu-stack, carried in CARRY/tools) and each thread's kernel wait channel
# to OUT/stacks-N.txt, then stops the job. For hangs on the GPU machine,
# which has no gdb.
#
# usage: tests/gpu/hang_probe.sh CARRY OUT NAME QUIET DIR htamerge-args...
set -u
exec </dev/null   # programs here must not eat a caller's script from stdin
C=$(realpath "${1:?carry}"); O=$(realpath "${2:?out}"); NAME=${3:?name}; QUIET=${4:?quiet}; D=${5:?dir}
shift 5
T=$(dirname "$(realpath "$0")")
W=$(mktemp -d /tmp/hmprobe.XXXX)
. "$T/carry_env.sh"
hm_carry_env "$C" "$W"
mkdir -p "$O"
export HTAMERGE_CONTROL_DIR=$W/control HTAMERGE_PYTHON=python3 HTAMERGE_INJECT_DEBUG=1
cd "$D"
setsid "$C/htamerge" -o "$W/p.db" "$@" >"$O/$NAME.log" 2>&1 &
J=$!
last=-1 still=0
while kill -0 $J 2>/dev/null; do
    sleep 1
    size=$(grep -vc "^htamerge" "$O/$NAME.log")   # the program's own lines
    if [ "$size" = "$last" ]; then still=$((still + 1)); else still=0; last=$size; fi
    [ $still -ge "$QUIET" ] || continue
    grep -q "^htamerge-inject.*: exit:" "$O/$NAME.log" && continue   # the program is done: htamerge finishes
    echo "quiet for $QUIET s: stacks" >>"$O/$NAME.log"
    tree=$J new=$J   # the job and its descendants (the program runs in its own session)
    while [ -n "$new" ]; do
        new=$(for q in $new; do pgrep -P "$q"; done)
        tree="$tree $new"
    done
    for p in $tree; do
        {
            echo "=== pid $p: $(tr '\0' ' ' </proc/$p/cmdline | cut -c1-200)"
            for t in /proc/$p/task/*; do echo "tid $(basename $t) $(cat $t/comm) wchan=$(cat $t/wchan) state=$(awk '/^State/ {print $2}' $t/status)"; done
            LD_LIBRARY_PATH=$C/tools/lib timeout 120 "$C/tools/eu-stack" -p "$p" 2>&1 | head -3000
        } >>"$O/stacks-$NAME.txt"
    done
    kill -TERM $tree 2>/dev/null; sleep 5; kill -KILL $tree 2>/dev/null
    break
done
wait $J; echo "rc=$?" >>"$O/$NAME.log"
rm -rf "$W"

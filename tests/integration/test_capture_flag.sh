#!/usr/bin/env bash
# `--capture LIST` on the main job: which sources are read. With kineto the
# synthetic workload's trace files reach the database; without it they are
# found but not read; an unknown source is a usage error naming it. (The
# live sources cupti/nvtx/nccl need a GPU: tests/gpu/run_device.sh.)
set -u
. "$(dirname "$0")/../lib.sh"
H=${HTAMERGE:?}; S=${HTAMERGE_SYNTH:-$(dirname "$H")/htamerge-synth}
mpi_env
export ASAN_OPTIONS=${ASAN_OPTIONS:-}:detect_leaks=0
hm_tmpdir capture
cd "$T" || exit 1

run_mpi 120 -n 2 "$H" -o all.db --capture kineto,nvtx "$S" --steps 3 > all.log 2>&1 ||
    { fail "run with --capture kineto,nvtx"; tail -5 all.log >&2; }
n_all=$(sql1 all.db 'SELECT count(*) FROM slices')
[ "${n_all:-0}" -gt 100 ] || fail "--capture kineto read only ${n_all:-0} slices"

run_mpi 120 -n 2 "$H" -o none.db --capture none "$S" --steps 3 > none.log 2>&1 ||
    { fail "run with --capture none"; tail -5 none.log >&2; }
[ "$(sql1 none.db 'SELECT count(*) FROM slices')" = 0 ] || fail "--capture none still read trace files"
[ "$(sql1 none.db 'SELECT count(*) FROM ranks WHERE complete')" = 2 ] || fail "--capture none: ranks not complete"

timeout -k 5 60 "$H" -o bad.db --capture kineto,cuda "$S" --steps 1 > bad.log 2>&1
rc=$?
[ $rc = 2 ] || fail "unknown capture source: exit $rc, want 2"
grep -q "unknown source 'cuda'" bad.log || { fail "no message naming the unknown source"; cat bad.log >&2; }
[ ! -e bad.db ] || fail "a usage error still wrote bad.db"

# What the injection library is told (HTAMERGE_CAPTURE in the child).
for c in "cupti-range,nvtx:cupti,cupti-range,nvtx" "cupti-lean:cupti" "cupti-launches,nvtx:cupti,cupti-launches,nvtx" "cupti-sync,nccl:cupti,cupti-sync,nccl" "kineto:"; do
    run_mpi 60 -n 1 "$H" -o env.db --capture "${c%%:*}" sh -c 'printf "%s" "$HTAMERGE_CAPTURE" > cap.txt' \
        > env.log 2>&1 || fail "run with --capture ${c%%:*}"
    [ "$(cat cap.txt 2>/dev/null)" = "${c#*:}" ] || fail "--capture ${c%%:*}: child saw '$(cat cap.txt 2>/dev/null)', want '${c#*:}'"
    rm -f env.db cap.txt
done
"$H" help run | grep -q -- "--capture LIST" || fail "help run does not document --capture"

# --cupti-window ON/PERIOD reaches the child as HTAMERGE_CUPTI_WINDOW; a bad
# value or one without cupti (or with cupti-range) is a usage error.
run_mpi 60 -n 1 "$H" -o win.db --cupti-window 1000/10000 sh -c 'printf "%s" "$HTAMERGE_CUPTI_WINDOW" > win.txt' \
    > win.log 2>&1 || fail "run with --cupti-window"
[ "$(cat win.txt 2>/dev/null)" = 1000/10000 ] || fail "--cupti-window: child saw '$(cat win.txt 2>/dev/null)'"
for bad in "0/100:0 < ON < PERIOD" "100/100:0 < ON < PERIOD" "5/x:ON/PERIOD" "1/3600001:3600000" "10/20 --capture nvtx:needs cupti" \
           "10/20 --capture cupti-range:not cupti-range"; do
    # shellcheck disable=SC2086
    timeout -k 5 60 "$H" -o badw.db --cupti-window ${bad%%:*} true > badw.log 2>&1
    rc=$?
    [ $rc = 2 ] && grep -q -- "${bad#*:}" badw.log || { fail "--cupti-window ${bad%%:*}: exit $rc, $(cat badw.log)"; }
    [ ! -e badw.db ] || fail "--cupti-window ${bad%%:*}: a usage error still wrote badw.db"
done
finish "capture flag: ok (kineto: $n_all slices; none: 0)"

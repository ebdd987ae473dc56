#!/bin/bash
# The Python hooks on the GPU machine's torch (2.x, Kineto): the three CPU/gloo
# DDP scripts of tests/integration/py under `mpirun -n 4 htamerge`, with and
# without torch.compile, then the hooks' cost per step (bench/python_hooks_cost.py).
#
# usage: tests/gpu/python_hooks.sh CARRY OUT
#   CARRY: htamerge, libhtamerge-py.so, python/ (the bootstrap) and lib/
#          (shared libraries the machine may lack), e.g. from
#          mkdir C; cp -r build/htamerge build/libhtamerge-py.so build/python C/; ...
# Output: OUT/results.txt; with KEEP_DB="compiled ..." also OUT/py_NAME.db.gz
set -u
C=$(realpath "${1:?carry folder}")
O=$(realpath "${2:?out folder}")
S=$(dirname "$(realpath "$0")")/..
mkdir -p "$O"
R=$O/results.txt
. "$S/gpu/carry_env.sh"
W=$(mktemp -d /tmp/hmpy.XXXX)
hm_carry_env "$C" "$W"
H=$C/htamerge
q() { echo "sql> $2" >>"$R"; timeout 60 "$H" sql "$1" "$2" >>"$R" 2>&1; }
{ python3 -c 'import torch; print("torch", torch.__version__, "kineto", torch.autograd.kineto_available())'
  ldd "$H" | grep 'not found'; } >>"$R" 2>&1
cd "$W" || exit 1
for case in "annotated:ddp_annotated.py:" "plain:ddp_plain.py:30 -1 5" "straggler:ddp_straggler.py:" \
            "compiled:ddp_plain.py:30 -1 0" "off:ddp_plain.py:10"; do
    name=${case%%:*}; rest=${case#*:}; script=${rest%%:*}; args=${rest#*:}
    extra=(); env=()
    [ "$name" = compiled ] && env=(-x TINY_COMPILE=1)
    [ "$name" = off ] && extra=(--python-hooks off)
    mkdir -p "$W/$name" && cd "$W/$name" || exit 1
    t0=$(date +%s.%N)
    # shellcheck disable=SC2086
    timeout -k 5 400 mpirun -n 4 --oversubscribe --bind-to none "${env[@]}" "$H" -o "$name.db" "${extra[@]}" \
        "$S/integration/py/$script" $args >"$name.log" 2>&1
    rc=$?
    echo "== $name rc=$rc wall_s=$(awk "BEGIN{print $(date +%s.%N) - $t0}")" >>"$R"
    tail -8 "$name.log" >>"$R"
    q "$name.db" "SELECT t.rank, n.str, count(*) FROM slices s JOIN tracks t ON t.id = s.track JOIN strings n ON n.id = s.name JOIN categories c ON c.id = s.cat WHERE c.name IN ('nvtx', 'collective_comm') GROUP BY 1, 2 ORDER BY 1, 2"
    q "$name.db" "SELECT match, count(*), min(ranks), max(ranks) FROM collective_instances GROUP BY 1"
    q "$name.db" "SELECT rank, path, slices FROM files"
    q "$name.db" "SELECT rank, world_size FROM ranks"
    timeout 60 "$H" report "$name.db" stragglers --format json 2>&1 | head -3 >>"$R"
    [ -d tb_log ] && ls -l tb_log >>"$R"
    [ -n "${KEEP_DB:-}" ] && [[ " $KEEP_DB " == *" $name "* ]] && gzip -c "$name.db" >"$O/py_$name.db.gz"
    cd "$W" || exit 1
done
for mode in ddp single ddp single; do
    timeout -k 5 300 "$H" -o cost.db "$S/../bench/python_hooks_cost.py" 200 20 64 $mode >>"$R" 2>&1
done
echo "done" >>"$R"

#!/bin/bash
# CUDA graph kernels attributed, on the GPU machine (issue 19, part 2):
#   cuda_graph: tests/gpu/cuda_graph.cu (a stream-captured graph of three
#       known kernels in the NVTX ranges capture_fwd / capture_bwd, an
#       explicitly built one in build_explicit, both replayed in "replay"),
#       under the default capture and with the launch calls recorded
#       (--capture all,cupti-launches: the captured launch of each node too);
#   graph_compile: tests/gpu/graph_compile.py (torch.compile
#       mode="reduce-overhead", an unannotated training loop: the hooks'
#       phases), with --capture-all (CUPTI attached while the graphs are
#       recorded in the first steps) and under the default budget.
# Each database is checked against what its program printed (every graph
# kernel has its capture context, the expected names, counts and ranges)
# and left gzipped in OUT for tests/fixtures/gpu.
#
# usage: tests/gpu/graph_proof.sh CARRY OUT
#   CARRY: htamerge, libhtamerge-inject.so, cuda_graph, and for the Python
#          hooks python/ and libhtamerge-py.so, lib/ (tests/gpu/prepare_carry.sh)
# Output: OUT/results.txt (CHECK lines: ok or FAIL), OUT/*.db.gz, OUT/*.log
exec </dev/null
set -u
S=$(dirname "$(realpath "$0")")
. "$S/carry_env.sh"
hm_proof_setup "${1:?carry folder}" "${2:?out folder}" hmgraph
say() { echo "$*" | tee -a "$R"; }
cd "$W" || exit 1
{ nvidia-smi -L; python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)';
  ldd "$H" | grep 'not found'; } >>"$R" 2>&1
HR=("$H")
if ! timeout 60 "$H" -o "$W/sanity.db" true >>"$O/sanity.log" 2>&1; then
    say "singleton MPI failed; using mpirun -n 1"
    HR=(mpirun --allow-run-as-root -n 1 --bind-to none "$H")
fi

# run NAME LIMIT CMD...: output in OUT/NAME.log, status and wall time said.
run() {
    local name=$1 limit=$2 t0=$SECONDS rc
    shift 2
    timeout -k 5 "$limit" "$@" >"$O/$name.log" 2>&1
    rc=$?
    say "== $name rc=$rc wall_s=$((SECONDS - t0))"
    grep -h '^{"expect"\|^RESULT\|^htamerge' "$O/$name.log" | head -8 >>"$R"
    return $rc
}

# check DB LOG: compares the database with the program's printed expectation.
check() {
    python3 - "$H" "$1" "$2" >>"$R" 2>&1 <<'EOF'
import json, subprocess, sys
h, db, log = sys.argv[1:4]

def sql(q):
    out = subprocess.run([h, "sql", db, q, "--format", "json"], capture_output=True, text=True, timeout=120)
    if out.returncode:
        raise SystemExit(f"FAIL sql {q}: {out.stderr.strip()}")
    return json.loads(out.stdout)["rows"]

def check(name, ok, detail=""):
    print(f"CHECK {name}: {'ok' if ok else 'FAIL'} {detail}")

expect = None
for line in open(log):
    if line.startswith('{"expect"'):
        expect = json.loads(line)["expect"]
    elif line.startswith("RESULT "):
        expect = json.loads(line[7:])["expect"]
print(f"-- {db}: expect {json.dumps(expect)}")
total, uncaptured, unlaunched = sql("SELECT count(*), sum(capture_node IS NULL), sum(launch IS NULL) FROM graph_kernels")[0]
nodes = sql("SELECT count(*) FROM slices WHERE cat = (SELECT id FROM categories WHERE name = 'cuda_graph')")[0][0]
marked = sql("SELECT count(*) FROM slices s JOIN tracks t ON t.id = s.track WHERE t.kind = 'gpu_stream' "
             "AND instr(s.args, '\"graph node id\"') > 0")[0][0]
print(f"graph kernels {total}, node events {nodes}, kernels with graph args {marked}, "
      f"without capture context {uncaptured}, without launch {unlaunched}")
check("graph kernels found", total > 0 and total == marked, f"{total} of {marked}")
check("every graph kernel has a capture context", total > 0 and uncaptured == 0, f"{uncaptured} without")
for row in sql("SELECT kernel, capture_range, capture_phase, launch, launch_range, launch_phase, phase, count(*) "
               "FROM v_graph_kernels GROUP BY 1, 2, 3, 4, 5, 6, 7 ORDER BY 8 DESC LIMIT 40"):
    print("  " + " | ".join(str(c) for c in row))
if expect and expect.get("program") == "cuda_graph":
    rows = {r[0]: r[1:] for r in sql("SELECT kernel, count(*), group_concat(DISTINCT capture_range), "
                                     "group_concat(DISTINCT launch_range), count(DISTINCT graph_id) "
                                     "FROM v_graph_kernels GROUP BY kernel")}
    for k, n in expect["kernels"].items():
        got = rows.get(k)
        check(f"{k} count", got is not None and got[0] == n, f"{got[0] if got else 0} want {n}")
        check(f"{k} capture range", got is not None and got[1] == expect["capture_range"][k],
              f"{got[1] if got else None} want {expect['capture_range'][k]}")
        check(f"{k} launch range", got is not None and got[2] == expect["launch_range"],
              f"{got[2] if got else None} want {expect['launch_range']}")
    launches = sql("SELECT count(DISTINCT launch) FROM graph_kernels")[0][0]
    check("graph launches", launches == expect["graph_launches"], f"{launches} want {expect['graph_launches']}")
    graphs = sql("SELECT count(DISTINCT graph_id) FROM graph_kernels")[0][0]
    check("graphs", graphs == expect["graphs"], f"{graphs} want {expect['graphs']}")
elif expect:
    phases = [r[0] for r in sql("SELECT DISTINCT capture_phase FROM graph_kernels WHERE capture_phase IS NOT NULL")]
    for p in expect["capture_phases"]:
        check(f"kernels captured in {p}", p in phases, f"phases {phases}")
    other = sql("SELECT count(*) FROM graph_kernels g JOIN steps s ON s.rank = g.rank "
                "JOIN slices k ON k.id = g.slice AND k.ts >= s.ts AND k.ts < s.ts + s.dur WHERE g.phase IS NULL")[0][0]
    check("graph kernels in a step charged to a phase", other == 0, f"{other} not")
EOF
    echo "report kernels --by graph:" >>"$R"
    timeout 60 "$H" report "$1" kernels --by graph >>"$R" 2>&1
    gzip -c "$1" >"$O/$(basename "$1").gz"
}

if run cuda_graph_plain 120 "$C/cuda_graph" 10; then
    run cuda_graph 180 "${HR[@]}" -o "$W/cuda_graph.db" "$C/cuda_graph" 10 &&
        check "$W/cuda_graph.db" "$O/cuda_graph.log"
    run cuda_graph_launches 180 "${HR[@]}" -o "$W/cuda_graph_launches.db" --capture all,cupti-launches \
        "$C/cuda_graph" 10 && check "$W/cuda_graph_launches.db" "$O/cuda_graph_launches.log"
    q="SELECT kernel, capture_call, count(*) FROM v_graph_kernels GROUP BY 1, 2"
    echo "sql> $q" >>"$R"
    timeout 60 "$H" sql "$W/cuda_graph_launches.db" "$q" >>"$R" 2>&1
fi

if run graph_compile_plain 600 python3 "$S/graph_compile.py" --steps 20; then
    run graph_compile 600 "${HR[@]}" -o "$W/graph_compile.db" --capture-all "$S/graph_compile.py" --steps 20 &&
        check "$W/graph_compile.db" "$O/graph_compile.log"
    run graph_compile_default 600 "${HR[@]}" -o "$W/graph_compile_default.db" "$S/graph_compile.py" --steps 20 &&
        check "$W/graph_compile_default.db" "$O/graph_compile_default.log"
    for d in graph_compile graph_compile_default; do
        [ -f "$W/$d.db" ] || continue
        echo "report steps ($d):" >>"$R"
        timeout 60 "$H" report "$W/$d.db" steps --format csv 2>&1 | head -60 >>"$R"
    done
fi
say "== $(grep -c 'CHECK .*: ok' "$R") checks ok, $(grep -c 'CHECK .*: FAIL' "$R") failed"
rm -rf "$W"

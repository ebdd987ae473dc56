#!/usr/bin/env bash
# CUDA graph kernels as the H200 recorded them (tests/fixtures/gpu, made by
# tests/gpu/graph_proof.sh; what it printed is graph_results.txt):
#   cuda_graph: tests/gpu/cuda_graph.cu under --capture all,cupti-launches:
#       a stream-captured graph (graph_fwd_a, graph_fwd_b in NVTX capture_fwd,
#       graph_bwd in capture_bwd) and an explicitly built one (graph_explicit
#       in build_explicit), each replayed 10 times inside "replay". CUPTI 13
#       reports each node of the executable graph made and then cloned from
#       the captured one.
#   graph_compile: tests/gpu/graph_compile.py under the default capture:
#       torch.compile(mode="reduce-overhead") on the loss of an unannotated
#       training loop; the hooks' forward and backward.
# Every graph kernel must carry the range its node was captured in and the
# range it was replayed in, report kernels --by graph must say so, and a
# re-analysis with this build must give the device's rows again.
set -u
. "$(dirname "$0")/../lib.sh"
H=${HTAMERGE:?}
T=$(hm_mktemp cli_graph_fixtures)
trap 'rm -rf "$T"' EXIT
command -v python3 >/dev/null || skip "python3 is not installed"
gpu_fixtures "$T" cuda_graph graph_compile

sql() { fixture_sql "$T/$1" "$2" "$3"; }

sql cuda_graph "graph_bwd|cudaLaunchKernel|capture_bwd|replay|10
graph_explicit|None|build_explicit|replay|10
graph_fwd_a|cudaLaunchKernel|capture_fwd|replay|10
graph_fwd_b|cudaLaunchKernel|capture_fwd|replay|10" \
    "SELECT kernel, capture_call, capture_range, launch_range, count(*) FROM v_graph_kernels GROUP BY 1, 2, 3, 4 ORDER BY 1"
# Two executable graphs, 20 replays; every kernel of a replay is one of the
# graph's, and every graph kernel is in the table.
sql cuda_graph "2|20|40" \
    "SELECT count(DISTINCT graph_id), (SELECT count(*) FROM v_slices WHERE name = 'cudaGraphLaunch'), count(*)
     FROM graph_kernels"
sql cuda_graph "0" \
    "SELECT count(*) FROM slices s JOIN categories c ON c.id = s.cat
     WHERE c.name = 'kernel' AND json_extract(s.args, '$.\"graph id\"') IS NOT NULL
       AND s.id NOT IN (SELECT slice FROM graph_kernels)"
sql cuda_graph "40" \
    "SELECT count(*) FROM slices s JOIN graph_kernels g ON g.slice = s.id
     WHERE json_extract(s.args, '$.\"graph node id\"') = g.node_id"

# torch.compile's graphs: the forward's kernels captured in forward, the
# backward's in backward, and charged so in every step they replay in.
sql graph_compile "backward|backward|19
forward|forward|38" \
    "SELECT capture_phase, phase, count(*) FROM v_graph_kernels GROUP BY 1, 2 ORDER BY 1"
sql graph_compile "0" "SELECT count(*) FROM graph_kernels WHERE capture_node IS NULL OR phase IS NULL"

"$H" report "$T/cuda_graph.db" kernels --by graph >"$T/by_graph.txt" 2>&1 || fail "report kernels --by graph: exit $?"
grep -q "capture_fwd" "$T/by_graph.txt" && grep -q "build_explicit" "$T/by_graph.txt" ||
    fail "report kernels --by graph does not name the capture ranges: $(head -c 600 "$T/by_graph.txt")"
"$H" report "$T/graph_compile.db" kernels --by graph --format json >"$T/by_graph.json" 2>&1 ||
    fail "report kernels --by graph --format json: exit $?"
python3 - "$T/by_graph.json" <<'EOF' || fail "graph_compile: report kernels --by graph JSON: $(head -c 600 "$T/by_graph.json")"
import json, sys
d = json.load(open(sys.argv[1]))
rows = d["graphs"] if isinstance(d, dict) and "graphs" in d else d
rows = rows["rows"] if isinstance(rows, dict) and "rows" in rows else rows
phases = sorted(r["capture_phases"] for r in rows)
assert phases == ["backward", "forward"], phases
assert sum(r["kernels"] for r in rows) == 57, rows
EOF

# A re-analysis with this build gives the device's rows again.
RE=${HTAMERGE_REANALYSE:-$(dirname "$H")/htamerge-reanalyse}
if [ -x "$RE" ]; then
    for f in cuda_graph graph_compile; do
        python3 -c 'import sqlite3,sys
for r in sqlite3.connect(sys.argv[1]).execute("select * from graph_kernels order by slice"): print(r)' "$T/$f.db" >"$T/$f.before"
        "$RE" "$T/$f.db" 2>"$T/$f.re.err" || fail "reanalyse $f: exit $? ($(cat "$T/$f.re.err"))"
        python3 -c 'import sqlite3,sys
for r in sqlite3.connect(sys.argv[1]).execute("select * from graph_kernels order by slice"): print(r)' "$T/$f.db" >"$T/$f.after"
        [ -s "$T/$f.after" ] && cmp -s "$T/$f.before" "$T/$f.after" ||
            fail "$f: a re-analysis changed graph_kernels: $(diff "$T/$f.before" "$T/$f.after" | head -4)"
    done
fi
finish

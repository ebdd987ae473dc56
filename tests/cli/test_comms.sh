#!/usr/bin/env bash
# report comms (issue 18): communication by process group, op and size.
#   - two ranks, two process groups (tests/tools/gen_pg_traces.py), every
#     figure checked against the hand computation in that file;
#   - the 2-GPU NCCL fixture where rank 1 sleeps: one communicator, rank 1
#     late most often, bandwidth = bytes / time of each row;
#   - the API gives the same rows.
set -u
. "$(dirname "$0")/../lib.sh"
H=${HTAMERGE:?}; SYN=${HTAMERGE_SYNTH:-$(dirname "$H")/htamerge-synth}; SRC=${HM_SOURCE_DIR:?}
command -v python3 >/dev/null || skip "python3 is not installed"
hm_tmpdir cli_comms
# check FILE PYTHON-EXPR: d = FILE as JSON, g = its groups keyed by (pg, op).
check() {
    python3 -c 'import json,sys
d = json.load(open(sys.argv[1])); g = {(r["pg"], r["op"]): r for r in d.get("groups", [])}
sys.exit(0 if eval(sys.argv[2]) else 1)' "$1" "$2" 2>/dev/null || fail "$(basename "$1"): $2 ($(head -c 400 "$1" | tr '\n\t' '  '))"
}

mkdir "$T/pg"
python3 "$SRC/tests/tools/gen_pg_traces.py" "$T/pg" || fail "gen_pg_traces"
"$H" ingest -q -o "$T/pg.db" "$T/pg" || fail "ingest"
"$H" report "$T/pg.db" comms --format json > "$T/pg.json" || fail "report comms"
check "$T/pg.json" 'len(d["groups"]) == 2'
# tp: 2 calls of 4 194 304 bytes, 400 + 300 us after the last enter.
check "$T/pg.json" 'g[("1","allreduce")]["dim"] == "tp" and g[("1","allreduce")]["calls"] == 2 and g[("1","allreduce")]["ranks"] == 2'
check "$T/pg.json" 'g[("1","allreduce")]["bytes"] == 4194304 and g[("1","allreduce")]["size_bucket"] == "1-16 MiB"'
check "$T/pg.json" 'g[("1","allreduce")]["time_us"] == 350 and g[("1","allreduce")]["total_ms"] == 0.7'
# algbw 2 x 4194304 B / 700 000 ns = 11.984 GB/s; all_reduce on 2 ranks: bus factor 2(2-1)/2 = 1.
check "$T/pg.json" 'g[("1","allreduce")]["algbw_gbps"] == 11.984 and g[("1","allreduce")]["busbw_gbps"] == 11.984'
check "$T/pg.json" 'g[("1","allreduce")]["wait_ms"] == 0.1 and g[("1","allreduce")]["skew_us"] == 50'
check "$T/pg.json" 'g[("1","allreduce")]["late_rank"] == 1 and g[("1","allreduce")]["late_count"] == 1'
# dp: all_gather, 131072 x 2 bytes x 2 ranks = 524 288 bytes in 200 us: 2.621 GB/s, bus (2-1)/2: 1.311.
check "$T/pg.json" 'g[("2","allgather")]["dim"] == "dp" and g[("2","allgather")]["bytes"] == 524288'
check "$T/pg.json" 'g[("2","allgather")]["algbw_gbps"] == 2.621 and g[("2","allgather")]["busbw_gbps"] == 1.311'
check "$T/pg.json" 'g[("2","allgather")]["size_bucket"] == "64 KiB-1 MiB" and g[("2","allgather")]["late_rank"] is None'
# Exposed: tp 600 (rank 0, 200 us hidden by its kernel) + 700 (rank 1) of
# 800 + 700 us; dp 100 + 200 of 200 + 200 us.
check "$T/pg.json" '{r["pg"]: (r["dim"], r["comm_ms"], r["exposed_ms"], r["most_exposed_rank"]) for r in d["exposed"]} == {"1": ("tp", 1.5, 1.3, 1), "2": ("dp", 0.4, 0.3, 1)}'
"$H" report "$T/pg.db" steps --format json > "$T/steps.json" || fail "report steps"
check "$T/steps.json" 'sorted((r["rank"], r["pg"], r["comm_ms"], r["exposed_ms"]) for r in d["comm_by_pg"]) == [(0, "1", 0.8, 0.6), (0, "2", 0.2, 0.1), (1, "1", 0.7, 0.7), (1, "2", 0.2, 0.2)]'
"$H" report "$T/pg.db" comms | grep -q "busbw_gbps" || fail "comms table"
"$H" report "$T/pg.db" comms --format csv | grep -q '^1,tp,allreduce,1-16 MiB,2,2,4194304,' || fail "comms csv"

# The real 2-GPU NCCL run where rank 1 sleeps 20 ms before each forward.
gunzip -c "$SRC/tests/fixtures/gpu/nccl2_straggler1.db.gz" > "$T/n2.db" || fail "fixture"
"$H" report "$T/n2.db" comms --format json > "$T/n2.json" || fail "report comms (nccl)"
check "$T/n2.json" 'all(r["pg"].startswith("comm:") and r["op"] == "allreduce" and r["ranks"] == 2 for r in d["groups"])'
check "$T/n2.json" 'sum(r["calls"] for r in d["groups"]) == 88'
big='max(d["groups"], key=lambda r: r["total_ms"])'
check "$T/n2.json" "$big[\"late_rank\"] == 1 and $big[\"busbw_gbps\"] == $big[\"algbw_gbps\"]"
check "$T/n2.json" "abs($big[\"algbw_gbps\"] - $big[\"bytes\"] / ($big[\"time_us\"] * 1e3)) < 0.01 * $big[\"algbw_gbps\"]"
# Rank 0 waits in its all_reduce kernels for rank 1's 20 ms sleeps: most exposed.
check "$T/n2.json" 'len(d["exposed"]) == 1 and d["exposed"][0]["most_exposed_rank"] == 0 and d["exposed"][0]["exposed_pct"] > 50'
# A file written before the groups' tables: the groups without dimensions.
gunzip -c "$SRC/tests/fixtures/gpu/nccl4_clean.db.gz" > "$T/old.db" || fail "fixture"
"$H" report "$T/old.db" comms --format json > "$T/old.json" || fail "report comms on an older file"
check "$T/old.json" 'len(d["groups"]) > 0 and d["exposed"] == []'

# torch 2.11, a 2 x 2 DeviceMesh over gloo (tests/fixtures/torch2/README.md):
# dp and tp from the groups' descriptions, rank 3 late on both of its
# groups, every call once (torch.profiler's records of the calls the hooks
# keyed are not counted again).
gunzip -c "$SRC/tests/fixtures/torch2/mesh_pg.db.gz" > "$T/mesh.db" || fail "fixture mesh_pg"
"$H" report "$T/mesh.db" comms --format json > "$T/mesh.json" || fail "report comms (mesh)"
check "$T/mesh.json" 'sorted((r["pg"], r["dim"], r["op"], r["calls"], r["ranks"]) for r in d["groups"]) == [("0", "world", "barrier", 1, 4), ("1", "dp", "allgather", 3, 2), ("1", "dp", "allreduce", 12, 2), ("2", "dp", "allgather", 3, 2), ("2", "dp", "allreduce", 12, 2), ("3", "tp", "allreduce", 12, 2), ("4", "tp", "allreduce", 12, 2)]'
check "$T/mesh.json" 'g[("2","allreduce")]["late_rank"] == 3 and g[("4","allreduce")]["late_rank"] == 3'
check "$T/mesh.json" 'g[("2","allreduce")]["bytes"] == 4194304 and g[("4","allreduce")]["bytes"] == 1048576'
check "$T/mesh.json" 'sorted(r["dim"] for r in d["exposed"]) == ["dp", "dp", "tp", "tp"]'

# htamerge-synth's 2-D mesh (--tp 2 on 8 ranks): four tensor-parallel
# groups of 2 and two data-parallel groups of 4, rank 5 20 ms late. Bus
# bandwidth by hand: 25 MiB (tp) and 16 MiB (dp) allreduces of 1.5 and
# 1 ms transfers, algbw = bytes / time, busbw = algbw x 2(n-1)/n (1 for
# n = 2, 1.5 for n = 4). Rank 5 is late in its own groups only, and the
# critical path of every step runs through its work.
mkdir "$T/mesh8"
HTAMERGE_TRACE_DIR="$T/mesh8" HTAMERGE_RUN_START_NS=1700000000000000000 "$SYN" --ranks 8 --tp 2 --steps 6 \
    --straggler 5:20 --gzip 2>/dev/null || fail "htamerge-synth --tp 2"
"$H" ingest -q -o "$T/mesh8.db" "$T/mesh8" || fail "ingest mesh8"
"$H" report "$T/mesh8.db" comms --format json > "$T/mesh8.json" || fail "report comms mesh8"
check "$T/mesh8.json" 'sorted((r["pg"], r["dim"], r["ranks"], r["calls"]) for r in d["groups"]) == [("1", "tp", 2, 6), ("2", "tp", 2, 6), ("3", "tp", 2, 6), ("4", "tp", 2, 6), ("5", "dp", 4, 6), ("6", "dp", 4, 6)]'
check "$T/mesh8.json" 'all(abs(g[(p, "allreduce")]["algbw_gbps"] - 26214400 / 1.5e-3 / 1e9) < 0.01 and g[(p, "allreduce")]["busbw_gbps"] == g[(p, "allreduce")]["algbw_gbps"] for p in "1234")'
check "$T/mesh8.json" 'all(abs(g[(p, "allreduce")]["algbw_gbps"] - 16777216 / 1e-3 / 1e9) < 0.01 and abs(g[(p, "allreduce")]["busbw_gbps"] - 1.5 * g[(p, "allreduce")]["algbw_gbps"]) < 0.01 for p in "56")'
check "$T/mesh8.json" 'g[("3", "allreduce")]["late_rank"] == 5 and g[("6", "allreduce")]["late_rank"] == 5 and g[("3", "allreduce")]["late_count"] == 6'

# The views are the report's queries: the same rows.
for v in v_comms:groups v_critical_path_steps:steps; do
    "$H" report "$T/mesh8.db" "$([ "${v%%:*}" = v_comms ] && echo comms || echo critical-path)" --format json > "$T/rep.json"
    "$H" sql "$T/mesh8.db" "SELECT * FROM ${v%%:*}" --format json > "$T/view.json" || fail "SELECT from ${v%%:*}"
    python3 - "$T/rep.json" "$T/view.json" "${v#*:}" <<'EOF2' || fail "${v%%:*} differs from the report's ${v#*:}"
import json, sys
rep, view, key = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3]
rows = [dict(zip(view["columns"], r)) for r in view["rows"]]
want = rep[key]
sys.exit(0 if len(rows) == len(want) > 0 and len(set(rows[0]) & set(want[0])) >= 4 and all(all(w[k] == r[k] for k in r if k in w) for r, w in zip(rows, want)) else 1)
EOF2
done
[ "$(sql1 "$T/mesh8.db" "SELECT count(*) FROM v_critical_path WHERE rank = 5 AND kind = 'work'")" -gt 0 ] ||
    fail "v_critical_path: no work segments of rank 5"

# The verdict agrees: the ranks that waited for rank 5 and so entered their
# other group last (rank 4 in dp, the odd ranks' next steps) pass its delay
# on; it is charged to rank 5, not split over five ranks.
"$H" report "$T/mesh8.db" stragglers --format json > "$T/mesh8_str.json" || fail "report stragglers mesh8"
check "$T/mesh8_str.json" 'd["straggler"] == 5 and all(s["straggler"] == 5 for s in d["steps"])'
"$H" report "$T/mesh8.db" critical-path --format json > "$T/mesh8_path.json" || fail "critical-path mesh8"
check "$T/mesh8_path.json" 'all(s["summary"].startswith(("3", "2")) and " rank 5 " in s["summary"].split(",")[0] for s in d["steps"])'

# The API: the same document.
if command -v curl >/dev/null; then
    "$H" serve "$T/pg.db" --listen 127.0.0.1:0 2>"$T/serve.err" &
    pid=$!
    . "$SRC/tests/tools/serve_port.sh"
    port=$(serve_port "$T/serve.err")
    if [ -n "$port" ]; then
        curl -sf "http://127.0.0.1:$port/api/report/comms" > "$T/api.json" || fail "GET /api/report/comms"
        check "$T/api.json" 'g[("1","allreduce")]["algbw_gbps"] == 11.984'
    else
        fail "serve did not say its port: $(cat "$T/serve.err")"
    fi
    kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
fi
finish

#!/usr/bin/env bash
# Issue 19, memory: `report memory` on real torch 2.11 traces from the H200
# (tests/gpu/memory_phases.py; tests/fixtures/gpu/memory4: 4 gloo ranks on
# one GPU, profile_memory=True). Rank r holds an extra (r + 1) x 64 MiB
# from forward to the end of backward, so by construction:
#   - every peak equals what torch.cuda.max_memory_allocated() printed on
#     the device for that rank and phase (RESULTS.txt beside the traces);
#   - forward and backward peaks step up by 64 MiB a rank, optimizer peaks
#     are equal on every rank;
#   - the highest rank is 3, 96 MiB over the median (ranks 1 and 2);
# and the view v_memory, the API, --steps and --ranks agree; a file without
# memory events reports none; a file from before the table reports none.
set -u
. "$(dirname "$0")/../lib.sh"
H=${HTAMERGE:?}; SRC=${HM_SOURCE_DIR:?}
FX=$SRC/tests/fixtures/gpu/memory4
command -v python3 >/dev/null || skip "python3 is not installed"
hm_tmpdir cli_memory

# torch's own peaks on the device, {rank: {phase: bytes}}.
python3 - "$FX/RESULTS.txt" > "$T/torch.json" <<'EOF'
import json, re, sys
peaks = {}
for line in open(sys.argv[1]):
    m = re.match(r"RESULT rank=(\d+) (.*)", line)
    if m:
        peaks[int(m.group(1))] = {k[5:]: int(v) for k, v in (kv.split("=") for kv in m.group(2).split())}
print(json.dumps(peaks))
EOF
"$H" ingest -q -o "$T/mem.db" "$FX" || { fail "ingest of the memory fixture"; finish; }
"$H" report "$T/mem.db" memory --format json > "$T/mem.json" || fail "report memory"

# The device's own figures, phase by phase, against the report's.
python3 - "$T/mem.json" "$T/torch.json" <<'EOF' || fail "report memory differs from torch's own peaks"
import json, sys
d = json.load(open(sys.argv[1]))
torch = {int(r): p for r, p in json.load(open(sys.argv[2])).items()}
assert len(torch) == 4, torch
ph = {(r["rank"], r["phase"]): r for r in d["phases"] if r["device"] == 0}
for rank, peaks in torch.items():
    for phase, want in peaks.items():
        got = ph[(rank, phase)]["peak_allocated_bytes"]
        assert got == want, (rank, phase, got, want)
        assert ph[(rank, phase)]["steps"] == 3, ph[(rank, phase)]
mib64 = 64 << 20
for phase in ("forward", "backward"):
    assert all(ph[(r, phase)]["peak_allocated_bytes"] - ph[(0, phase)]["peak_allocated_bytes"] == r * mib64
               for r in range(4)), phase
assert len({ph[(r, "optimizer")]["peak_allocated_bytes"] for r in range(4)}) == 1
h = d["highest"][0]
assert h["rank"] == 3 and h["ranks"] == 4 and h["peak_phase"] == "backward", h
median = (torch[1]["backward"] + torch[2]["backward"]) // 2
assert h["median_peak_bytes"] == median and h["margin_bytes"] == torch[3]["backward"] - median, h
ranks = {(r["rank"], r["device"]): r for r in d["ranks"]}
assert all(ranks[(r, 0)]["peak_allocated_bytes"] == torch[r]["backward"] and
           ranks[(r, 0)]["peak_phase"] == "backward" and ranks[(r, 0)]["peak_step"] == 2 for r in range(4)), ranks
assert all(ranks[(r, 0)]["peak_reserved_bytes"] >= ranks[(r, 0)]["peak_allocated_bytes"] for r in range(4))
steps = [s for s in d["steps"] if s["device"] == 0]
assert sorted({s["step"] for s in steps}) == [2, 3, 4] and len(steps) == 12, steps
assert all(s["peak_allocated_bytes"] == torch[s["rank"]]["backward"] for s in steps)
EOF

# Live capture without torch.profiler (the device run of the same script
# under `mpirun -n 4 htamerge`, tests/fixtures/gpu/memory4_live.db.gz):
# the hooks' samples at phase boundaries give the same backward and
# optimizer peaks as torch's own, the same highest rank and margin.
# Re-analysed here, so the file gets this build's memory peaks.
RE=${HTAMERGE_REANALYSE:-$(dirname "$H")/htamerge-reanalyse}
if [ -x "$RE" ]; then
    gunzip -c "$SRC/tests/fixtures/gpu/memory4_live.db.gz" > "$T/live.db" || fail "fixture memory4_live"
    "$RE" "$T/live.db" 2>/dev/null || fail "reanalyse memory4_live"
    "$H" report "$T/live.db" memory --format json > "$T/live.json" || fail "report memory (live)"
    python3 - "$T/live.json" "$T/torch.json" <<'EOF' || fail "live memory differs from torch's own peaks"
import json, sys
d = json.load(open(sys.argv[1]))
torch = {int(r): p for r, p in json.load(open(sys.argv[2])).items()}
ph = {(r["rank"], r["phase"]): r["peak_allocated_bytes"] for r in d["phases"] if r["device"] == 0}
for rank, peaks in torch.items():
    assert ph[(rank, "backward")] == peaks["backward"], (rank, ph)
    assert ph[(rank, "optimizer")] == peaks["optimizer"], (rank, ph)
h = d["highest"][0]
assert h["rank"] == 3 and h["margin_bytes"] == torch[3]["backward"] - (torch[1]["backward"] + torch[2]["backward"]) // 2, h
assert sorted({s["step"] for s in d["steps"]}) == [1, 2, 3, 4, 5, 6], d["steps"]
EOF
fi

# The view is the report's query; --steps and --ranks narrow it.
[ "$(sql1 "$T/mem.db" "SELECT group_concat(peak_allocated_bytes, ' ') FROM v_memory WHERE device = 0")" = \
  "345080832 412189696 479298560 546407424" ] ||
    fail "v_memory: $(sql1 "$T/mem.db" "SELECT group_concat(peak_allocated_bytes, ' ') FROM v_memory WHERE device = 0")"
"$H" report "$T/mem.db" memory --steps 3 --ranks 1 --format json > "$T/narrow.json" || fail "report memory --steps 3 --ranks 1"
python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
sys.exit(0 if {s["step"] for s in d["steps"]} == {3} and {s["rank"] for s in d["steps"]} == {1} else 1)' "$T/narrow.json" ||
    fail "--steps 3 --ranks 1 did not narrow the steps: $(head -c 300 "$T/narrow.json")"

# The API gives the same document.
if command -v curl >/dev/null; then
    . "$SRC/tests/tools/serve_port.sh"
    "$H" serve "$T/mem.db" --listen 127.0.0.1:0 2>"$T/serve.err" &
    pid=$!
    port=$(serve_port "$T/serve.err")
    if [ -n "$port" ]; then
        curl -sf --max-time 10 "http://127.0.0.1:$port/api/report/memory" > "$T/api.json" || fail "GET /api/report/memory"
        python3 -c 'import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
sys.exit(0 if a == b else 1)' "$T/api.json" "$T/mem.json" || fail "/api/report/memory differs from report --format json"
        # The timeline's memory rows: per column the largest sample, so
        # every rank's peak is there at any zoom; the level before a window.
        curl -sf --max-time 10 "http://127.0.0.1:$port/api/counters?ranks=0-3&px=7" > "$T/cnt.json" || fail "GET /api/counters"
        python3 - "$T/cnt.json" <<'EOF2' || fail "/api/counters: $(head -c 300 "$T/cnt.json")"
import json, sys
d = json.load(open(sys.argv[1]))
gpu = {s["rank"]: s for s in d["series"] if s["device"] == 0 and s["name"] == "Total Allocated"}
want = {0: 345080832, 1: 412189696, 2: 479298560, 3: 546407424}
assert {r: max(p[1] for p in s["points"]) for r, s in gpu.items()} == want, gpu
assert all(0 <= p[0] < 7 for s in d["series"] for p in s["points"]) and d["px"] == 7
EOF2
        half=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["t1"] // 2)' "$T/cnt.json")
        curl -sf --max-time 10 "http://127.0.0.1:$port/api/counters?ranks=3&px=50&t0=$half" > "$T/cnt2.json" || fail "GET /api/counters t0="
        python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
sys.exit(0 if all(s["rank"] == 3 and s["before"] is not None for s in d["series"]) and d["series"] else 1)' "$T/cnt2.json" ||
            fail "/api/counters from mid-run: no level before the window: $(head -c 300 "$T/cnt2.json")"
        code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 "http://127.0.0.1:$port/api/counters")
        [ "$code" = 400 ] || fail "/api/counters without ranks=: HTTP $code, want 400"
    else
        fail "serve did not say its port: $(cat "$T/serve.err")"
    fi
    kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
fi

# diff compares each step's peak: rank 3 given 64 MiB more is worse by that.
cp "$T/mem.db" "$T/more.db"
sqlite3 "$T/more.db" "UPDATE memory_peaks SET allocated_bytes = allocated_bytes + 67108864 WHERE rank = 3 AND device = 0" ||
    fail "could not edit more.db"
"$H" diff "$T/mem.db" "$T/more.db" --format json > "$T/diff.json"
python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
m = {r["rank"]: r for r in d["metrics"] if r["metric"] == "gpu_peak_allocated_mib"}
ok = m[3]["worse"] and abs(m[3]["delta"] - 64) < 1e-6 and abs(m[3]["base"] - 546407424 / 2**20) < 1e-3
ok = ok and not any(m[r]["worse"] or m[r]["delta"] != 0 for r in (0, 1, 2)) and abs(m[None]["delta"] - 16) < 1e-6
sys.exit(0 if ok else 1)' "$T/diff.json" || fail "diff gpu_peak_allocated_mib: $(grep -o "gpu_peak[^}]*" "$T/diff.json" | head -3)"

# No memory events: empty sections, no error. A file from before the table:
# the same (a stand-in), and a re-analysis in place fills it.
"$H" ingest -q -o "$T/none.db" "$SRC/tests/fixtures/hta/trace_filter" || fail "ingest trace_filter"
"$H" report "$T/none.db" memory --format json > "$T/none.json" || fail "report memory without memory events"
python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
sys.exit(0 if d["highest"] == [] and d["ranks"] == [] and d["steps"] == [] else 1)' "$T/none.json" ||
    fail "memory sections not empty without memory events: $(head -c 300 "$T/none.json")"
cp "$T/mem.db" "$T/old.db"
sqlite3 "$T/old.db" "DROP VIEW v_memory; DROP TABLE memory_peaks" || fail "could not make an old file"
"$H" report "$T/old.db" memory --format json > "$T/old.json" || fail "report memory on a file without memory_peaks"
if [ -x "$RE" ]; then
    "$RE" "$T/old.db" 2>/dev/null || fail "reanalyse of the old file"
    [ "$(sql1 "$T/old.db" "SELECT max(allocated_bytes) FROM memory_peaks")" = 546407424 ] ||
        fail "reanalyse did not fill memory_peaks"
fi

finish "test_memory: all checks passed"

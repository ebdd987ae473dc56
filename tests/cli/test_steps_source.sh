#!/usr/bin/env bash
# Steps and their source (issue 17): several trace files of one rank join
# it, the same data twice is refused, `report steps` shows each step's
# source, and runs without ProfilerSteps get steps from annotations or
# inferred ones, or say "whole run, no steps" next to each figure.
set -u
. "$(dirname "$0")/../lib.sh"
H=${HTAMERGE:?}; SRC=${HM_SOURCE_DIR:?}; FX=$SRC/tests/fixtures/gloo/ddp4_none
command -v python3 >/dev/null || skip "python3 is not installed"
hm_tmpdir cli_steps

# Rank 0 in two profiler windows (ProfilerStep#2-4, #5-7): one rank, both
# files' steps, the numbers of the unsplit file.
mkdir "$T/split"
cp "$FX"/rank-[123].pt.trace.json.gz "$T/split/"
python3 "$SRC/tests/tools/split_trace.py" "$FX/rank-0.pt.trace.json.gz" 5 \
    "$T/split/rank-0.a.pt.trace.json.gz" "$T/split/rank-0.b.pt.trace.json.gz" || fail "split"
"$H" ingest -o "$T/split.db" "$T/split" 2>"$T/err" || { fail "ingest of a rank in two files"; cat "$T/err" >&2; }
grep -q "ingested 5 of 5 files, 4 ranks" "$T/err" || { fail "two files of rank 0 are not one rank"; cat "$T/err" >&2; }
"$H" ingest -q -o "$T/whole.db" "$FX" || fail "ingest ddp4_none"
[ "$(sql1 "$T/split.db" "SELECT count(*) FROM files WHERE rank = 0")" = 2 ] || fail "files of rank 0"
[ "$(sql1 "$T/split.db" "SELECT group_concat(number, ' ') FROM (SELECT number FROM steps WHERE rank = 0 ORDER BY number)")" = "2 3 4 5 6 7" ] || fail "steps of both files"
q="SELECT group_concat(x, ' ') FROM (SELECT rank || ':' || idle_us || ':' || compute_us || ':' || kernel_us AS x FROM v_temporal ORDER BY rank)"
[ "$(sql1 "$T/split.db" "$q")" = "$(sql1 "$T/whole.db" "$q")" ] || fail "split rank's temporal differs from the whole file's"
q="SELECT group_concat(gpu_busy_us || '/' || dropped, ' ') FROM (SELECT * FROM steps WHERE rank = 0 ORDER BY number)"
[ "$(sql1 "$T/split.db" "$q")" = "$(sql1 "$T/whole.db" "$q")" ] || fail "split rank's steps differ"
[ "$(sql1 "$T/split.db" "SELECT count(*) FROM slices")" = "$(sql1 "$T/whole.db" "SELECT count(*) FROM slices")" ] || fail "slices counted twice"

# The same data twice (a copy, or a window repeated) is still refused.
cp "$FX/rank-0.pt.trace.json.gz" "$T/split/rank-0.copy.pt.trace.json.gz"
"$H" ingest -q -o "$T/dup.db" "$T/split" 2>"$T/err" && fail "a copy of rank 0's file was accepted"
grep -q "rank 0 is also claimed by .*same ProfilerStep#" "$T/err" || { fail "duplicate not named"; cat "$T/err" >&2; }
"$H" ingest -q -k -o "$T/dupk.db" "$T/split" 2>/dev/null; [ $? = 3 ] || fail "--keep-going with a duplicate: exit code"
[ "$(sql1 "$T/dupk.db" "SELECT count(*) FROM slices")" = "$(sql1 "$T/whole.db" "SELECT count(*) FROM slices")" ] || fail "duplicate counted"

# report steps shows the source (table, json, csv).
"$H" report "$T/whole.db" steps | grep -q "source" || fail "steps table lacks source"
"$H" report "$T/whole.db" steps --format json | grep -q '"source":[[:space:]]*"profiler"' || fail "steps json source"
"$H" report "$T/whole.db" steps --format csv | grep -q '^0,2,.*,profiler$' || fail "steps csv source"
# ProfilerSteps: the figures are HTA's, without a window label.
"$H" report "$T/whole.db" temporal --format json | grep -q '"window"' && fail "window label on ProfilerSteps"

# Without ProfilerSteps: the train_step annotations are the steps (nvtx);
# without them either, the collectives' period (inferred).
python3 - "$FX/rank-0.pt.trace.json.gz" "$T" <<'PY' || fail "strip"
import gzip, json, sys
d = json.load(gzip.open(sys.argv[1], "rt"))
ev = d["traceEvents"]
d["traceEvents"] = [e for e in ev if not str(e.get("name", "")).startswith("ProfilerStep")]
json.dump(d, gzip.open(sys.argv[2] + "/nvtx.json.gz", "wt"))
d["traceEvents"] = [e for e in d["traceEvents"] if e.get("cat") != "user_annotation" or str(e.get("name", "")).startswith(("gloo", "nccl"))]
json.dump(d, gzip.open(sys.argv[2] + "/inferred.json.gz", "wt"))
d["traceEvents"] = [e for e in ev if e.get("ph") == "M"]
json.dump(d, gzip.open(sys.argv[2] + "/none.json.gz", "wt"))
PY
"$H" ingest -q -o "$T/nvtx.db" "$T/nvtx.json.gz" || fail "ingest nvtx"
[ "$(sql1 "$T/nvtx.db" "SELECT group_concat(DISTINCT source) FROM steps")" = nvtx ] || fail "annotation steps"
[ "$(sql1 "$T/nvtx.db" "SELECT idle_us FROM v_temporal")" = "$(sql1 "$T/whole.db" "SELECT idle_us FROM v_temporal WHERE rank = 0")" ] || fail "annotation steps: HTA's rule"
"$H" report "$T/nvtx.db" temporal --format json | grep -q '"window":[[:space:]]*"steps 1..5 (nvtx)"' || fail "nvtx window label"
"$H" report "$T/nvtx.db" steps --format csv | grep -q ',nvtx$' || fail "nvtx steps csv"
"$H" ingest -q -o "$T/inf.db" "$T/inferred.json.gz" || fail "ingest inferred"
[ "$(sql1 "$T/inf.db" "SELECT group_concat(DISTINCT source) FROM steps")" = inferred ] || fail "inferred steps"
[ "$(sql1 "$T/inf.db" "SELECT count(*) >= 5 FROM steps")" = 1 ] || fail "inferred step count"
"$H" report "$T/inf.db" overlap | grep -q "(inferred)" || fail "inferred window label"
"$H" ingest -q -o "$T/none.db" "$T/none.json.gz" || fail "ingest none"
for topic in temporal idle overlap kernels; do
    "$H" report "$T/none.db" $topic | grep -q "whole run, no steps" || fail "$topic table lacks the whole-run label"
    "$H" report "$T/none.db" $topic --format json | grep -q '"window":[[:space:]]*"whole run, no steps"' || fail "$topic json"
    "$H" report "$T/none.db" $topic --format csv | grep -q "whole run, no steps" || fail "$topic csv"
done

finish "all steps-source checks passed"

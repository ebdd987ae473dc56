#!/usr/bin/env bash
# Reports past 64 ranks (issue 20): a synthetic run of 100 ranks, made
# without mpirun, rank 37 reaching every allreduce 20 ms late.
#   - per-rank topics list the straggler first, then the highest and lowest
#     by the topic's figure, and summarise the others (rank_summary, spread);
#   - steps summarises each step across the ranks (step_summary,
#     step_phases) and keeps the rows of the ranks it names;
#   - memory does the same, its phases and steps following the ranks listed;
#   - stragglers lists the --top worst ranks, 37 first;
#   - --ranks and --all-ranks (API: ranks=, all_ranks=1) give the rows;
#   - a run of 4 ranks reads as before: no summary members.
set -u
. "$(dirname "$0")/../lib.sh"
H=${HTAMERGE:?}; SRC=${HM_SOURCE_DIR:?}
S=${HTAMERGE_SYNTH:-$(dirname "$H")/htamerge-synth}
[ -x "$S" ] || skip "htamerge-synth is not built"
command -v python3 >/dev/null || skip "python3 is not installed"
hm_tmpdir cli_report_scale

# synth_run DIR N LATE: N ranks of 6 steps, rank LATE 20 ms late, as one run.
synth_run() {
    local dir=$1 n=$2 late=$3 r
    mkdir -p "$dir"
    if "$S" --help 2>&1 | grep -q -- '--ranks'; then
        WORLD_SIZE=$n HTAMERGE_TRACE_DIR=$dir HTAMERGE_RUN_START_NS=1700000000000000000 \
            "$S" --ranks "$n" --steps 6 --gzip --straggler "$late":20 >/dev/null || return 1
    else
        for r in $(seq 0 $((n - 1))); do
            RANK=$r WORLD_SIZE=$n LOCAL_RANK=$((r % 8)) HTAMERGE_TRACE_DIR=$dir \
                HTAMERGE_RUN_START_NS=1700000000000000000 "$S" --steps 6 --gzip --straggler "$late":20 >/dev/null ||
                return 1
        done
    fi
}
# check FILE PYTHON-EXPR: d = FILE as JSON; ranks(a) = the distinct ranks of
# d[a] in order of first row.
check() {
    python3 -c 'import json,sys
d = json.load(open(sys.argv[1]))
def ranks(a): return list(dict.fromkeys(r["rank"] for r in d[a]))
sys.exit(0 if eval(sys.argv[2]) else 1)' "$1" "$2" 2>/dev/null || fail "$(basename "$1"): $2 ($(head -c 300 "$1" | tr '\n\t' '  '))"
}
report() { "$H" report "$T/r100.db" "$@"; }

synth_run "$T/r100" 100 37 || fail "htamerge-synth"
"$H" ingest -q -o "$T/r100.db" "$T/r100" || fail "ingest of 100 ranks"
[ "$(sql1 "$T/r100.db" 'SELECT count(*) FROM ranks')" = 100 ] || fail "100 ranks ingested"

# The per-rank topics: at most 10 highest + 10 lowest + the straggler, 37 first.
for t in summary temporal overlap idle clocks kernels; do
    report "$t" --format json > "$T/$t.json" || fail "report $t"
    arr=ranks; [ "$t" = idle ] && arr=streams; [ "$t" = kernels ] && arr=kernels
    check "$T/$t.json" "d['rank_summary']['ranks'] == 100 and ranks('$arr')[0] == 37 and len(ranks('$arr')) <= 21"
    check "$T/$t.json" "d['rank_summary']['listed'] == len(ranks('$arr')) and d['rank_summary']['rest'] == 100 - len(ranks('$arr'))"
    check "$T/$t.json" "all(r['standing'] == 'straggler' for r in d['$arr'] if r['rank'] == 37)"
    check "$T/$t.json" "'within 2 % of the median' in d['rank_summary']['note']"
done
check "$T/temporal.json" "len(ranks('ranks')) in (20, 21) and sum(r['standing'] == 'highest idle_pct' for r in d['ranks']) <= 10"
check "$T/temporal.json" "{s['column'] for s in d['spread']} >= {'idle_pct', 'idle_us'} and d['spread'][0]['max_rank'] is not None"
check "$T/kernels.json" "len(d['kernel_types']) > 0"
report temporal --top 3 --format json > "$T/top3.json" || fail "report temporal --top 3"
check "$T/top3.json" "len(ranks('ranks')) <= 7 and ranks('ranks')[0] == 37"

# memory: the same for its ranks array, and its phases and steps keep the
# rows of the ranks listed (every rank's steps made 800 rows).
report memory --format json > "$T/memory.json" || fail "report memory"
check "$T/memory.json" "d['rank_summary']['ranks'] == 100 and ranks('ranks')[0] == 37 and len(ranks('ranks')) <= 21"
check "$T/memory.json" "set(ranks('phases')) == set(ranks('ranks')) == set(ranks('steps')) and len(d['highest']) == 1"
check "$T/memory.json" "'peak_allocated_bytes' in {s['column'] for s in d['spread']}"
report memory --all-ranks --format json > "$T/memory_all.json" || fail "report memory --all-ranks"
check "$T/memory_all.json" "len(ranks('ranks')) == len(ranks('steps')) == 100 and 'rank_summary' not in d"

# stragglers: the 10 worst, 37 first; the rest grouped.
report stragglers --format json > "$T/str.json" || fail "report stragglers"
check "$T/str.json" "d['straggler'] == 37 and d['ranks'][0]['rank'] == 37 and len(d['ranks']) == 10"
check "$T/str.json" "d['rank_summary']['rest'] == 90 and d['rank_summary']['by'] == 'blame_us'"
check "$T/str.json" "d['ranks'][0]['blame_us'] >= max(r['blame_us'] for r in d['ranks'])"
report stragglers --top 4 --format json > "$T/str4.json" || fail "report stragglers --top 4"
check "$T/str4.json" "len(d['ranks']) == 4 and d['ranks'][0]['rank'] == 37 and d['rank_summary']['rest'] == 96"
report stragglers | grep -q "rank_summary.note: 10 of 100 ranks listed: rank 37 (the straggler)" || fail "stragglers table note"

# steps: each step across the ranks; the rows of the ranks it names.
report steps --format json > "$T/steps.json" || fail "report steps"
check "$T/steps.json" "len(d['step_summary']) == 6 and all(s['ranks'] == 100 for s in d['step_summary'])"
check "$T/steps.json" "all(s['min_ms'] <= s['median_ms'] <= s['max_ms'] and s['slowest_over_median_ms'] >= 0 for s in d['step_summary'])"
check "$T/steps.json" "sorted({p['which'] for p in d['step_phases']}) == ['median', 'slowest', 'straggler']"
check "$T/steps.json" "{p['rank'] for p in d['step_phases'] if p['which'] == 'straggler'} == {37}"
check "$T/steps.json" "37 in ranks('steps') and set(ranks('breakdown')) <= set(ranks('steps')) and len(ranks('steps')) <= 13"
check "$T/steps.json" "all('source' in r for r in d['steps'])"
report steps --steps 2-3 --format json > "$T/steps23.json" || fail "report steps --steps 2-3"
check "$T/steps23.json" "[s['step'] for s in d['step_summary']] == [2, 3]"
report steps | grep -q "^step_summary" || fail "steps table has step_summary"

# --ranks and --all-ranks: rows, never summarised.
report temporal --ranks 0-7,37 --format json > "$T/sel.json" || fail "report temporal --ranks"
check "$T/sel.json" "ranks('ranks') == [0, 1, 2, 3, 4, 5, 6, 7, 37] and 'rank_summary' not in d and 'standing' not in d['ranks'][0]"
report steps --ranks 37 --format json > "$T/sel_steps.json" || fail "report steps --ranks 37"
check "$T/sel_steps.json" "ranks('steps') == [37] and 'step_summary' not in d and len(d['steps']) == 6"
report idle --all-ranks --format json > "$T/all.json" || fail "report idle --all-ranks"
check "$T/all.json" "len(ranks('streams')) == 100 and 'rank_summary' not in d"
report stragglers --all-ranks --format json > "$T/all_str.json" || fail "report stragglers --all-ranks"
check "$T/all_str.json" "ranks('ranks') == list(range(100))"
report temporal --all-ranks --format csv | grep -c '^[0-9]' | grep -qx 100 || fail "temporal --all-ranks csv: 100 rows"

# The API: the same documents, the same options.
if command -v curl >/dev/null; then
    "$H" serve "$T/r100.db" --listen 127.0.0.1:0 2>"$T/serve.err" &
    pid=$!
    . "$SRC/tests/tools/serve_port.sh"
    port=$(serve_port "$T/serve.err")
    if [ -n "$port" ]; then
        api="http://127.0.0.1:$port/api/report"
        curl -sf "$api/temporal" > "$T/api.json" || fail "GET temporal"
        check "$T/api.json" "ranks('ranks')[0] == 37 and d['rank_summary']['ranks'] == 100"
        curl -sf "$api/temporal?all_ranks=1" > "$T/api_all.json" || fail "GET temporal?all_ranks=1"
        check "$T/api_all.json" "len(d['ranks']) == 100"
        curl -sf "$api/steps?ranks=37" > "$T/api_37.json" || fail "GET steps?ranks=37"
        check "$T/api_37.json" "ranks('steps') == [37]"
        curl -sf "$api/stragglers?top=3" > "$T/api_top.json" || fail "GET stragglers?top=3"
        check "$T/api_top.json" "len(d['ranks']) == 3 and d['ranks'][0]['rank'] == 37"
        [ "$(curl -s -o /dev/null -w '%{http_code}' "$api/temporal?all_ranks=maybe")" = 400 ] || fail "all_ranks=maybe: 400"
    else
        fail "serve did not say its port: $(cat "$T/serve.err")"
    fi
    kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
fi

# A small run reads as before: every rank's rows, no summary members.
synth_run "$T/r4" 4 2 || fail "htamerge-synth, 4 ranks"
"$H" ingest -q -o "$T/r4.db" "$T/r4" || fail "ingest of 4 ranks"
for t in summary temporal overlap idle clocks kernels steps stragglers memory; do
    "$H" report "$T/r4.db" "$t" --format json > "$T/small_$t.json" || fail "report $t, 4 ranks"
    check "$T/small_$t.json" "not {'rank_summary', 'spread', 'step_summary', 'step_phases'} & set(d)"
done
check "$T/small_temporal.json" "ranks('ranks') == [0, 1, 2, 3] and 'standing' not in d['ranks'][0]"
check "$T/small_stragglers.json" "ranks('ranks') == [0, 1, 2, 3]"
finish

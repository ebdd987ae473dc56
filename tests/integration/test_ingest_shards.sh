#!/usr/bin/env bash
# `mpirun htamerge ingest --node-local --shards`: one file per host plus an
# index (merger/ingest_shards.h). Three hosts are simulated on this machine
# (HTAMERGE_HOSTNAME, each host's folder its ranks' working directory):
#   a: ranks 0-2 (rank 0 writes the index, 1 host a's shard, 2 reads),
#   b: ranks 3-4, c: ranks 5-6 (the first writes, the second reads).
# Checked against one ingest of the same files: every report topic, the
# per-rank and cross-rank tables of the index, and the union over the shards
# of every row (slices, collectives, counters, steps), also with clocks that
# refinement re-times (the shards get the index's fits); the shards table;
# `sql --rank` reading a rank's shard and `export` walking the shards; serve answering
# reports and the heat map from the index, and the timeline and slices of
# ranks of three shards from those shards (equal to one ingest's); a
# missing shard named by its file, the index still readable; a dead reader
# ending the job with no output.
set -u
. "$(dirname "$0")/../lib.sh"
. "${HM_SOURCE_DIR:?}/tests/tools/serve_port.sh"
. "${HM_SOURCE_DIR:?}/tests/tools/shard_hosts.sh"
H=${HTAMERGE:?}; SYN=${HTAMERGE_SYNTH:?}; SRC=${HM_SOURCE_DIR:?}
shard_hosts ingest_shards

# spread DIR NAME: DIR's files, grouped by worker, two workers a host in
# rank order, into HOST/NAME; all into all-NAME.
spread() {
    local i=0 w h
    mkdir -p a/"$2" b/"$2" c/"$2" all-"$2"
    for w in $(workers "$1"); do
        h=a; [ $i -ge 2 ] && h=b; [ $i -ge 4 ] && h=c
        cp "$1/$w".* "$h/$2/"; cp "$1/$w".* all-"$2"/
        i=$((i + 1))
    done
}

# Corpus "syn": 6 ranks of two files each (their readers join them), rank 3 late.
(mkdir -p syn && cd syn && HTAMERGE_RUN_START_NS=1700000000000000000 "$SYN" --ranks 6 --gzip --straggler 3:5 \
    > /dev/null 2>&1) || fail "synthetic corpus"
spread syn syn
# Corpus "clk": one file a rank, ranks 1-5 moved by ms and tens of ppm, so
# clock refinement re-times them (and the host writers their shards).
(mkdir -p clk0 && cd clk0 && HTAMERGE_RUN_START_NS=1700000000000000000 "$SYN" --ranks 6 --steps 8 --cycle 8 \
    > /dev/null 2>&1) || fail "clock corpus"
mkdir -p clk; k=0
for f in $(ls clk0); do
    case $k in
        0) cp "clk0/$f" clk/ ;;
        *) python3 "$SRC/tests/tools/perturb_trace.py" "clk0/$f" "clk/$f" $((k * 1700 - 4000)) $((k * 23 - 60)) ;;
    esac
    k=$((k + 1))
done
spread clk clk

topics="summary temporal overlap idle kernels steps clocks stragglers collectives critical-path comms nvtx memory"

# rows DB: every stored row of the file, ids and string ids resolved, sorted.
rows() {
    sqlite3 "$1" "
SELECT 'slice', t.rank, t.kind, t.pid, t.tid, s.ts, s.dur, n.str, s.cat, s.depth, s.correlation, s.external_id,
       s.bytes, s.iteration, s.args, s.flags, (SELECT p.ts || '/' || p.dur FROM slices p WHERE p.id = s.parent)
FROM slices s JOIN tracks t ON t.id = s.track LEFT JOIN strings n ON n.id = s.name;
SELECT 'coll', c.rank, c.pg, c.op, c.seq, c.comms_id, c.in_nelems, c.enter_ns, c.exit_ns, s.ts FROM collectives c
JOIN slices s ON s.id = c.slice;
SELECT 'counter', c.rank, c.device, n.str, c.ts, c.value FROM counters c LEFT JOIN strings n ON n.id = c.name;
SELECT 'step', rank, number, ts, dur, source, gpu_busy_us, kernel_count, dropped FROM steps;
SELECT 'rank', rank, host, base_time_ns, clock_offset_ns, clock_drift_ppm, clock_ref_ns, clock_method, complete,
       batches FROM ranks;
SELECT 'track', t.rank, t.kind, t.pid, t.tid, n.str FROM tracks t LEFT JOIN strings n ON n.id = t.name;
SELECT 'temporal', * FROM a_temporal; SELECT 'overlap', * FROM a_overlap; SELECT 'idle', * FROM a_idle;
SELECT 'kclass', * FROM a_kernel_class;" | sort
}

# derived DB: the index's per-rank and cross-rank tables, without ids.
derived() {
    sqlite3 "$1" "
SELECT 'inst', pg, op, seq, step, ranks, skew_ns, late_rank, match FROM collective_instances;
SELECT 'verdict', * FROM straggler_verdicts; SELECT 'check', * FROM clock_checks;
SELECT 'breakdown', * FROM step_breakdown; SELECT 'activity', * FROM rank_activity;
SELECT 'rank_slices', * FROM rank_slices; SELECT 'nvtx', path, step, ranks, skew_ns, late_rank FROM nvtx_stitched;
SELECT 'file', rank, batches, slices FROM files;" 2>&1 | sort
}

for corpus in syn clk; do
    run_mpi 180 -n 7 ./host.sh "$H" ingest -q --node-local --shards -o "$T/$corpus.db" "$corpus" \
        > "$corpus.log" 2>&1 || { fail "$corpus: sharded ingest"; cat "$corpus.log" >&2; continue; }
    "$H" ingest -q -o "$corpus-one.db" "all-$corpus" || fail "$corpus: single ingest"
    ls "$corpus.db.d"/*.db > /dev/null 2>&1 || fail "$corpus: no shards in $corpus.db.d"
    [ "$(sqlite3 "$corpus.db.d/b.db" "SELECT group_concat(value, ' ') FROM (SELECT value FROM meta WHERE key IN ('shard_of', 'shard_host') ORDER BY key)")" \
        = "b $corpus.db" ] || fail "$corpus: shard b's meta: $(sqlite3 "$corpus.db.d/b.db" 'SELECT * FROM meta')"
    [ "$(sqlite3 "$corpus.db" "SELECT group_concat(host || '=' || ranks, ' ') FROM (SELECT * FROM shards ORDER BY id)")" \
        = "a=0,1 b=2,3 c=4,5" ] || fail "$corpus: shards table: $(sqlite3 "$corpus.db" 'SELECT * FROM shards')"
    # Reports from the index alone.
    for t in $topics; do
        "$H" report "$corpus-one.db" "$t" --format json --all-ranks > one.json
        "$H" report "$corpus.db" "$t" --format json --all-ranks > sh.json
        python3 -c 'import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
for k in ("created_by", "created_at"):
    a.pop(k, None), b.pop(k, None)
shards = b.pop("shards", None) if sys.argv[3] == "summary" else []
sys.exit(0 if a == b and shards is not None and all(x["status"] == "ok" for x in shards) else 1)' one.json sh.json "$t" ||
            fail "$corpus: report $t differs: $(diff one.json sh.json | head -5)"
    done
    # The shards hold every row, at the index's times.
    rows "$corpus-one.db" > one.rows
    for s in "$corpus.db.d"/*.db; do rows "$s"; done | sort > sh.rows
    [ "$(wc -l < one.rows)" -gt 1000 ] && cmp -s one.rows sh.rows ||
        fail "$corpus: rows of the shards differ: $(diff one.rows sh.rows | head -4 | cut -c1-200)"
    # The index's own tables.
    derived "$corpus-one.db" > one.der; derived "$corpus.db" > sh.der
    [ "$(wc -l < one.der)" -gt 50 ] && cmp -s one.der sh.der ||
        fail "$corpus: index tables differ: $(diff one.der sh.der | head -4 | cut -c1-200)"
    [ "$(sql1 "$corpus.db" "SELECT count(*) FROM slices")" -lt "$(sql1 "$corpus-one.db" "SELECT count(*) FROM slices")" ] ||
        fail "$corpus: the index stores every slice"
done
[ "$(sql1 clk.db "SELECT count(*) FROM ranks WHERE clock_method = 'collectives' AND clock_drift_ppm <> 0")" -ge 4 ] ||
    fail "clk: refinement re-timed no rank: $(sqlite3 clk.db 'SELECT rank, clock_method, clock_drift_ppm FROM ranks')"

# sql on the index says its slices are partial; --rank reads the rank's shard.
"$H" sql syn.db "SELECT count(*) FROM slices" > /dev/null 2> note.log || fail "sql on the index"
grep -q "index of a sharded ingest" note.log || fail "sql on the index: no note: $(cat note.log)"
[ "$(sql1 syn.db "SELECT count(*) FROM slices" )" != \
  "$("$H" sql syn.db --rank 4 "SELECT count(*) FROM slices" --format csv | tail -n 1)" ] || fail "sql --rank: the index"
[ "$("$H" sql syn.db --rank 4 "SELECT count(*) FROM slices s JOIN tracks t ON t.id = s.track WHERE t.rank = 4" --format csv | tail -n 1)" \
  = "$(sql1 syn-one.db "SELECT count(*) FROM slices s JOIN tracks t ON t.id = s.track WHERE t.rank = 4")" ] ||
    fail "sql --rank 4: not rank 4's slices"
# export walks the shards of the ranks asked for (all without --ranks): the
# same slices, counters, launch and collective flows as one ingest's export
# (test_shards_readers.sh checks those and the other readers of every rank's
# slices further).
for r in "--ranks 1,2,5" ""; do
    "$H" export syn.db $r -o e.json 2> e.log || fail "export $r of the index: $(cat e.log)"
    "$H" export syn-one.db $r -o e1.json 2> e1.log || fail "export $r: $(cat e1.log)"
    python3 "$SRC/tests/tools/export_same.py" e.json e1.json || fail "export $r: the index's differs"
done
"$H" export syn.db --ranks 9 -o e2.json 2> e2.log; rc=$?
[ $rc = 2 ] && grep -q "rank 9 is in no shard" e2.log || fail "export of a rank in no shard: exit $rc, $(cat e2.log)"
"$H" diff syn-one.db syn.db --format json > diff.json || fail "diff of the index against one ingest: exit $?"
python3 -c 'import json; d = json.load(open("diff.json")); assert d["comparable"] is True and d["regressed"] is False, d' || fail "diff: $(head -c 300 diff.json)"

# serve: the index answers reports and the heat map itself, and the
# timeline of ranks of three shards from those shards, the same as one
# ingest's; a slice of that answer is found in its shard.
start_server() {
    "$H" serve "$1" --listen 127.0.0.1:0 2> "$2" &
    pids+=($!)
    PORT=$(serve_port "$2") || { fail "serve $1 did not start: $(cat "$2")"; return 1; }
}
get() { curl -s --max-time 20 -o "$2" -w '%{http_code}' "http://127.0.0.1:$PORT$1"; }
tl='/api/timeline?t0=0&t1=2000000000&px=400&ranks=1,2,5'
cq='/api/counters?t0=0&t1=2000000000&px=400&ranks=1,2,5'
wq='/api/windows?t0=0&t1=2000000000&px=400'
# The same answer whichever order the shards gave its rows in.
same_rows() {
    python3 -c 'import json,sys
a, b = (json.load(open(f)) for f in sys.argv[2:])
k = sys.argv[1]
for d in (a, b): d[k].sort(key=json.dumps)
sys.exit(0 if a == b else 1)' "$@"
}
if command -v curl > /dev/null && start_server syn-one.db serve-one.err; then
    get "$tl" one-tl.json > /dev/null
    get /api/heatmap one-hm.json > /dev/null
    get "$cq" one-ct.json > /dev/null
    get "$wq" one-win.json > /dev/null
    one_port=$PORT
    if start_server syn.db serve-index.err; then
        [ "$(get /api/report/stragglers body)" = 200 ] && grep -q '"straggler":[[:space:]]*3' body ||
            fail "serve index: stragglers $(head -c 300 body)"
        [ "$(get /api/heatmap sh-hm.json)" = 200 ] && cmp -s one-hm.json sh-hm.json || fail "serve index: heat map differs"
        [ "$(get '/api/search?q=step%203' body)" = 200 ] && grep -q '"kind":[[:space:]]*"step"' body ||
            fail "serve index: search $(head -c 300 body)"
        [ "$(get "$tl" sh-tl.json)" = 200 ] || fail "serve index: timeline $(head -c 300 sh-tl.json)"
        python3 "$SRC/tests/tools/timeline_same.py" one-tl.json sh-tl.json || fail "serve index: timeline differs"
        # the timeline's memory rows and capture windows: from the shards (the index keeps no counters)
        [ "$(get "$cq" sh-ct.json)" = 200 ] && same_rows series one-ct.json sh-ct.json &&
            grep -q '"points"' sh-ct.json || fail "serve index: counters differ: $(head -c 300 sh-ct.json)"
        [ "$(get "$wq" sh-win.json)" = 200 ] && same_rows windows one-win.json sh-win.json ||
            fail "serve index: windows differ: $(head -c 300 sh-win.json)"
        ids=$(python3 -c 'import json,sys
a, b = (json.load(open(f)) for f in sys.argv[1:])
ta = {t["id"]: t for t in a["tracks"]}
tb = next(t for t in b["tracks"] if t["rank"] == 5 and t.get("slices"))
print(ta[tb["id"]]["slices"][0][0], tb["slices"][0][0])' one-tl.json sh-tl.json)
        get "/api/slice/${ids#* }" sh-slice.json > /dev/null
        PORT=$one_port; get "/api/slice/${ids% *}" one-slice.json > /dev/null
        python3 -c 'import json,sys
a, b = (json.load(open(f)) for f in sys.argv[1:])
for d in (a, b): d.pop("id"); d.pop("parent")
sys.exit(0 if a == b and a.get("name") else 1)' one-slice.json sh-slice.json ||
            fail "serve index: slice differs: $(cat sh-slice.json) vs $(cat one-slice.json)"
    fi
fi

# A missing shard: named, with its rank; the index still reports.
mv syn.db.d/b.db b.keep
"$H" sql syn.db --rank 3 "SELECT count(*) FROM slices" > miss.out 2> miss.log; rc=$?
[ $rc = 1 ] && grep -q "syn.db.d/b.db" miss.log && grep -q "rank 3" miss.log || fail "missing shard: exit $rc, $(cat miss.log)"
"$H" export syn.db --ranks 3 -o m.json 2> mexp.log && fail "export of a missing shard succeeded"
grep -q "syn.db.d/b.db" mexp.log || fail "export, missing shard: $(cat mexp.log)"
"$H" report syn.db summary --format json > msum.json || fail "report without a shard"
python3 -c 'import json; d = json.load(open("msum.json")); s = [x["status"] for x in d["shards"] if x["host"] == "b"]
assert s == ["missing"], s' || fail "report summary: shard b not shown missing"
if [ -n "${PORT:-}" ] && start_server syn.db serve-miss.err; then
    [ "$(get '/api/timeline?t0=0&t1=2000000000&px=100&ranks=3' body)" = 500 ] && grep -q "syn.db.d/b.db" body ||
        fail "serve, missing shard: $(head -c 300 body)"
    [ "$(get '/api/timeline?t0=0&t1=2000000000&px=100&ranks=4' body)" = 200 ] || fail "serve, missing shard: the others"
fi
mv b.keep syn.db.d/b.db
printf 'x' >> syn.db.d/c.db
"$H" sql syn.db --rank 5 "SELECT 1" > /dev/null 2> inc.log && fail "a grown shard was read"
grep -q "incomplete or was replaced" inc.log || fail "grown shard: $(cat inc.log)"

# A host without files writes no shard; the others' are indexed.
mkdir -p a/part b/part c/part
cp a/syn/* a/part/; cp b/syn/* b/part/
run_mpi 120 -n 7 ./host.sh "$H" ingest -q --node-local --shards -o "$T/part.db" part > part.log 2>&1 ||
    { fail "a host without files"; cat part.log >&2; }
[ "$(sqlite3 part.db "SELECT group_concat(host || '=' || ranks, ' ') FROM shards")" = "a=0,1 b=2,3" ] && [ ! -e part.db.d/c.db ] ||
    fail "a host without files: $(sqlite3 part.db 'SELECT * FROM shards'; ls part.db.d)"

# A host without a reader fails by name; --shards alone is refused.
run_mpi 60 -n 6 ./host.sh "$H" ingest -q --node-local --shards -o "$T/few.db" syn > few.log 2>&1 && fail "host c without a reader"
grep -q "host c has" few.log || fail "host without a reader: $(cat few.log)"
"$H" ingest -q --shards -o x.db all-syn 2> alone.log; rc=$?
[ $rc = 2 ] || fail "--shards without --node-local: exit $rc"
"$H" ingest -q --node-local --shards -o x.db all-syn 2> alone.log; rc=$?
[ $rc = 2 ] && grep -q mpirun alone.log || fail "--shards without mpirun: exit $rc, $(cat alone.log)"

# A reader that dies (host b's, rank 4) ends the job: bounded, non-zero, no
# index and no shard renamed into place.
t0=$SECONDS
HM_DIE_RANK=4 run_mpi 60 -n 7 -x HM_DIE_RANK ./host.sh "$H" ingest -q --node-local --shards -o "$T/dead.db" syn \
    > dead.log 2>&1; rc=$?
[ $rc != 0 ] && [ $rc != 124 ] && [ $((SECONDS - t0)) -lt 60 ] || fail "dead reader: exit $rc after $((SECONDS - t0)) s"
[ -e dead.db ] && fail "dead reader left an index"
ls dead.db.d/*.db > /dev/null 2>&1 && fail "dead reader left a finished shard: $(ls dead.db.d)"
finish

#!/usr/bin/env bash
# The readers of a sharded ingest's index that read every rank's slices,
# each checked against one ingest of the same files: serve's search of slice
# names (from the shards: the first slice of each name in the run's storage
# order, with the id the timeline gives it), export's collective arrows
# (the index's instances through the slices the shards' parts wrote: every
# flow event equal, for all ranks, --ranks subsets and --steps), and
# `report stragglers --method hta` (each rank's kernels read from its
# shard). A missing shard fails each of them, naming its file.
# Three hosts are simulated (tests/tools/shard_hosts.sh): trace ranks 0-1
# on host a, 2-3 on b, 4-5 on c.
set -u
. "$(dirname "$0")/../lib.sh"
. "${HM_SOURCE_DIR:?}/tests/tools/serve_port.sh"
. "${HM_SOURCE_DIR:?}/tests/tools/shard_hosts.sh"
H=${HTAMERGE:?}; SYN=${HTAMERGE_SYNTH:?}; SRC=${HM_SOURCE_DIR:?}
shard_hosts shards_readers

# 6 ranks of two files each, rank 3 late, with the kernels HTA's method
# reads (ncclKernel*, NCCL < 2.19).
(mkdir -p syn && cd syn && HTAMERGE_RUN_START_NS=1700000000000000000 "$SYN" --ranks 6 --gzip --straggler 3:5 \
    --nccl-kernel ncclKernel_AllReduce_RING_LL_Sum_float > /dev/null 2>&1) || fail "synthetic corpus"
ws=($(workers syn))
[ ${#ws[@]} = 6 ] || fail "corpus: ${#ws[@]} ranks"
# A name only ranks 3 (its second file) and 5 (its first file) have: the
# run's first is rank 3's (stored before rank 5's files), which is neither
# the earliest in time nor the lowest id within its shard. Rank 5's step 2
# also lasts 20 ms longer, so that the --steps window spans more than the
# step of the ranks of another shard.
edit() {
    python3 -c 'import gzip, json, sys
d = json.load(gzip.open(sys.argv[1]))
n = 0
for e in d["traceEvents"]:
    if e.get("name") == "aten::relu":
        e["name"] = "shard_probe_op"; n += 1
    if e.get("name") == "ProfilerStep#2" and sys.argv[2] == "stretch":
        e["dur"] += 20000; n += 1000
assert n > (1000 if sys.argv[2] == "stretch" else 0)
json.dump(d, gzip.open(sys.argv[1], "wt"))' "$1" "$2" || fail "editing $1"
}
edit "$(ls syn/"${ws[3]}".* | sort | sed -n 2p)" rename
edit "$(ls syn/"${ws[5]}".* | sort | sed -n 1p)" stretch
mkdir -p a/syn b/syn c/syn all
for i in 0 1 2 3 4 5; do
    h=a; [ $i -ge 2 ] && h=b; [ $i -ge 4 ] && h=c
    cp syn/"${ws[$i]}".* "$h/syn/"; cp syn/"${ws[$i]}".* all/
done

run_mpi 120 -n 7 ./host.sh "$H" ingest -q --node-local --shards -o "$T/syn.db" syn > ingest.log 2>&1 ||
    { fail "sharded ingest"; cat ingest.log >&2; finish; }
"$H" ingest -q -o one.db all || { fail "single ingest"; finish; }
[ "$(sqlite3 syn.db "SELECT group_concat(host || '=' || ranks, ' ') FROM (SELECT * FROM shards ORDER BY id)")" \
    = "a=0,1 b=2,3 c=4,5" ] || fail "shards table: $(sqlite3 syn.db 'SELECT * FROM shards')"

# ---- report stragglers --method hta: from the shards, as from one file ----
for opts in "" "--steps 2,3,4" "--candidates 3"; do
    "$H" report one.db stragglers --method hta $opts --format json > hta1.json || fail "hta $opts: one ingest"
    "$H" report syn.db stragglers --method hta $opts --format json > hta.json 2> hta.log ||
        fail "hta $opts on the index: $(cat hta.log)"
    cmp -s hta1.json hta.json || fail "hta $opts: the index's differs: $(diff hta1.json hta.json | head -4)"
done
python3 -c 'import json; d = json.load(open("hta1.json"))
assert d["candidates"][0] == 3 and d["kernel"].startswith("ncclKernel") and d["iterations"] >= 4, d' ||
    fail "hta: rank 3 not found late: $(head -c 300 hta1.json)"

# ---- export: the collective arrows, and every other event, as one file's ----
for r in "" "--ranks 1,2,5" "--ranks 3" "--steps 2" "--ranks 0,4 --steps 2,3"; do
    "$H" export syn.db $r -o e.json 2> e.log || fail "export $r of the index: $(cat e.log)"
    "$H" export one.db $r -o e1.json 2> e1.log || fail "export $r: $(cat e1.log)"
    python3 "$SRC/tests/tools/export_same.py" e.json e1.json > same.out || fail "export $r: the index's differs"
    n=$(sed -n 's/.* \([0-9]*\) collective flows.*/\1/p' e.log)
    [ "$n" = "$(sed -n 's/.* \([0-9]*\) collective flows.*/\1/p' e1.log)" ] || fail "export $r: collective flows $n"
    case $r in
        "--ranks 3") [ "$n" = 0 ] || fail "export $r: an arrow through one rank" ;;
        *) [ "${n:-0}" -gt 0 ] || fail "export $r: no collective arrow" ;;
    esac
done

# ---- serve: the search finds slices of every rank, as one file's ----
start_server() {
    "$H" serve "$1" --listen 127.0.0.1:0 2> "$2" &
    pids+=($!)
    PORT=$(serve_port "$2") || { fail "serve $1 did not start: $(cat "$2")"; return 1; }
}
get() { curl -s --max-time 20 -o "$3" -w '%{http_code}' "http://127.0.0.1:$1$2"; }
# same_hits A B PORT_A PORT_B: the same hits, a slice hit's id aside; each
# slice hit's id gives the same slice on its server, and on B's the id is
# the one B's timeline draws the slice with.
same_hits() {
    python3 - "$@" <<'EOF'
import json, subprocess, sys, urllib.request
a, b = (json.load(open(f))["hits"] for f in sys.argv[1:3])
pa, pb = sys.argv[3:5]
get = lambda port, path: json.load(urllib.request.urlopen("http://127.0.0.1:%s%s" % (port, path), timeout=20))
strip = lambda h: {k: v for k, v in h.items() if k != "id" or h["kind"] != "slice"}
if [strip(h) for h in a] != [strip(h) for h in b]:
    sys.exit("hits differ: %s vs %s" % (json.dumps(a)[:300], json.dumps(b)[:300]))
for x, y in zip(a, b):
    if x["kind"] != "slice":
        continue
    sa, sb = get(pa, "/api/slice/%d" % x["id"]), get(pb, "/api/slice/%d" % y["id"])
    # Ids are each file's own: the index numbers a rank's tracks as its
    # batches arrive over MPI, in an order a loaded machine changes (the
    # track's rank, kind and name are compared).
    for s in (sa, sb):
        s.pop("id"), s.pop("parent"), s.pop("track")
    if sa != sb or sa["name"] not in x["label"]:
        sys.exit("slice of %s differs: %s vs %s" % (x["label"], sa, sb))
    tl = get(pb, "/api/timeline?t0=%d&t1=%d&px=4000&ranks=%d" % (y["t0"], y["t1"] + 1, y["rank"]))
    if not any(s[0] == y["id"] for t in tl["tracks"] for s in t.get("slices", [])):
        sys.exit("the timeline does not draw slice %d (%s)" % (y["id"], y["label"]))
EOF
}
if command -v curl > /dev/null && start_server one.db serve-one.err; then
    p1=$PORT
    if start_server syn.db serve-index.err; then
        p2=$PORT
        for q in shard_probe aten mm backward nccl ProfilerStep 'step%203' 'rank%204' 'allreduce%202' zzz_none; do
            [ "$(get "$p1" "/api/search?q=$q" s1.json)" = 200 ] || fail "search $q: $(head -c 300 s1.json)"
            [ "$(get "$p2" "/api/search?q=$q" s2.json)" = 200 ] || fail "search $q on the index: $(head -c 300 s2.json)"
            same_hits s1.json s2.json "$p1" "$p2" || fail "search $q: the index's differs"
        done
        get "$p2" "/api/search?q=shard_probe" s0.json > /dev/null
        python3 -c 'import json; h = json.load(open("s0.json"))["hits"]
assert [(x["kind"], x["rank"]) for x in h] == [("slice", 3)], h' || fail "search: the probe is not rank 3's"
        # the index keeps no aten::mm: the hit came from a shard
        [ "$(sqlite3 syn.db "SELECT count(*) FROM slices s JOIN strings n ON n.id = s.name WHERE n.str = 'aten::mm'")" = 0 ] ||
            fail "the index keeps aten::mm: the search was not checked on the shards"
    fi
fi

# ---- a missing shard: each reader names its file ----
mv syn.db.d/b.db b.keep
"$H" report syn.db stragglers --method hta > /dev/null 2> miss-hta.log && fail "hta without shard b"
grep -q "syn.db.d/b.db" miss-hta.log || fail "hta, missing shard: $(cat miss-hta.log)"
"$H" export syn.db --ranks 0,1 -o m.json 2> miss-exp.log || fail "export of shard a alone: $(cat miss-exp.log)"
"$H" export syn.db -o m.json 2> miss-exp.log && fail "export without shard b"
grep -q "syn.db.d/b.db" miss-exp.log || fail "export, missing shard: $(cat miss-exp.log)"
if [ -n "${p2:-}" ] && start_server syn.db serve-miss.err; then
    [ "$(get "$PORT" '/api/search?q=shard_probe' body)" = 500 ] && grep -q "syn.db.d/b.db" body ||
        fail "search, missing shard: $(head -c 300 body)"
    # a name of rank 0 is found in shard a, before b is needed
    [ "$(get "$PORT" '/api/search?q=aten::mm' body)" = 200 ] || fail "search, missing shard b, rank 0's: $(head -c 300 body)"
fi
mv b.keep syn.db.d/b.db
finish

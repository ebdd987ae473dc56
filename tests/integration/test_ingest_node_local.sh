#!/usr/bin/env bash
# `mpirun htamerge ingest --node-local`: every host has its own trace folder
# at the same path. Three hosts are simulated on this machine: a wrapper
# gives each rank a host name (HTAMERGE_HOSTNAME) and that host's folder as
# its working directory, so each host's files are seen by its ranks only.
# The merged file holds the same tables as one ingest of all the files,
# names every file HOST:PATH (equal paths on two hosts stay apart), and a
# reader that dies ends the job (non-zero, bounded, no output file).
set -u
. "$(dirname "$0")/../lib.sh"
H=${HTAMERGE:?}; FX=${HM_SOURCE_DIR:?}/tests/fixtures/hta
mpi_env
export ASAN_OPTIONS=${ASAN_OPTIONS:-}:detect_leaks=0
hm_tmpdir ingest_node_local
cd "$T" || exit 1
T=$(pwd -P)

# Hosts a (ranks 0-1), b (2-3), c (4): rank 0 only writes, so host a has
# one reader; each host holds files the others do not, under one path.
mkdir -p a/traces b/traces c/traces all
cp "$FX/trace_filter/sampled_rank-0.json.gz" a/traces/rank-0.json.gz
cp "$FX/trace_filter/sampled_rank-1.json.gz" b/traces/rank-1.json.gz
cp "$FX/distributed_info_unavailable/distributed_info_not_found.json.gz" c/traces/rank-4.json.gz
cp "$FX/large_integer_trace/"*.gz b/traces/
cp a/traces/* b/traces/* c/traces/* all/
ln -s "$HM_SOURCE_DIR/tests/tools/sim_host.sh" host.sh
export HM_HOSTS="0:a 2:b 4:c"
export HM_ROOT=$T

run_mpi 120 -n 5 ./host.sh "$H" ingest -q --node-local -o "$T/nl.db" traces > nl.log 2>&1 \
    || { fail "node-local ingest"; cat nl.log >&2; }
"$H" ingest -q -o one.db all || fail "single ingest"

# Every table equal but for file names.
for q in "SELECT count(*) || ' ' || sum(dur) || ' ' || sum(depth) FROM slices" \
         "SELECT group_concat(x, ' ') FROM (SELECT rank || ':' || idle_us || ':' || compute_pct || ':' || kernel_us AS x FROM v_temporal ORDER BY rank)" \
         "SELECT group_concat(rank, ' ') FROM (SELECT rank FROM ranks ORDER BY rank)" \
         "SELECT count(*) || ' ' || coalesce(sum(count), 0) FROM skipped" \
         "SELECT (SELECT count(*) FROM collectives) || ' ' || (SELECT count(*) FROM steps) || ' ' || (SELECT count(*) FROM counters) || ' ' || (SELECT count(*) FROM collective_instances)"; do
    a=$(sql1 one.db "$q"); b=$(sql1 nl.db "$q")
    [ -n "$a" ] && [ "$a" = "$b" ] || fail "node-local differs: $q: '$b' vs '$a'"
done
# File identity names the host.
want="a:traces/rank-0.json.gz b:traces/rank-1.json.gz b:traces/rank-70 c:traces/rank-4.json.gz"
got=$(sql1 nl.db "SELECT group_concat(p, ' ') FROM (SELECT CASE WHEN path LIKE 'b:traces/rank-70.%' THEN 'b:traces/rank-70' ELSE path END AS p FROM files ORDER BY path)")
[ "$got" = "$want" ] || fail "file names: '$got'"

# Ranks of several files: those whose files are all on one host are
# analysed by the reader that reads them (collector/ingest_join.h); a rank
# split over two hosts is read back and analysed by rank 0 at the end. The
# analyses are those of one ingest of every file either way.
(mkdir -p syn && cd syn && HTAMERGE_RUN_START_NS=1700000000000000000 "${HTAMERGE_SYNTH:?}" --ranks 4 --gzip \
    > /dev/null 2>&1) || fail "synthetic corpus"
mkdir -p a/split b/split c/split
i=0
for w in $(ls syn | sed 's/\..*//' | sort -u); do
    set -- syn/"$w".*
    case $i in
        0) cp "$@" b/split/ ;;                 # one host, one reader
        1) cp "$@" c/split/ ;;
        *) cp "$1" b/split/; cp "$2" c/split/ ;;  # split over hosts b and c
    esac
    i=$((i + 1))
done
HTAMERGE_STATS=1 run_mpi 120 -n 5 ./host.sh "$H" ingest -q --node-local -o "$T/split.db" split > split.log 2>&1 \
    || { fail "ranks split over hosts"; cat split.log >&2; }
"$H" ingest -q -o syn.db syn || fail "single ingest of the synthetic corpus"
grep -q "ranks of several files: 2 analysed by their reader, 2 read back" split.log \
    || { fail "split ranks: not 2 joined by readers and 2 read back"; grep "rank 0:" split.log >&2; }
# Table by table, strings as text (file names differ: HOST:PATH).
for t in a_temporal a_overlap a_idle a_kernel_class a_kernel_labels; do
    q="SELECT * FROM $t ORDER BY mode, rank"
    [ -n "$(sql1 syn.db "$q")" ] && [ "$(sqlite3 split.db "$q")" = "$(sqlite3 syn.db "$q")" ] || fail "split ranks: $t differs"
done
for q in "SELECT k.mode, k.rank, s.str, k.count, k.sum_us, k.mean_us, k.std_us FROM a_kernels k JOIN strings s ON s.id = k.name ORDER BY 1, 2, 3" \
         "SELECT rank, number, ts, dur, gpu_busy_us, kernel_count, dropped, source FROM steps ORDER BY rank, number" \
         "SELECT iteration, count(*), sum(dur) FROM slices GROUP BY iteration ORDER BY iteration"; do
    [ "$(sqlite3 split.db "$q")" = "$(sqlite3 syn.db "$q")" ] || fail "split ranks differ: $q"
done

# The same path on two hosts: two files, two ranks, no collision.
mkdir -p a/dup b/dup c/dup
cp "$FX/trace_filter/sampled_rank-0.json.gz" a/dup/rank-0.json.gz
cp "$FX/trace_filter/sampled_rank-1.json.gz" b/dup/rank-0.json.gz   # claims rank 1 inside
run_mpi 120 -n 5 ./host.sh "$H" ingest -q --node-local -o "$T/dup.db" dup > dup.log 2>&1 \
    || { fail "equal paths on two hosts"; cat dup.log >&2; }
[ "$(sql1 dup.db "SELECT group_concat(rank || '=' || path, ' ') FROM (SELECT rank, path FROM files ORDER BY path)")" \
    = "0=a:dup/rank-0.json.gz 1=b:dup/rank-0.json.gz" ] || fail "equal paths collided"

# A bad file is named with its host; --keep-going skips it.
echo '{"traceEvents": [' > c/dup/rank-9.json
run_mpi 120 -n 5 ./host.sh "$H" ingest -q --node-local -k -o "$T/keep.db" dup > keep.log 2>&1; rc=$?
[ $rc = 3 ] || fail "--keep-going: exit $rc"
grep -q "c:dup/rank-9.json" keep.log || fail "bad file not named with its host"

# A folder missing on one host fails the job by the host's name.
mv b/dup b/gone
run_mpi 120 -n 5 ./host.sh "$H" ingest -q --node-local -o "$T/miss.db" dup > miss.log 2>&1; rc=$?
[ $rc = 1 ] || fail "missing folder: exit $rc"
grep -q "host b" miss.log || fail "missing folder: host not named"
mv b/gone b/dup

# A reader that dies (host b's first, before its first file) ends the job:
# bounded, non-zero, no output. mpirun itself exits 137 then (the rank's
# signal); a hang would be timeout's 124.
t0=$SECONDS
HM_DIE_RANK=2 run_mpi 60 -n 5 -x HM_DIE_RANK ./host.sh "$H" ingest -q --node-local -o "$T/dead.db" traces \
    > dead.log 2>&1; rc=$?
[ $rc != 0 ] && [ $rc != 124 ] && [ $((SECONDS - t0)) -lt 60 ] || fail "dead reader: exit $rc after $((SECONDS - t0)) s"
grep -qi "signal 9\|killed" dead.log || { fail "dead reader: not reported"; cat dead.log >&2; }
[ -e dead.db ] && fail "dead reader left an output file"

finish

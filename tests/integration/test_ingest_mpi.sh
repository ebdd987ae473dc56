#!/usr/bin/env bash
# `mpirun -n N htamerge ingest`: ranks 1..N-1 read the files in parallel and
# only records travel to rank 0. Same numbers as the single-process ingest;
# bad files are reported by name, skipped with --keep-going, and nothing hangs.
set -u
. "$(dirname "$0")/../lib.sh"
H=${HTAMERGE:?}; FX=${HM_SOURCE_DIR:?}/tests/fixtures/hta
mpi_env
export ASAN_OPTIONS=${ASAN_OPTIONS:-}:detect_leaks=0
hm_tmpdir ingest_mpi
cd "$T" || exit 1

mkdir in; cp "$FX/trace_filter/"*.gz in/
cp "$FX/distributed_info_unavailable/distributed_info_not_found.json.gz" in/rank-4.json.gz
cp "$FX/large_integer_trace/"*.gz in/
HTAMERGE_STATS=1 run_mpi 120 -n 3 "$H" ingest -q -o par.db in > par.log 2>&1 || { fail "parallel ingest"; cat par.log >&2; }
# The readers analyse the files they parse; rank 0 only decodes and stores.
grep -q "(0 of 4 files analysed on rank 0)" par.log || { fail "rank 0 analysed files"; grep "rank 0:" par.log >&2; }
"$H" ingest -q -o one.db in || fail "single ingest"
q="SELECT group_concat(x, ' ') FROM (SELECT rank || ':' || idle_us || ':' || compute_pct || ':' || kernel_us AS x FROM v_temporal ORDER BY rank)"
[ -n "$(sql1 one.db "$q")" ] && [ "$(sql1 par.db "$q")" = "$(sql1 one.db "$q")" ] || fail "parallel numbers differ"
q="SELECT count(*) || ' ' || sum(dur) FROM slices"
[ "$(sql1 par.db "$q")" = "$(sql1 one.db "$q")" ] || fail "parallel slices differ"
[ "$(sql1 par.db "SELECT group_concat(rank, ' ') FROM (SELECT rank FROM ranks ORDER BY rank)")" = "0 1 4 70" ] || fail "parallel ranks"
# Files are stored in the order of the list whatever the readers do: the
# same database as the single-process ingest, table by table, row by row.
dump() {
    local t
    for t in $(sqlite3 "$1" "SELECT name FROM sqlite_master WHERE type = 'table' AND name != 'meta' ORDER BY name"); do
        echo "== $t"; sqlite3 "$1" "SELECT * FROM \"$t\""
    done
}
[ "$(dump par.db | md5sum)" = "$(dump one.db | md5sum)" ] || fail "parallel database differs from the single-process one"
run_mpi 120 -n 5 "$H" ingest -q -o par4.db in > par4.log 2>&1 || { fail "parallel ingest, 4 readers"; cat par4.log >&2; }
[ "$(dump par4.db | md5sum)" = "$(dump one.db | md5sum)" ] || fail "4 readers: database differs"
# Ranks of several files (htamerge-synth: two per rank, WORKER.TIME names):
# the listing hands a rank's files to one reader, which analyses them
# together, so rank 0 reads no rank back; the database is the same. The
# variants cover the times the analyses see (on the files' clock where
# fractional with one base, else aligned: integer times, two bases) and a
# rank without ProfilerSteps, whose steps rank 0 finds again after reading
# it back.
S=${HTAMERGE_SYNTH:?}
mkdir multi; (cd multi && HTAMERGE_RUN_START_NS=1700000000000000000 "$S" --ranks 6 --gzip > /dev/null 2>&1) \
    || fail "synthetic corpus"
variant() { # NAME SED-SCRIPT all|later: a copy of multi, every file or each rank's later one edited
    local f b; mkdir "$1"
    for f in multi/*.gz; do
        b=${f##*/}
        if [ "$3" = all ] || [ "$b" != "$(ls multi | grep "^${b%%.*}\." | head -1)" ]; then
            zcat "$f" | sed -E "$2" | gzip > "$1/$b"
        else
            cp "$f" "$1/"
        fi
    done
}
variant bases 's/"baseTimeNanoseconds": [0-9]+/"baseTimeNanoseconds": 1700000000000005000/' later
variant integer 's/("(ts|dur)": [0-9]+)\.[0-9]+/\1/g' all
variant nosteps 's/ProfilerStep#/Step /g' all
for v in multi bases integer nosteps; do
    "$H" ingest -q -o "$v-one.db" "$v" || fail "$v: single ingest"
    for n in 3 5; do
        HTAMERGE_STATS=1 run_mpi 120 -n $n "$H" ingest -q -o "$v-$n.db" "$v" > "$v-$n.log" 2>&1 \
            || { fail "$v: parallel ingest, -n $n"; cat "$v-$n.log" >&2; }
        [ "$(dump "$v-$n.db" | md5sum)" = "$(dump "$v-one.db" | md5sum)" ] || fail "$v, -n $n: database differs"
        want="6 analysed by their reader, 0 read back"; [ $v = nosteps ] && want="0 analysed by their reader, 6 read back"
        grep -q "ranks of several files: $want" "$v-$n.log" || { fail "$v, -n $n: not '$want'"; grep "rank 0:" "$v-$n.log" >&2; }
    done
done

# A copy of rank 0's file claims rank 0 with the same steps: the same data
# twice is an error, by name (other files of a rank join it: rank_files.h).
mkdir again; cp "$FX/trace_filter/sampled_rank-0.json.gz" again/copy.json.gz
run_mpi 120 -n 3 "$H" ingest -q -o dup.db in again > dup.log 2>&1
[ $? = 1 ] || fail "duplicate rank: exit code"
grep -q "rank 0 is also claimed" dup.log || fail "duplicate rank not reported"

mkdir bad; cp "$FX/trace_filter/"*.gz bad/; echo '{"traceEvents": [' > bad/rank-9.json
run_mpi 120 -n 3 "$H" ingest -q -o bad.db bad > bad.log 2>&1; rc=$?
[ $rc != 0 ] && [ $rc != 124 ] || fail "bad file: exit $rc"
grep -q "rank-9.json" bad.log || fail "bad file not named"
[ -e bad.db ] && fail "failed parallel ingest left a file"
run_mpi 120 -n 3 "$H" ingest -q -k -o keep.db bad > keep.log 2>&1; rc=$?
[ $rc = 3 ] || fail "--keep-going: exit $rc"
[ "$(sql1 keep.db 'SELECT count(*) FROM ranks')" = 2 ] || fail "--keep-going: ranks"

finish

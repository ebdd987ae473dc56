#!/usr/bin/env bash
# End-to-end: `htamerge ingest` + `report` + `sql` as a user runs them, on the
# real HTA traces and on bad inputs (each must give a one-line error naming
# the file and, where known, the byte offset; --keep-going ingests the rest).
set -u
. "$(dirname "$0")/../lib.sh"
H=${HTAMERGE:?}; FX=${HM_SOURCE_DIR:?}/tests/fixtures/hta
hm_tmpdir cli_ingest
expect_rc() { # expected-rc description command...
    local want=$1 what=$2; shift 2
    "$@" >"$T/out" 2>"$T/err"; local rc=$?
    [ "$rc" = "$want" ] || { fail "$what: exit $rc, expected $want"; cat "$T/err" >&2; }
}
expect_err() { grep -q -- "$1" "$T/err" || { fail "stderr lacks '$1'"; cat "$T/err" >&2; }; }

# Parity through the command line.
expect_rc 0 "ingest trace_filter" "$H" ingest -o "$T/tf.db" "$FX/trace_filter"
expect_err "ingested 2 of 2 files"
grep -q "0 skipped events" "$T/err" || fail "real traces report skipped events"
[ "$(sql1 "$T/tf.db" 'SELECT idle_us FROM v_temporal WHERE rank = 0')" = 321378 ] || fail "rank 0 idle"
[ "$(sql1 "$T/tf.db" 'SELECT compute_pct FROM v_temporal WHERE rank = 1')" = 22.57 ] || fail "rank 1 compute %"
[ "$(sql1 "$T/tf.db" 'SELECT overlap_pct FROM v_overlap WHERE rank = 0')" = 11.81 ] || fail "rank 0 overlap"
[ "$(sql1 "$T/tf.db" "SELECT other_us FROM v_idle WHERE rank = 0 AND stream = 7")" = 261740 ] || fail "idle other"
[ "$(sql1 "$T/tf.db" 'PRAGMA integrity_check')" != "" ] 2>/dev/null
expect_rc 0 "report temporal json" "$H" report "$T/tf.db" temporal --format json
grep -q '"idle_us":[[:space:]]*328671' "$T/out" || fail "json temporal rank 1 idle"
expect_rc 0 "report kernels csv" "$H" report "$T/tf.db" kernels --format csv
grep -q '^COMPUTATION overlapping COMMUNICATION,56747,' "$T/out" || fail "kernel types csv"
expect_rc 0 "report idle table" "$H" report "$T/tf.db" idle --ranks 1
grep -q '^ *0 ' "$T/out" && fail "--ranks 1 shows rank 0"
expect_rc 0 "report all-steps" "$H" report "$T/tf.db" temporal --all-steps --format csv
expect_rc 2 "unknown topic" "$H" report "$T/tf.db" nosuchtopic
expect_rc 2 "bad format" "$H" report "$T/tf.db" temporal --format xml
expect_rc 0 "integrity" sqlite3 "$T/tf.db" 'PRAGMA integrity_check'
grep -qx ok "$T/out" || fail "integrity_check"

# Read-only SQL.
expect_rc 1 "sql write refused" "$H" sql "$T/tf.db" "DELETE FROM slices"
expect_err "refused"
expect_rc 1 "sql attach refused" "$H" sql "$T/tf.db" "ATTACH '$T/x.db' AS x"
expect_rc 1 "sql two statements" "$H" sql "$T/tf.db" "SELECT 1; SELECT 2"
expect_rc 0 "sql master readable" "$H" sql "$T/tf.db" "SELECT count(*) FROM sqlite_master"
# A statement that opens with a SQL comment is the statement, not an option.
[ "$(sql1 "$T/tf.db" "-- rank 0's idle time
SELECT idle_us FROM v_temporal WHERE rank = 0")" = 321378 ] || fail "sql statement opening with a comment"
expect_rc 2 "sql unknown option" "$H" sql "$T/tf.db" --bogus "SELECT 1"

# Bad inputs: one line naming the file (and the offset when known).
mkdir -p "$T/bad"
zcat "$FX/nccl_parser_config/nccl_data.json.gz" | head -c 200000 > "$T/bad/rank-5.json"
expect_rc 1 "truncated JSON" "$H" ingest -q -o "$T/bad.db" "$T/bad/rank-5.json"
expect_err "rank-5.json"; expect_err "byte "
[ "$(wc -l < "$T/err")" = 1 ] || fail "error is not one line"
[ -e "$T/bad.db" ] && fail "failed ingest left an output file"
ls "$T" | grep -q 'tmp-' && fail "failed ingest left a temporary file"

head -c 30000 "$FX/trace_filter/sampled_rank-0.json.gz" > "$T/bad/rank-6.json.gz"
expect_rc 1 "truncated gzip" "$H" ingest -q -o "$T/bad.db" "$T/bad/rank-6.json.gz"
expect_err "rank-6.json.gz"; expect_err "gzip"

cp "$FX/trace_filter/sampled_rank-1.json.gz" "$T/bad/rank-7.json.gz"
printf 'garbagegarbagegarbage' | dd of="$T/bad/rank-7.json.gz" bs=1 seek=5000 conv=notrunc 2>/dev/null
expect_rc 1 "corrupt gzip" "$H" ingest -q -o "$T/bad.db" "$T/bad/rank-7.json.gz"
expect_err "rank-7.json.gz"; expect_err "corrupt gzip data at byte [0-9]*: ."

# Random bytes named .json.gz: "not gzip", not a JSON error (RELIABILITY.md).
head -c 5000 /dev/urandom | tr '\037' x > "$T/bad/rank-10.json.gz"
expect_rc 1 "random bytes as .json.gz" "$H" ingest -q -o "$T/bad.db" "$T/bad/rank-10.json.gz"
expect_err "rank-10.json.gz: byte 0: not a gzip file (no 1f 8b header"

echo '{"schemaVersion": 1, "distributedInfo": {"rank": 8}}' > "$T/bad/rank-8.json"
expect_rc 1 "no traceEvents" "$H" ingest -q -o "$T/bad.db" "$T/bad/rank-8.json"
expect_err "traceEvents"

: > "$T/bad/rank-9.json"
expect_rc 1 "empty file" "$H" ingest -q -o "$T/bad.db" "$T/bad/rank-9.json"
expect_err "rank-9.json"

# Per-event problems are skipped and counted, not fatal.
cat > "$T/skips.json" <<'JSON'
{"distributedInfo": {"rank": 3}, "traceEvents": [
 {"ph": "X", "cat": "kernel", "name": "k1", "pid": 0, "tid": 7, "ts": 10, "dur": 5, "args": {"stream": 7, "correlation": 1}},
 {"ph": "X", "cat": "kernel", "name": "nodur", "pid": 0, "tid": 7, "ts": 20},
 {"ph": "X", "cat": "kernel", "name": "badts", "pid": 0, "tid": 7, "ts": "soon", "dur": 1},
 {"ph": "X", "cat": "kernel", "name": "nan", "pid": 0, "tid": 7, "ts": 1e999, "dur": 1},
 {"ph": "X", "name": "nocat", "pid": 0, "tid": 7, "ts": 30, "dur": 1},
 {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 8, "dur": 1, "args": {"correlation": 1}}
]}
JSON
expect_rc 0 "skipped events" "$H" ingest -q -o "$T/skips.db" "$T/skips.json"
[ "$(sql1 "$T/skips.db" 'SELECT sum(count) FROM skipped')" = 4 ] || fail "skipped count"
expect_rc 0 "summary shows skipped" "$H" report "$T/skips.db" summary
grep -q "skipped_events: 4" "$T/out" || fail "summary skipped_events"

# --keep-going ingests the good files and exits 3.
mkdir -p "$T/mixed"
cp "$FX/trace_filter/"*.json.gz "$T/mixed/"
cp "$T/bad/rank-8.json" "$T/mixed/"
expect_rc 1 "mixed without --keep-going" "$H" ingest -q -o "$T/mixed.db" "$T/mixed"
expect_rc 3 "mixed with --keep-going" "$H" ingest -q -k -o "$T/mixed.db" "$T/mixed"
expect_err "skipping"
[ "$(sql1 "$T/mixed.db" 'SELECT count(*) FROM ranks')" = 2 ] || fail "keep-going ranks"

# Two files claiming one rank is an error, naming both.
mkdir -p "$T/dup"
cp "$FX/trace_filter/sampled_rank-0.json.gz" "$T/dup/a.json.gz"
cp "$FX/trace_filter/sampled_rank-0.json.gz" "$T/dup/b.json.gz"
expect_rc 1 "duplicate ranks" "$H" ingest -q -o "$T/dup.db" "$T/dup"
expect_err "rank 0 is also claimed by"; expect_err "a.json.gz"

# A file without distributedInfo takes its rank from its name.
cp "$FX/distributed_info_unavailable/distributed_info_not_found.json.gz" "$T/rank-4.trace.json.gz"
expect_rc 0 "rank from file name" "$H" ingest -q -o "$T/named.db" "$T/rank-4.trace.json.gz"
[ "$(sql1 "$T/named.db" 'SELECT rank || rank_source FROM ranks')" = "4file name" ] || fail "rank from name"

# Empty directory and missing path.
mkdir -p "$T/empty"
expect_rc 1 "empty directory" "$H" ingest -q -o "$T/e.db" "$T/empty"
expect_err "empty"
expect_rc 1 "missing path" "$H" ingest -q -o "$T/e.db" "$T/nonexistent"
expect_rc 2 "no paths" "$H" ingest
expect_rc 0 "help" "$H" ingest --help
grep -q "exit status" "$T/out" || fail "--help lacks exit codes"

finish "ok"

#!/usr/bin/env bash
# The report topics are one table (query/topics.c); this checks that each
# topic the server lists at /api/topics is whole everywhere else: in
# `htamerge report --help`, described in the man page, answered by
# /api/report/TOPIC and by `report TOPIC --format json` with the same
# document, and that help lists no topic the table lacks. A topic added
# to the table without its man page entry or its queries fails here.
set -u
. "${HM_SOURCE_DIR:?}/tests/tools/serve_port.sh"
H=${HTAMERGE:?}; SRC=${HM_SOURCE_DIR:?}
MAN=$SRC/man/htamerge.1
T=$(mktemp -d "${HM_TMPDIR:-/tmp}/cli_topics.XXXXXX")
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$T"; }
trap cleanup EXIT
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
command -v curl >/dev/null || { echo "FAIL: curl is not installed"; exit 1; }

gzip -dc "$SRC/tests/fixtures/gpu/nccl2_straggler1.db.gz" > "$T/run.db" || { echo "FAIL: fixture"; exit 1; }
"$H" serve "$T/run.db" --listen 127.0.0.1:0 2>"$T/serve.err" &
pid=$!
PORT=$(serve_port "$T/serve.err") || { echo "FAIL: server did not start: $(cat "$T/serve.err")"; exit 1; }
get() { curl -s --max-time 20 -o "$2" -w '%{http_code}' "http://127.0.0.1:$PORT$1"; }

[ "$(get /api/topics "$T/topics.json")" = 200 ] || { echo "FAIL: /api/topics: $(cat "$T/topics.json")"; exit 1; }
table=$(python3 -c 'import json,sys; print("\n".join(t["name"] for t in json.load(open(sys.argv[1]))["topics"] if t["help"]))' \
    "$T/topics.json") || { echo "FAIL: /api/topics is not {topics: [{name, help}]}"; exit 1; }
[ "$(wc -l <<<"$table")" -ge 10 ] || fail "/api/topics lists only: $table"

"$H" report --help >"$T/help" 2>&1 || fail "report --help exited $?"
helped=$(sed -n '/^topics:/,/^$/p' "$T/help" | sed -n 's/^  \([a-z][a-z_-]*\) .*/\1/p')
[ "$helped" = "$table" ] || fail "report --help lists [$(echo $helped)], the table [$(echo $table)]"

for t in $table; do
    # roff writes a hyphen as "\-"
    grep -qxF ".B ${t//-/\\-}" "$MAN" || fail "man page does not describe report topic $t"
    code=$(get "/api/report/$t" "$T/api.$t.json")
    [ "$code" = 200 ] || fail "/api/report/$t: HTTP $code $(head -c 200 "$T/api.$t.json")"
    "$H" report "$T/run.db" "$t" --format json >"$T/cli.$t.json" 2>"$T/cli.$t.err" || fail "report $t: $(cat "$T/cli.$t.err")"
    python3 -c 'import json,sys; sys.exit(json.load(open(sys.argv[1])) != json.load(open(sys.argv[2])))' \
        "$T/api.$t.json" "$T/cli.$t.json" || fail "/api/report/$t differs from report $t --format json"
done
[ "$(get /api/report/no_such_topic "$T/bad.json")" = 404 ] || fail "/api/report/no_such_topic: not 404"

[ $fails -eq 0 ] && echo "test_topics: all passed"
exit $((fails > 0))

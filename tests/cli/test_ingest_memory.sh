#!/usr/bin/env bash
# Ingest's cross-rank stages keep what they read of the ranks' view within
# the spill arena's resident budget (common/spill.h; issue 20, item 3).
# Every stage that reads a rank's view must tell the arena; one that does
# not keeps the whole view resident, which at 1,024 ranks was 26-39 MB
# more than the budget (NVTX stitching reads each stitched range's members
# rank after rank; the memory peaks read each rank's phases). Here a small
# budget (the test hook HTAMERGE_SPILL_RESIDENT_KB=512) shows it on 256
# ranks: the peak RSS may rise by a few MB of the stages' own arrays after
# the view is loaded, not by the view (about 12 MB here).
set -u
. "$(dirname "$0")/../lib.sh"
H=${HTAMERGE:?}
S=${HTAMERGE_SYNTH:-$(dirname "$H")/htamerge-synth}
[ -x "$S" ] || skip "htamerge-synth is not built"
"$S" --help 2>&1 | grep -q -- '--ranks' || skip "htamerge-synth has no --ranks"
# ASan keeps freed memory in quarantine: the peak RSS says nothing there
# (the release build runs this test).
hm_sanitized "$H" && skip "a sanitizer build: resident memory is ASan's"
hm_tmpdir cli_ingest_memory

HTAMERGE_TRACE_DIR=$T/r256 HTAMERGE_RUN_START_NS=1700000000000000000 \
    "$S" --ranks 256 --steps 8 --gzip --straggler 133:20 >/dev/null 2>&1 || fail "htamerge-synth"
HTAMERGE_SPILL_RESIDENT_KB=512 HTAMERGE_STATS=1 "$H" ingest -q -o "$T/r256.db" "$T/r256" 2> "$T/stats" ||
    fail "ingest of 256 ranks: $(tail -3 "$T/stats")"
# "htamerge-stats: cross-rank STAGE ... s, peak RSS N MB", in stage order.
read -r base top worst <<<"$(awk '/cross-rank .*peak RSS/ { mb = $(NF - 1); stage = $3
    if (stage ~ /^load_view/) base = mb
    else if (base != "" && mb > top) { top = mb; worst = stage } }
    END { print base, top, worst }' "$T/stats")"
[ -n "$base" ] && [ -n "$top" ] || fail "no per-stage peak RSS in the stats: $(head -5 "$T/stats")"
[ -n "$base" ] && [ -n "$top" ] && [ "$((top - base))" -le 8 ] ||
    fail "the peak RSS rose from ${base:-?} MB with the view loaded to ${top:-?} MB at ${worst:-?}: a stage keeps the view resident"
[ "$(sql1 "$T/r256.db" 'SELECT count(*) FROM ranks')" = 256 ] || fail "256 ranks ingested"
finish

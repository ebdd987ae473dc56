#!/usr/bin/env bash
# The command line's own documentation: --version, `help`, `help CMD` and
# `CMD --help` for every command `help` lists (usage line, examples, exit
# 0 on stdout; mistakes exit 2 on stderr), and man/htamerge.1: renders
# without groff warnings, has a section for every command and report
# topic, and documents every HTAMERGE_* variable the sources read (test
# hooks named *_TEST_* and HTAMERGE_NO_PIDFD aside).
set -u
. "$(dirname "$0")/../lib.sh"
H=${HTAMERGE:?}; SRC=${HM_SOURCE_DIR:?}
MAN=$SRC/man/htamerge.1
hm_tmpdir cli_help

# ---- version ----
"$H" --version >"$T/v" 2>"$T/v.err" || fail "--version exited $?"
[ "$(wc -l <"$T/v")" -eq 3 ] || fail "--version: want 3 lines: $(cat "$T/v")"
grep -qx 'htamerge [0-9][0-9.]*' "$T/v" || fail "--version line 1: $(sed -n 1p "$T/v")"
want_schema=$(sed -n "s/.*'schema_version', '\([0-9]*\)'.*/\1/p" "$SRC/sql/schema.sql")
grep -qx "database schema version $want_schema" "$T/v" || fail "--version schema: want $want_schema: $(cat "$T/v")"
grep -qE '^gpu capture: (cupti,nvtx,nccl|nvtx,nccl .*|not built .*)$' "$T/v" || fail "--version gpu: $(cat "$T/v")"
[ -s "$T/v.err" ] && fail "--version wrote to stderr: $(cat "$T/v.err")"

# ---- help ----
"$H" help >"$T/help" 2>&1 || fail "help exited $?"
"$H" --help >"$T/help2" 2>&1 || fail "--help exited $?"
cmp -s "$T/help" "$T/help2" || fail "help and --help differ"
"$H" >"$T/none.out" 2>"$T/none.err"; rc=$?
[ $rc -eq 2 ] || fail "no arguments: exit $rc, want 2"
[ -s "$T/none.out" ] && fail "no arguments: usage on stdout, want stderr"
grep -q '^usage: htamerge' "$T/none.err" || fail "no arguments: no usage on stderr"
"$H" help no-such-command >/dev/null 2>"$T/bad.err"; rc=$?
[ $rc -eq 2 ] || fail "help no-such-command: exit $rc, want 2"
grep -q 'no such command: no-such-command' "$T/bad.err" || fail "help no-such-command: $(cat "$T/bad.err")"
"$H" help help | cmp -s - "$T/help" || fail "help help is not the help"

cmds=$(sed -n '/^commands:/,/^$/p' "$T/help" | sed -n 's/^  \([a-z][a-z]*\) .*/\1/p' | grep -vx help)
for want in ingest report sql serve; do
    grep -qx "$want" <<<"$cmds" || fail "help does not list $want"
done
for cmd in $cmds run; do
    "$H" help "$cmd" >"$T/h.$cmd" 2>"$T/h.$cmd.err" || fail "help $cmd exited $?: $(head -3 "$T/h.$cmd.err")"
    [ -s "$T/h.$cmd.err" ] && fail "help $cmd wrote to stderr"
    if [ "$cmd" = run ]; then
        grep -q '^usage: .*htamerge ' "$T/h.$cmd" || fail "help run: no usage line"
    else
        grep -q "^usage: htamerge $cmd" "$T/h.$cmd" || fail "help $cmd: no usage line: $(head -2 "$T/h.$cmd")"
        "$H" "$cmd" --help >"$T/c.$cmd" 2>&1 || fail "$cmd --help exited $?"
        cmp -s "$T/h.$cmd" "$T/c.$cmd" || fail "help $cmd and $cmd --help differ"
        "$H" "$cmd" --no-such-option >"$T/o.$cmd" 2>&1 </dev/null; rc=$?
        [ $rc -eq 2 ] || fail "$cmd --no-such-option: exit $rc, want 2"
    fi
    grep -qi '^examples\?:' "$T/h.$cmd" || fail "help $cmd has no examples"
    grep -q "^  .*htamerge .*$cmd\|^  mpirun .*htamerge" "$T/h.$cmd" || fail "help $cmd: no example command line"
    grep -q "^\.SS.*$cmd\|^\.SS \"Running a job" "$MAN" || fail "man page has no section for $cmd"
done

# ---- the man page ----
warn=$(groff -man -Tutf8 -ww -z "$MAN" 2>&1)
[ -z "$warn" ] || fail "groff warnings: $warn"
if command -v man >/dev/null; then
    MANWIDTH=80 man -l "$MAN" >"$T/man.txt" 2>"$T/man.err" || fail "man -l exited $?"
    [ -s "$T/man.err" ] && fail "man -l: $(cat "$T/man.err")"
    for s in NAME SYNOPSIS DESCRIPTION COMMANDS ENVIRONMENT 'EXIT STATUS' FILES EXAMPLES; do
        grep -q "^$s" "$T/man.txt" || fail "man page has no $s section"
    done
fi
topics=$(sed -n '/^topics:/,/^$/p' "$T/h.report" | sed -n 's/^  \([a-z][a-z]*\) .*/\1/p')
[ -n "$topics" ] || fail "report --help lists no topics"
for t in $topics; do
    grep -q "^\.B $t\$" "$MAN" || fail "man page does not describe report topic $t"
done
vars=$(grep -rhoE 'getenv\("HTAMERGE_[A-Z0-9_]+"\)|"HTAMERGE_[A-Z0-9_]+=' \
           "$SRC/cli" "$SRC/collector" "$SRC/common" "$SRC/merger" "$SRC/query" "$SRC/analysis" \
           --include='*.c' | grep -oE 'HTAMERGE_[A-Z0-9_]+' | sort -u | grep -v -e _TEST_ -e '^HTAMERGE_NO_PIDFD$')
[ -n "$vars" ] || fail "found no HTAMERGE_* variables in the sources"
for v in $vars; do
    grep -q "$v" "$MAN" || fail "man page does not document $v"
done
for code in 0 1 2 3; do
    grep -A1 '^\.TP' "$MAN" | grep -qx "\.B $code" || fail "man page EXIT STATUS lacks $code"
done

finish "test_help: ok ($(echo $cmds | wc -w) commands, $(echo $vars | wc -w) variables)"

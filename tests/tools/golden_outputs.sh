#!/usr/bin/env bash
# Writes every user-visible output of one build on the committed fixtures into
# OUTDIR, one file per command, so that two builds (before and after a
# refactor) can be compared with `diff -r`:
#   report (every topic, every format, the option variants), export, diff,
#   sql, and a full .dump of what ingest writes from each trace fixture.
# Fields that differ from run to run (wall times, paths of the temporary
# folder, creation stamps) are masked.
#
#   tests/tools/golden_outputs.sh BUILD_DIR OUTDIR
set -uo pipefail
build=$(cd "$1" && pwd); out=$2
root=$(cd "$(dirname "$0")/../.." && pwd)
hm=$build/htamerge
mkdir -p "$out"; out=$(cd "$out" && pwd)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

mask() { sed -E -e "s#$tmp#TMP#g" -e "s#$root#ROOT#g" \
    -e 's/("(wall_s|elapsed_s|seconds|ingest_s|created|duration_s)"[:,] *)[-0-9.e+"A-Za-z:T]+/\1X/g' \
    -e 's/[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z/DATE/g' \
    -e 's/(in [0-9.]+ s)/in X s/g' -e 's/[0-9.]+ MB\/s/X MB\/s/g'; }

topics=$("$hm" report --help 2>&1 | sed -n 's/.*topics\{0,1\}: *//p' | head -1 | tr -d ',' )
[ -n "$topics" ] || topics="summary temporal overlap idle kernels steps clocks stragglers collectives nvtx"

# Databases: the GPU fixtures as committed, and what ingest makes of each
# trace fixture today.
dbs=()
for f in "$root"/tests/fixtures/gpu/*.db.gz; do
    n=$(basename "$f" .db.gz); gzip -dc "$f" > "$tmp/$n.db"; dbs+=("$tmp/$n.db")
done
# Ingest reads copies under the temporary folder, whose path has the same
# length on every machine: table reports cut long paths to a fixed width.
cp -r "$root/tests/fixtures" "$tmp/fx"
for d in gloo/ddp4_none gloo/ddp4_straggler2 hta/trace_filter hta/critical_path/alexnet \
         hta/nccl_parser_config hta/rank_non_gpu hta/large_integer_trace; do
    n=ingest_$(echo "$d" | tr '/' '_')
    "$hm" ingest -o "$tmp/$n.db" --keep-going "$tmp/fx/$d" > "$out/$n.ingest.txt" 2>&1
    echo "rc=$?" >> "$out/$n.ingest.txt"
    mask < "$out/$n.ingest.txt" > "$out/$n.ingest.tmp" && mv "$out/$n.ingest.tmp" "$out/$n.ingest.txt"
    [ -f "$tmp/$n.db" ] || continue
    dbs+=("$tmp/$n.db")
    sqlite3 "$tmp/$n.db" .dump | mask > "$out/$n.dump.sql"
done

for db in "${dbs[@]}"; do
    n=$(basename "$db" .db)
    for t in "" $topics; do
        for fmt in table json csv; do
            "$hm" report "$db" $t --format $fmt 2>&1 | mask > "$out/$n.report.${t:-default}.$fmt"
        done
    done
    "$hm" report "$db" steps --all-steps --format json 2>&1 | mask > "$out/$n.report.steps.all.json"
    "$hm" report "$db" stragglers --method hta --format json 2>&1 | mask > "$out/$n.report.stragglers.hta.json"
    "$hm" report "$db" stragglers --all-steps --format table 2>&1 | mask > "$out/$n.report.stragglers.all.table"
    "$hm" report "$db" kernels --ranks 0 --format csv 2>&1 | mask > "$out/$n.report.kernels.rank0.csv"
    "$hm" export "$db" --format chrome -o "$tmp/x.json" 2>&1 | mask > "$out/$n.export.txt"
    mask < "$tmp/x.json" > "$out/$n.export.json"
    "$hm" export "$db" --format chrome --steps 1:2 -o "$tmp/x.json" > /dev/null 2>&1 &&
        mask < "$tmp/x.json" > "$out/$n.export.steps.json"
    "$hm" sql "$db" "SELECT name, count(*) FROM sqlite_master GROUP BY type ORDER BY 1" > "$out/$n.sql.txt" 2>&1
    "$hm" sql "$db" "SELECT * FROM steps ORDER BY 1" >> "$out/$n.sql.txt" 2>&1
done
for pair in "nccl2_clean nccl2_straggler1" "nccl4_clean nccl4_straggler1" \
            "ingest_gloo_ddp4_none ingest_gloo_ddp4_straggler2"; do
    set -- $pair
    for fmt in table json csv; do
        "$hm" diff "$tmp/$1.db" "$tmp/$2.db" --format $fmt > "$out/diff.$1.$2.$fmt" 2>&1
        echo "rc=$?" >> "$out/diff.$1.$2.$fmt"
        mask < "$out/diff.$1.$2.$fmt" > "$out/diff.tmp" && mv "$out/diff.tmp" "$out/diff.$1.$2.$fmt"
    done
done
echo "golden_outputs: $(ls "$out" | wc -l) files in $out"

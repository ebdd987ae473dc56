#!/usr/bin/env bash
# The sharded writer (`ingest --node-local --shards`, docs/SCALING.md)
# against the one writer, on one corpus, with K simulated hosts (1, 2, 4 by
# default). Each host has a writer and one reader (host 0 also rank 0); the
# corpus is split over the hosts by file (symlinks, every K-th file). The
# same K hosts unsharded (rank 0 the one writer, the same 2K readers) run
# beside each for comparison.
#
# usage: bench/shards.sh BUILD_DIR CORPUS [HOSTS...]
# Output, one line per run:
#   mode hosts rows wall_s rows_per_s   (all rows stored / the whole ingest)
#   write_s  (the parse-and-write phase: the slowest writer's)
#   writers: per writer ROLE:busy_s:busy_rows_per_s:cpu_s:rows_per_cpu_s
#   (rows it stored / its busy time, and / its process's CPU time until the
#   end of its writing: what one writer core sustains; on an oversubscribed
#   machine busy time counts waits for a core, CPU time does not; the index
#   writer's rows are every row, of which it stores a few)
#   peak_rss_MB (largest process)
set -u
B=${1:?build dir}; C=${2:?corpus folder}; shift 2
HOSTS_LIST=${*:-1 2 4}
H=$B/htamerge
W=$(mktemp -d /tmp/hm-shards.XXXXXX); trap 'rm -rf "$W"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HTAMERGE_STATS=1 OMP_NUM_THREADS=1

# hosts K: K host folders, a rank's files (WORKER.* names) on one host;
# ranks 0-2 on host 0 (rank 0, writer, reader), then two a host.
hosts() {
    local k=$1 i=0 g f
    rm -rf "$W"/h*
    for g in $(ls "$C" | sed 's/\..*//' | sort -u); do
        mkdir -p "$W/h$((i % k))/traces"
        for f in "$C/$g".*; do ln -s "$f" "$W/h$((i % k))/traces/${f##*/}"; done
        i=$((i + 1))
    done
    cat > "$W/host.sh" <<EOF
#!/usr/bin/env bash
r=\${OMPI_COMM_WORLD_RANK:?}; h=0; [ "\$r" -gt 2 ] && h=\$(( (r - 1) / 2 ))
export HTAMERGE_HOSTNAME=h\$h; cd "$W/h\$h" && exec "\$@"
EOF
    chmod +x "$W/host.sh"
}

rows_of() { # DB: slices + collectives + counters
    sqlite3 "$1" "SELECT (SELECT count(*) FROM slices) + (SELECT count(*) FROM collectives) + (SELECT count(*) FROM counters)"
}

one() { # mode hosts extra-args...
    local mode=$1 k=$2 t0 t1 rows s; shift 2
    rm -rf "$W/out.db" "$W/out.db.d"
    t0=$(date +%s.%N)
    /usr/bin/time -f 'rss %M' timeout -k 5 900 mpirun --oversubscribe --bind-to none -n $((2 * k + 1)) \
        "$W/host.sh" "$H" ingest -q -o "$W/out.db" --node-local "$@" traces > "$W/log" 2>&1 ||
        { echo "$mode $k FAILED"; tail -5 "$W/log"; return; }
    t1=$(date +%s.%N)
    if [ -d "$W/out.db.d" ]; then
        rows=0
        for s in "$W"/out.db.d/*.db; do rows=$((rows + $(rows_of "$s"))); done
    else
        rows=$(rows_of "$W/out.db")
    fi
    awk -v mode="$mode" -v k="$k" -v rows="$rows" -v wall="$(echo "$t1 - $t0" | bc)" '
        function sec(   i) { for (i = 2; i <= NF; i++) if ($i == "s") return $(i - 1); return 0 }
        /parse and write/ { t = sec(); if (t > pw) pw = t
                            c = 0; cr = 0
                            for (i = 2; i < NF; i++) { if ($i == "busy") { b = $(i + 1); r = $(i + 3) }
                                                       if ($i == "cpu") { c = $(i + 1); cr = $(i + 3) } }
                            role = $NF; sub(/\)$/, "", role)
                            w = w sprintf(" %s:%.2f:%.0f:%.2f:%.0f", role, b, r, c, cr) }
        /^rss/ { rss = $2 }
        END { printf "%s %s %s %.2f %.0f %.2f%s %.0f\n", mode, k, rows, wall, rows / wall, pw, w, rss / 1024 }' "$W/log"
}

echo "mode hosts rows wall_s rows_per_s write_s writers(role:busy_s:busy_rows_per_s:cpu_s:rows_per_cpu_s...) peak_rss_MB"
for k in $HOSTS_LIST; do
    hosts "$k"
    one one-writer "$k"
    one shards "$k" --shards
done

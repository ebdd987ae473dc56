#!/usr/bin/env bash
# Rank 0's write rate under `mpirun -n N htamerge ingest` with 1, 2, 4, 8
# reader ranks (and the single-process ingest beside it), on one corpus.
# rows/s = slices + collectives + counters stored / the parse-and-write
# phase (HTAMERGE_STATS=1). Optional: HOSTS=K simulates K hosts
# (--node-local, HTAMERGE_HOSTNAME per rank; every host sees the corpus
# through a symlink, split so that each file is on exactly one host).
#
# usage: [HOSTS=K] [KEEP_DB=F] bench/readers.sh BUILD_DIR CORPUS [READERS...]   (default 1 2 4 8)
# Output: one line per run: mode readers rows parse_write_s rows_per_s
#         writer_busy_s busy_rows_per_s (rows / the writer's busy time: its
#         capacity) cross_rank_s close_s wall_s peak_rss_MB (largest process)
#         and, for mpirun, where rank 0's busy time went: decode_s (wire and
#         analysis results) analyse_s (files analysed on rank 0; the readers
#         analyse theirs) join_s (ranks of several files, read back and
#         analysed at the end); "-" from a build that does not say.
set -u
B=${1:?build dir}; C=${2:?corpus folder}; shift 2
READERS=${*:-1 2 4 8}
H=$B/htamerge
W=$(mktemp -d /tmp/hm-readers.XXXXXX); trap 'rm -rf "$W"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HTAMERGE_STATS=1

# HOSTS=K: host k sees every K-th file of the corpus (by sorted name) in
# $W/hK/traces; ranks go round-robin over hosts after rank 0 (host 0).
args=("$C"); wrap=()
if [ -n "${HOSTS:-}" ]; then
    i=0
    for f in $(ls "$C" | sort); do
        k=$((i % HOSTS)); mkdir -p "$W/h$k/traces"; ln -s "$C/$f" "$W/h$k/traces/$f"; i=$((i + 1))
    done
    cat > "$W/host.sh" <<EOF
#!/usr/bin/env bash
r=\${OMPI_COMM_WORLD_RANK:?}; k=0; [ "\$r" -gt 0 ] && k=\$(( (r - 1) % $HOSTS ))
export HTAMERGE_HOSTNAME=h\$k; cd "$W/h\$k" && exec "\$@"
EOF
    chmod +x "$W/host.sh"; args=(--node-local traces); wrap=("$W/host.sh")
fi

one() { # mode readers command...
    local mode=$1 n=$2 t0 t1; shift 2
    rm -f "$W/out.db"
    t0=$(date +%s.%N)
    /usr/bin/time -f 'rss %M' "$@" > "$W/log" 2>&1 || { echo "$mode $n FAILED"; tail -5 "$W/log"; return; }
    t1=$(date +%s.%N)
    rows=$(sqlite3 "$W/out.db" "SELECT (SELECT count(*) FROM slices) + (SELECT count(*) FROM collectives) + (SELECT count(*) FROM counters)")
    awk -v mode="$mode" -v n="$n" -v rows="$rows" -v wall="$(echo "$t1 - $t0" | bc)" '
        function sec(   i) { for (i = 2; i <= NF; i++) if ($i == "s") return $(i - 1); return 0 }
        /parse and write/ { pw = sec() }
        /writer busy/ { for (i = 2; i < NF; i++) if ($i == "busy") busy = ($(i + 1) == "while") ? sec() : $(i + 1) }
        /cross-rank analyses/ { xr = sec() }
        /indexes and close/ { cl = sec() }
        /^rss/ { rss = $2 }
        /ingest rank 0:/ { dec = $6; an = $9; jn = $(NF - 1)
                           for (i = 2; i < NF; i++) { if ($i == "analysed" && $(i + 1) == "by") jr = $(i - 1)
                                                      if ($i == "read" && $(i + 1) == "back") rb = $(i - 1) } }
        END { printf "%s %s %s %.2f %.0f %.2f %.0f %.2f %.2f %.2f %.0f %s %s %s %s %s\n", mode, n, rows, pw,
                     (pw > 0 ? rows / pw : 0), busy, (busy > 0 ? rows / busy : 0), xr, cl, wall, rss / 1024,
                     dec == "" ? "-" : dec, an == "" ? "-" : an, jn == "" ? "-" : jn, jr == "" ? "-" : jr,
                     rb == "" ? "-" : rb }' "$W/log"
}

echo "mode readers rows parse_write_s rows_per_s writer_busy_s busy_rows_per_s cross_rank_s close_s wall_s peak_rss_MB decode_s analyse_s join_s joined_by_readers read_back"
one single 0 "$H" ingest -o "$W/out.db" "$C"
[ -n "${KEEP_DB:-}" ] && cp "$W/out.db" "$KEEP_DB"   # for the per-rank volumes (bench_writer_scale)
for n in $READERS; do
    # A simulated host without a rank is not part of the job: its files are not read.
    [ -n "${HOSTS:-}" ] && [ "$n" -lt "$HOSTS" ] && { echo "mpi $n skipped (fewer readers than HOSTS)"; continue; }
    one mpi "$n" timeout -k 5 900 mpirun --oversubscribe --bind-to none -n $((n + 1)) "${wrap[@]}" \
        "$H" ingest -o "$W/out.db" "${args[@]}"
done

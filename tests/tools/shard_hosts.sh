# Sourced, after lib.sh, by the tests of `ingest --node-local --shards`
# (tests/integration/test_ingest_shards.sh, test_shards_readers.sh).
#
# shard_hosts NAME: T becomes a new folder (the working directory; removed
# at exit, after the servers whose pids the test adds to pids are stopped)
# holding three simulated hosts, folders a, b and c, for
# `run_mpi S -n 7 ./host.sh "$H" ingest ...` (tests/tools/sim_host.sh):
#   a: ranks 0-2 (rank 0 writes the index, 1 host a's shard, 2 reads),
#   b: ranks 3-4, c: ranks 5-6 (the first writes, the second reads).
# Open MPI may run as root and oversubscribe (mpi_env); the ranks' leaks
# are not checked, as in the other mpirun tests.
shard_hosts() {
    mpi_env
    export ASAN_OPTIONS=${ASAN_OPTIONS:-}:detect_leaks=0
    T=$(hm_mktemp "$1") || exit 1
    cd "$T" || exit 1
    T=$(pwd -P)
    pids=()
    trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; cd /; rm -rf "$T"' EXIT
    ln -s "${HM_SOURCE_DIR:?}/tests/tools/sim_host.sh" host.sh
    export HM_HOSTS="0:a 3:b 5:c"
    export HM_ROOT=$T
    mkdir -p a b c
}

# workers DIR: DIR's rank file names (WORKER.*) in the order of the rank
# their traces carry (the names hold pids, whose order is not the ranks'):
# two a host in this order put trace ranks 0-1 on a, 2-3 on b, 4-5 on c.
workers() {
    local w
    for w in $(ls "$1" | sed 's/\..*//' | sort -u); do
        set -- "$1" "$1/$w".*
        printf '%s %s\n' "$(zcat -f "$2" | head -c 4096 | grep -o '"rank": *[0-9]*' | head -n 1 | grep -o '[0-9]*$')" "$w"
    done | sort -n | cut -d' ' -f2
}

#!/usr/bin/env bash
# Runs "$@" as an mpirun rank on a simulated host, for the tests of
# `ingest --node-local` (and --shards): HM_HOSTS lists "FIRST_RANK:HOST"
# pairs in rank order, and a rank's host is the last whose first rank it
# has reached. HTAMERGE_HOSTNAME names the host and "$HM_ROOT/HOST" is the
# working directory (the host's own disk). HM_DIE_RANK: that rank, a
# reader, dies before its first file.
r=${OMPI_COMM_WORLD_RANK:?}
h=
for p in ${HM_HOSTS:?}; do
    [ "$r" -ge "${p%%:*}" ] && h=${p#*:}
done
export HTAMERGE_HOSTNAME=$h
[ "$r" = "${HM_DIE_RANK:-}" ] && export HTAMERGE_TEST_INGEST_DIE_BEFORE=0
cd "${HM_ROOT:?}/$h" && exec "$@"

/* Internal to merger/: the roles of the MPI ingest's writer (ingest_mpi.c).
 * Unsharded, rank 0 merges every reader's files; sharded
 * (ingest_shards.c), each host's writer merges its host's readers into its
 * shard and forwards every message to the index writer, rank 0, which
 * keeps what the index holds (store/writer.h, index mode). */
#ifndef HM_MERGER_INGEST_MPI_INT_H
#define HM_MERGER_INGEST_MPI_INT_H

#include <mpi.h>

#include "ingest.h"
#include "store/writer.h"

struct mrg_mpi_role {
    MPI_Comm comm; /* the readers and this writer (rank 0 of it) */
    MPI_Comm up;   /* a host writer's link to the index writer (rank 0 of it), else MPI_COMM_NULL */
    int index;     /* 1: the index writer of a sharded ingest */
    /* Called once every row is stored (and, but on a host writer, the
     * cross-rank analyses ran), whatever failed before, with the result so
     * far and w (NULL if it could not be opened); returns the new result.
     * The writer is then finished (0) or aborted. */
    int (*before_finish)(void *ctx, struct mrg_writer *w, int rc, struct hm_err *err);
    void *ctx;
};

/* mrg_ingest_mpi_merge in a role; collective over role->comm (and up). */
int mrg_ingest_mpi_run(char *const *files, size_t nfiles, const struct mrg_mpi_role *role,
                       const struct mrg_ingest_opts *opts, struct mrg_ingest_stats *stats, struct hm_err *err);

#endif

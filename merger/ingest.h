/* Offline ingest: trace files on disk -> one SQLite file.
 * Parses files on worker threads (each file: read, parse, analyse), and
 * writes them in input order on the calling thread, so memory stays near a
 * few files' worth and the output is the same run to run. Ranks come from
 * each file; two files claiming one rank is an error. */
#ifndef HM_MERGER_INGEST_H
#define HM_MERGER_INGEST_H

#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

struct mrg_ingest_stats {
    size_t files, files_failed, ranks;
    uint64_t bytes_in;      /* bytes read from disk (compressed size) */
    uint64_t bytes_json;    /* decompressed JSON bytes parsed */
    uint64_t slices, collectives, counters, skipped;
    double seconds;
};

/* Called from the writing thread after each file and at the end. */
typedef void (*mrg_progress_fn)(void *ctx, const struct mrg_ingest_stats *s,
                                uint64_t bytes_total, int done);

struct mrg_ingest_opts {
    const char *output;     /* final database path */
    int keep_going;         /* 1: skip bad files (reported on stderr) */
    int jobs;               /* parser threads; 0 = one per spare core */
    int keep_args;          /* store slice args JSON (default 1) */
    const char *command_line; /* stored in meta, may be NULL */
    mrg_progress_fn progress;
    void *progress_ctx;
};

/* Ingests the files (already expanded, see src_kineto_list) into
 * opts->output. Returns 0, or a negative HM_E* code with err filled; on
 * failure no output file is left behind. With keep_going, per-file errors
 * are printed to stderr and counted in stats->files_failed, and the call
 * fails only when no file could be read. */
int mrg_ingest(char *const *files, size_t nfiles, const struct mrg_ingest_opts *opts,
               struct mrg_ingest_stats *stats, struct hm_err *err);

/* Rank 0 of a parallel ingest (`mpirun -n N htamerge ingest`): the other
 * ranks read the files (collector/ingest_send.h) and send records; this
 * merges them. Collective over MPI_COMM_WORLD. */
int mrg_ingest_mpi_merge(char *const *files, size_t nfiles, const struct mrg_ingest_opts *opts,
                         struct mrg_ingest_stats *stats, struct hm_err *err);

#endif

/* Sharded ingest (`mpirun -n N htamerge ingest --node-local --shards -o
 * OUT PATH`): one file per host plus an index, so that the writing grows
 * with the hosts instead of ending on rank 0 (docs/SCALING.md).
 *
 * On each host its first rank other than rank 0 is the host writer: the
 * host's other ranks read its files and send them to it (as readers send
 * to rank 0 unsharded), and it writes them, every row, into the shard
 * OUT.d/HOST.db, a normal htamerge file of the host's ranks. It forwards
 * each file's message to rank 0, the index writer, which keeps only what
 * the index holds (store/writer.h, index mode: ranks, files, steps,
 * collectives and their slices, counters, per-rank analyses and summaries,
 * every cross-rank table; the GPU rows, launches and annotations the
 * cross-rank analyses read go to its spill arena, not SQLite). Rank 0 fits
 * the clocks over every host and sends each host writer its ranks' final
 * model; the host writers re-time their shards, finish them (temporary
 * name, renamed when complete) and report; the index OUT is renamed last,
 * with a `shards` table (host, path, ranks, rows, bytes) and `rank_shards`
 * (rank -> shard). Any failure fails the whole ingest, named. */
#ifndef HM_MERGER_INGEST_SHARDS_H
#define HM_MERGER_INGEST_SHARDS_H

#include "collector/ingest_list.h"
#include "common/err.h"
#include "ingest.h"

/* Collective over MPI_COMM_WORLD, after col_ingest_list_share_sharded:
 * rank 0 writes the index opts->output, host writers their shards, the
 * other ranks read. stats: rank 0's (the whole run's rows); on the others
 * their own part. 0 or a negative HM_E* code with err filled. */
int mrg_ingest_sharded(const struct col_ingest_list *list, const struct mrg_ingest_opts *opts,
                       struct mrg_ingest_stats *stats, struct hm_err *err);

/* The folder of OUT's shards ("OUT.d") and the shard of host in it
 * ("OUT.d/HOST.db", the host's name with anything but [A-Za-z0-9._-]
 * as '_'); buf of cap bytes. Readers find shards by the `shards` table's
 * path, relative to the index's folder. */
void mrg_shard_dir(const char *output, char *buf, size_t cap);
void mrg_shard_path(const char *output, const char *host, char *buf, size_t cap);

#endif

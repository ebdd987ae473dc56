/* Who reads which trace file in a parallel ingest (`mpirun -n N htamerge
 * ingest`). Rank 0 needs every file's name (the merger checks each batch
 * against them); a reader needs the paths it reads and its share of them.
 * Reading is ingest_send.c; merging is merger/ingest_mpi.c. */
#ifndef HM_COLLECTOR_INGEST_LIST_H
#define HM_COLLECTOR_INGEST_LIST_H

#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

/* Each rank's view of the files. */
struct col_ingest_list {
    char **files;       /* owned (col_ingest_list_free): rank 0 every file's name,
                         * sorted; a reader the paths on its own host */
    size_t nfiles;
    size_t first, step; /* a reader reads groups first, first + step, ... of files
                         * (col_ingest_group_end), all the files of each */
    char host[64];      /* node-local: the prefix of every name ("host:path"); else "" */
    int host_color;     /* node-local: which host (the index of its first rank) */
    int shard_writer;   /* sharded: this rank writes its host's shard (files: the host's) */
};

/* Collective over MPI_COMM_WORLD. Shared folders (node_local 0): rank 0
 * lists the paths and every reader sees its list. Node-local folders: the
 * ranks of each host (HTAMERGE_HOSTNAME, else gethostname) list the same
 * paths on their own disk, the host's readers share its files, and rank 0
 * gets the union named "host:path", so equal paths on two hosts differ.
 * Returns 0 on every rank, or non-zero on every rank (a listing failed, no
 * file anywhere, or files on a host without a reader); err says why on
 * the ranks that know (err->code 0 on the others). */
int col_ingest_list_share(const char *const *paths, int npaths, int node_local, struct col_ingest_list *out,
                          struct hm_err *err);

/* Node-local listing for a sharded ingest (merger/ingest_shards.h): the
 * same, but on each host its first rank other than rank 0 writes the
 * host's shard and does not read (shard_writer, the host's paths in
 * files), so a host with files needs two ranks besides rank 0. */
int col_ingest_list_share_sharded(const char *const *paths, int npaths, struct col_ingest_list *out,
                                  struct hm_err *err);

void col_ingest_list_free(struct col_ingest_list *l);

/* Groups: the files of one rank go to one reader, so that it analyses the
 * rank's files together (ingest_send.c) and rank 0 need not read the rank
 * back (merger/rank_files.h). A file's rank is known only once it is
 * parsed, so the listing groups by name: torch.profiler names a process's
 * files WORKER.TIMESTAMP.pt.trace.json[.gz], so a group is a run of
 * consecutive files (in list order) of one folder whose names agree up to
 * a last numeric part before the suffix ("rank-3.json", "host_123.17000.pt.
 * trace.json.gz" -> "rank-3", "host_123"). A guess that is wrong costs
 * speed, never correctness: rank 0 reads back any rank whose files did not
 * all reach one reader. The end (exclusive) of the group that starts at
 * files[i]; a group holds at most COL_INGEST_GROUP_MAX files and, past its
 * first, COL_INGEST_GROUP_BYTES of them on disk: its reader holds the
 * group's batches at once (a guess that groups big files of many ranks
 * must not multiply a reader's memory), as rank 0 held a rank read back. */
enum { COL_INGEST_GROUP_MAX = 16 };
#define COL_INGEST_GROUP_BYTES ((uint64_t)256 << 20)
size_t col_ingest_group_end(char *const *files, size_t nfiles, size_t i);

#endif

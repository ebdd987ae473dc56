/* HTA's straggler method over a sharded ingest's shards (shard_hta.h). */
#include "shard_hta.h"

#include <stdlib.h>

#include "hm_sql.h"
#include "shards.h"

enum { SEARCH_SHARDS_RANK = 1 };   /* search_shards.sql: shard, rank, first_file */

struct shard_list {
    sqlite3 *index;      /* borrowed */
    const char *path;    /* borrowed: the index's file, which shard paths are relative to */
    int *first_rank;     /* owned: a rank of each shard, which opens it */
};

static sqlite3 *open_shard(void *ctx, int i, struct hm_err *err)
{
    const struct shard_list *l = ctx;
    return qry_shard_open(l->index, l->path, l->first_rank[i], err);
}

static void close_shard(void *ctx, sqlite3 *db)
{
    (void)ctx;
    sqlite3_close(db);
}

int qry_shard_stragglers_hta(sqlite3 *db, const struct xr_hta_opts *o, cJSON *doc, struct hm_err *err)
{
    struct shard_list l = {db, sqlite3_db_filename(db, "main"), NULL};
    struct xr_hta_files f = {0, open_shard, close_shard, &l};
    sqlite3_stmt *st = NULL;
    int rc, n = qry_shard_count(db), step = SQLITE_DONE;

    if (!(l.first_rank = calloc((size_t)n + 1, sizeof *l.first_rank)))
        return hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");
    if (sqlite3_prepare_v2(db, hm_sql_search_shards, -1, &st, NULL) == SQLITE_OK)
        while (f.n < n && (step = sqlite3_step(st)) == SQLITE_ROW)
            l.first_rank[f.n++] = sqlite3_column_int(st, SEARCH_SHARDS_RANK);
    if (!st || (step != SQLITE_ROW && step != SQLITE_DONE))
        rc = hm_err_set(err, HM_ESQL, l.path, -1, "reading rank_shards: %s", sqlite3_errmsg(db));
    else
        rc = xr_stragglers_hta_files(&f, o, doc, err);
    sqlite3_finalize(st);
    free(l.first_rank);
    return rc;
}

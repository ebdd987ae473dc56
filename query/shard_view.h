/* The timeline of a sharded ingest's index drawn from its shards, for the
 * server (api.c): /api/timeline answers the ranks asked for from their
 * shards, translated to the index's ids, and /api/slice finds a slice of
 * such an answer in its shard. */
#ifndef HM_QUERY_SHARD_VIEW_H
#define HM_QUERY_SHARD_VIEW_H

#include <stdint.h>

#include <cjson/cJSON.h>
#include <sqlite3.h>

#include "common/err.h"
#include "query_int.h"

/* A slice id in an answer drawn from a shard: shard << 40 | its id there. */
#define QRY_SHARD_ID_SHIFT 40

/* The shards a server holds open (h->shards); NULL is none. */
void qry_shard_view_free(struct qry_shard_view *v);

/* qry_timeline for w's ranks (w->ranks set) of the index h (h->lod made):
 * the index's header and stitched NVTX rows, each shard's tracks. A missing
 * or incomplete shard fails the request, naming its file. */
int qry_shard_timeline(struct qry_dbh *h, const struct qry_window *w, struct qry_buf *out, struct hm_err *err);

/* One shard's part of an answer that is not the timeline (the memory
 * counters, the capture windows): the document for these of its ranks. */
typedef cJSON *(*qry_shard_part_fn)(sqlite3 *shard, const int *ranks, int nranks, void *arg, struct hm_err *err);

/* The answer for ranks (every rank of the index when NULL) from their
 * shards: part's document for the first shard, with the array `key` of
 * every other shard's appended and "truncated" true if any was. NULL with
 * err when a shard cannot be read (naming its file). */
cJSON *qry_shard_gather(struct qry_dbh *h, const int *ranks, int nranks, const char *key, qry_shard_part_fn part,
                        void *arg, struct hm_err *err);

/* The connection of shard id (shards.id), opened if it is not (the
 * least recently drawn closed): borrowed until the next call that opens a
 * shard. NULL with err filled: HM_EEMPTY for no such shard, else the
 * shard's error, naming its file. */
sqlite3 *qry_shard_db(struct qry_dbh *h, int shard, struct hm_err *err);

/* For a slice id of such an answer: *tmp becomes h with its shard's
 * connection and timeline state (borrowed: valid until the next call), and
 * *local the id within the shard. 0, HM_EEMPTY (no such shard) or the
 * shard's error. */
int qry_shard_route(struct qry_dbh *h, int64_t id, struct qry_dbh *tmp, int64_t *local, struct hm_err *err);

/* A row of serve_slice.sql read from the shard of slice id (as routed by
 * qry_shard_route): its id, track and collective become the index's. */
void qry_shard_translate_slice(struct qry_dbh *h, int64_t id, cJSON *row);

#endif

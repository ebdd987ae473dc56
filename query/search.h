/* /api/search?q=TEXT: what the viewer's jump box finds. "517" or
 * "rank 517" names a rank; "step 5" a step; "PG:SEQ" or "OP SEQ" (such
 * as "0:12" or "allreduce 12") collective instances; any other text the
 * stitched NVTX ranges and the first slice of each of at most 5 names that
 * hold it. Private to query/. */
#ifndef HM_QUERY_SEARCH_H
#define HM_QUERY_SEARCH_H

#include <stdint.h>

#include <cjson/cJSON.h>
#include <sqlite3.h>

#include "common/err.h"

#define QRY_SEARCH_MAX_TEXT 200

/* The first slice of a name, in storage order. */
struct qry_search_slice {
    int64_t id;        /* as the timeline gives it */
    int rank;
    int64_t ts, dur;   /* aligned ns */
};

/* Finds the first slice named name (its text, and its id in the file
 * searched) into *out: 1, 0 when no slice has that name, or an HM_E* code
 * (< 0) with err filled. */
typedef int (*qry_search_first_fn)(void *ctx, const char *name, int64_t name_id, struct qry_search_slice *out,
                                   struct hm_err *err);

/* A qry_search_first_fn of the file ctx (an sqlite3 *), whose ids it
 * gives (search_first_slice.sql). */
int qry_search_first_in_file(void *ctx, const char *name, int64_t name_id, struct qry_search_slice *out,
                             struct hm_err *err);

/* {"hits":[{"kind","label","rank","t0","t1","id","pg","seq"}, ...]}, times
 * relative to origin (ns); NULL with err on failure. */
cJSON *qry_search(sqlite3 *db, const char *text, int64_t origin, struct hm_err *err);

/* qry_search with the slices found by first (the index of a sharded
 * ingest finds them in its shards, shard_search.h); the rest of the answer
 * is db's. */
cJSON *qry_search_with(sqlite3 *db, const char *text, int64_t origin, qry_search_first_fn first, void *ctx,
                       struct hm_err *err);

#endif

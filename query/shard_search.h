/* /api/search on the index of a sharded ingest: the index answers ranks,
 * steps, collectives and NVTX ranges, and the first slice of a name is
 * found in the shards, so that it is the unsharded file's first (in the
 * run's storage order), on any rank, with the id the timeline gives it. */
#ifndef HM_QUERY_SHARD_SEARCH_H
#define HM_QUERY_SHARD_SEARCH_H

#include <stdint.h>

#include <cjson/cJSON.h>

#include "common/err.h"
#include "query_int.h"

/* qry_search of the index h (a sharded ingest's), its slices drawn from
 * its shards (through h's open shards); slice ids as the timeline's
 * (shard << QRY_SHARD_ID_SHIFT | id in the shard). NULL with err on
 * failure, a shard that cannot be read named. */
cJSON *qry_shard_search(struct qry_dbh *h, const char *text, int64_t origin, struct hm_err *err);

#endif

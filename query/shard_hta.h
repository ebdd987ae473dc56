/* `report stragglers --method hta` on the index of a sharded ingest: HTA's
 * method reads every rank's kernels, which the index leaves in its shards,
 * so it reads them there, one shard open at a time. */
#ifndef HM_QUERY_SHARD_HTA_H
#define HM_QUERY_SHARD_HTA_H

#include <cjson/cJSON.h>
#include <sqlite3.h>

#include "analysis/cross_rank.h"
#include "common/err.h"

/* xr_stragglers_hta over the shards of the index db: the answer of the
 * unsharded file. A missing or incomplete shard fails, naming its file. */
int qry_shard_stragglers_hta(sqlite3 *db, const struct xr_hta_opts *o, cJSON *doc, struct hm_err *err);

#endif

/* /api/search?q=TEXT: what the viewer's jump box finds. "517" or
 * "rank 517" names a rank; "step 5" a step; "PG:SEQ" or "OP SEQ" (such
 * as "0:12" or "allreduce 12") collective instances; any other text the
 * stitched NVTX ranges and the first slices whose name holds it. Private
 * to query/. */
#ifndef HM_QUERY_SEARCH_H
#define HM_QUERY_SEARCH_H

#include <cjson/cJSON.h>
#include <sqlite3.h>

#include "common/err.h"

#define QRY_SEARCH_MAX_TEXT 200

/* {"hits":[{"kind","label","rank","t0","t1","id","pg","seq"}, ...]}, times
 * relative to origin (ns); NULL with err on failure. */
cJSON *qry_search(sqlite3 *db, const char *text, int64_t origin, struct hm_err *err);

#endif

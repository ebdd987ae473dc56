/* /api/counters: memory counters (Total Allocated, Total Reserved) of a few
 * ranks over a window, at most one value per pixel column (the largest:
 * a peak is never averaged away), for the timeline's memory rows. Private
 * to query/. */
#ifndef HM_QUERY_COUNTERS_H
#define HM_QUERY_COUNTERS_H

#include <stdint.h>

#include <cjson/cJSON.h>
#include <sqlite3.h>

#include "common/err.h"

/* {"t0","t1","px","series":[{"rank","device","name","before","points":[[col,value],..]}]}:
 * t0, t1 from the origin; before: the value when the window began (null:
 * none yet). NULL with err on failure. */
cJSON *qry_counters(sqlite3 *db, int64_t origin, int64_t t0, int64_t t1, int px, const int *ranks, int nranks,
                    struct hm_err *err);

#endif

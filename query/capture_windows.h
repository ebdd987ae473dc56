/* /api/windows: the capture windows of each rank over a window of the run,
 * from the counters live capture writes (api_windows.sql): when CUPTI did
 * not record the rank's GPU (kind "paused", CUPTI detached) and its
 * full-capture windows (kind "capture"), for the timeline's bands. Windows
 * closer than a pixel column merge, and the answer is bounded. Private to
 * query/. */
#ifndef HM_QUERY_CAPTURE_WINDOWS_H
#define HM_QUERY_CAPTURE_WINDOWS_H

#include <stdint.h>

#include <cjson/cJSON.h>
#include <sqlite3.h>

#include "common/err.h"

#define QRY_WINDOWS_MAX 10000   /* windows in one answer; past it "truncated" is true */

struct qry_windows_req {
    int64_t origin, end;   /* the run's extent, absolute ns: times count from origin; end closes an open
                              window of a rank without slices */
    int64_t t0, t1;        /* from the origin */
    int px;                /* pixel columns: windows less than (t1 - t0) / px apart merge */
    const int *ranks;      /* NULL: every rank */
    int nranks;
};

/* {"t0","t1","px","truncated","windows":[{"rank","kind","start","end"},..]},
 * windows overlapping [t0, t1) by rank, kind ("capture" before "paused")
 * and start, with their whole extent (start may precede t0, end follow
 * t1), from the origin. NULL with err on failure. */
cJSON *qry_windows(sqlite3 *db, const struct qry_windows_req *q, struct hm_err *err);

#endif

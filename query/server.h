/* The query server: `htamerge serve` (and, later, `run --serve`). HTTP on
 * libevent's evhttp, JSON API over one merged file opened read-only, and
 * the embedded web viewer. Binds loopback unless given a token. */
#ifndef HM_QUERY_SERVER_H
#define HM_QUERY_SERVER_H

#include <stdio.h>

#include "common/err.h"

struct qry_serve_opts {
    const char *db_path;   /* the merged file; may still be written (WAL) */
    const char *listen;    /* "HOST:PORT"; NULL = 127.0.0.1:8080; port 0 picks a free one */
    const char *token;     /* required by /api/ when set; required to bind a non-loopback address */
    int timeout_s;         /* idle connection timeout; 0 = 30 */
    FILE *log;             /* where the "serving at" line and errors go; NULL = stderr */
    int memory_mb;         /* memory budget; 0 = QRY_MEMORY_MB_DEFAULT (512) */
};

/* Serves until SIGINT or SIGTERM; 0 then. A refused setup (bad address,
 * non-loopback without token, unreadable file, port in use) returns an
 * HM_E* code with err filled, HM_EINVAL for the caller's mistakes. */
int qry_serve(const struct qry_serve_opts *o, struct hm_err *err);

#endif

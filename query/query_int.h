/* What the files of the query server share: parameter parsing (params.c),
 * the text buffer (buf.h), the timeline's level of detail
 * (timeline.c), the web files (static.c), rows as JSON (rows.c) and the
 * API handlers (api.c). Callers outside query/ use
 * server.h; tests include this header to reach the pieces one by one. */
#ifndef HM_QUERY_INT_H
#define HM_QUERY_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>
#include <sqlite3.h>

#include "buf.h"
#include "common/err.h"

/* ---- parameters (params.c) ---- */

#define QRY_MAX_RANKS 4096   /* ranks in one ?ranks= list */
#define QRY_MAX_PX 8192      /* pixel columns in one timeline request */
/* Ranks in one timeline request: a whole-run answer stays under about
 * 1 MB (16 ranks of 3 tracks and 1,024 slices each: 0.6 MB), and the
 * viewer draws few more expanded ranks at once. */
#define QRY_TIMELINE_MAX_RANKS 16

/* Parses a whole decimal integer within [lo, hi]; 0 or -1 (empty, junk,
 * out of range). */
int qry_param_i64(const char *s, int64_t lo, int64_t hi, int64_t *out);

/* Parses "1", "0", "true", "false", "yes", "no"; 0 or -1. */
int qry_param_bool(const char *s, bool *out);

/* Parses a rank list "0,2-5" into out[max]; returns the count, or -1 when
 * malformed or longer than max. Duplicates are kept. */
int qry_param_ranks(const char *s, int *out, int max);

/* Whether a decoded URL path may name an embedded web file: absolute, no
 * "..", no backslash, no NUL (len is the decoded length), no "//". */
bool qry_path_is_safe(const char *path, size_t len);

/* Whether host (as given to --listen) is a loopback address: 127.0.0.0/8,
 * ::1 or "localhost". Any other name or address counts as reachable. */
bool qry_host_is_loopback(const char *host);

/* Splits "HOST:PORT", "[V6]:PORT", "HOST" or ":PORT" (default port kept)
 * into host (NUL-terminated, at most hostlen-1 chars) and port; 0 or -1. */
int qry_listen_parse(const char *s, char *host, size_t hostlen, int *port);

/* Compares a presented token with the expected one in time independent of
 * where they differ. */
bool qry_token_equal(const char *given, const char *want);


/* {"error": msg} as owned text, the body of every error answer; NULL when
 * out of memory. */
char *qry_error_json(const char *msg);

/* ---- timeline level of detail (timeline.c) ---- */

#define QRY_LOD_MAX_PER_COL 4   /* narrow slices per pixel column before summarising */

/* Per-connection timeline state: the run's extent and, per track, a pyramid
 * of per-bucket counts and busy time plus the track's wide slices. Built
 * lazily per track; valid while the database does not change (the server
 * frees it when PRAGMA data_version moves). */
struct qry_lod;
struct qry_shard_view;

/* Creates the state for db (borrowed; must outlive it). Sets up the temp
 * views the timeline reads, or, when the file has no slices_track_ts index
 * yet (a live run), a temp copy with that index. NULL with err filled. */
struct qry_lod *qry_lod_new(sqlite3 *db, size_t budget_bytes, struct hm_err *err);
void qry_lod_free(struct qry_lod *lod);

/* The run's first slice start and last slice end, aligned ns; both 0 when
 * the file has no slices. */
void qry_lod_extent(const struct qry_lod *lod, int64_t *origin_ns, int64_t *end_ns);
/* Replaces the extent: the index of a sharded ingest keeps few slices, and
 * its shards draw on one origin (shard_view.c). */
void qry_lod_set_extent(struct qry_lod *lod, int64_t origin_ns, int64_t end_ns);
/* Bytes the tracks' state holds now (for tests and the budget's checks). */
size_t qry_lod_held_bytes(const struct qry_lod *lod);

/* One timeline request. Times are ns relative to the origin. */
struct qry_window {
    int64_t t0, t1;      /* t0 < t1 */
    int px;              /* pixel columns, 1..QRY_MAX_PX */
    const int *ranks;    /* borrowed; NULL = every rank */
    int nranks;
};

/* Appends the window's JSON document to out (shape in timeline.c). */
int qry_timeline(struct qry_lod *lod, const struct qry_window *w, struct qry_buf *out,
                 struct hm_err *err);

/* ---- web files (static.c) ---- */

struct qry_asset {
    const char *path;          /* "/index.html": static, or borrowed from the caller's path */
    const char *mime;          /* Content-Type */
    const unsigned char *data; /* static when embedded; else owned through `owned` */
    size_t len;
    void *owned;               /* what qry_asset_release frees; NULL for an embedded file */
};

/* Finds the file of a decoded path ("/" means /index.html): on disk in the
 * folder of qry_asset_dir when it has it, else the embedded copy. A file
 * from disk must be given back with qry_asset_release. */
bool qry_asset_find(const char *path, struct qry_asset *out);
void qry_asset_release(struct qry_asset *a);

/* The on-disk folder web files are read from ($HTAMERGE_WEB_DIR, else
 * <exe dir>/../share/htamerge/web_static), canonical, into root[len];
 * false when there is none and only the embedded copy is served. */
bool qry_asset_dir(char *root, size_t len);

/* ---- query rows (rows.c) ---- */

/* Runs sql with ?1..?n bound to the given int64 values and returns its rows
 * as an array of objects (column name -> value). NULL with err on failure. */
cJSON *qry_rows(sqlite3 *db, const char *sql, const int64_t *args, int nargs, struct hm_err *err);

/* ---- the served file (dbh.c) ---- */

#include <sys/types.h>

/* The server's read-only view of the database, kept across requests and
 * told when the file changed: reopened when a new file was renamed over
 * it, and `version` bumped when another connection committed (a live run
 * writing through WAL), so caches keyed by version go stale by themselves. */
struct qry_dbh {
    const char *path;        /* borrowed from the command line */
    sqlite3 *db;             /* owned: read-only; NULL while the file cannot be opened */
    struct qry_lod *lod;     /* owned: timeline state; NULL until a request needs it */
    int64_t version;         /* changes whenever the data may have changed */
    int64_t lod_version;     /* version lod was built at */
    double lod_time;         /* monotonic seconds when lod was built */
    int64_t data_version;    /* last PRAGMA data_version of db */
    dev_t dev;               /* identity of the open file */
    ino_t ino;
    int memory_mb;           /* the server's budget (qry_serve_opts); 0 before open: the default */
    struct qry_shard_view *shards; /* owned: a sharded ingest's index's open shards (shard_view.h) */
};

/* The server's memory budget by default: the file's cache and map, and the
 * timeline's state, are shares of it (dbh.c). */
#define QRY_MEMORY_MB_DEFAULT 512

/* Opens path read-only (qry_open); 0 or an HM_E* code with err filled. */
int qry_dbh_open(struct qry_dbh *h, const char *path, struct hm_err *err);

/* Notices changes since the last call (see struct qry_dbh). 0, or an error
 * when the file can no longer be read (h->db is then NULL). */
int qry_dbh_refresh(struct qry_dbh *h, struct hm_err *err);

/* The timeline state for the current data. It is rebuilt when stale but
 * at most every QRY_LOD_REBUILD_S seconds (a live file commits every half
 * second, and a rebuild may copy its slices); *fresh says whether it
 * matches h->version. NULL with err on failure. */
#define QRY_LOD_REBUILD_S 2.0
struct qry_lod *qry_dbh_lod(struct qry_dbh *h, bool *fresh, struct hm_err *err);

void qry_dbh_close(struct qry_dbh *h);

/* ---- API handlers (api.c) ---- */

/* The SQL console's time limit per statement (api.c's progress handler);
 * the server runs each statement in a child and kills it a grace period
 * later (sql_worker.h). */
#define QRY_API_SQL_MS 5000

struct qry_kv {
    const char *key, *val;   /* borrowed from the request */
};

/* One API request, decoded by server.c; the handler fills the answer. */
struct qry_call {
    const char *path;        /* borrowed: decoded path, starting "/api/" */
    const struct qry_kv *kv; /* borrowed: query parameters */
    int nkv;
    bool post;               /* POST (else GET or HEAD) */
    const char *body;        /* borrowed: POST body, NUL-terminated; NULL if none */
    size_t body_len;
    int status;              /* out: HTTP status */
    char *out;               /* out, owned by the caller: JSON text */
    size_t out_len;
    bool cacheable;          /* out: the same request gives the same answer until version changes */
};

/* The value of a query parameter, or NULL. */
const char *qry_call_param(const struct qry_call *c, const char *key);

/* Answers c from h: /api/run, /api/ranks, /api/topics, /api/report/{topic},
 * /api/timeline, /api/slice/{id}, /api/collective/{id}, POST /api/sql.
 * Always sets status and out (an {"error"} document on failure). */
void qry_api_dispatch(struct qry_dbh *h, struct qry_call *c);

#endif

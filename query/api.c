/* The JSON API: one handler per endpoint, each turning a decoded request
 * (struct qry_call) into a status and a JSON body. Parameters are checked
 * strictly (400 names the parameter); reads go through report.c,
 * topics.c, rows.c, timeline.c and sql_guard.c. No HTTP here: server.c decodes
 * requests, checks who may ask, caches and sends. */
#include "query_int.h"
#include "shard_view.h"
#include "shards.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "counters.h"
#include "heatmap.h"
#include "search.h"
#include "shard_search.h"
#include "hm_sql.h"
#include "report.h"
#include "report_int.h"
#include "sql_guard.h"
#include "store/columns.h"
#include "topics.h"
#include "capture_windows.h"
#include "common/control_socket.h"

#define API_SQL_ROWS 10000   /* rows a console query returns before "truncated" */
#define API_SQL_BYTES (16L << 20)   /* and values' bytes (the worker takes answers up to 32 MiB) */
#define API_PX_DEFAULT 1000

/* The columns read by position (store/columns.h). */
#define NVTX_HAS_COLUMNS(X) X(NVTX_HAS_TABLES, "n")
#define FIND_COLUMNS(X) X(FIND_ID, "id")
enum { NVTX_HAS_COLUMNS(HM_COLUMN_ENUM) };
enum { FIND_COLUMNS(HM_COLUMN_ENUM) };
static const char *const nvtx_has_names[] = {NVTX_HAS_COLUMNS(HM_COLUMN_NAME)};
static const char *const find_names[] = {FIND_COLUMNS(HM_COLUMN_NAME)};

const char *qry_call_param(const struct qry_call *c, const char *key)
{
    for (int i = 0; i < c->nkv; i++)
        if (!strcmp(c->kv[i].key, key))
            return c->kv[i].val;
    return NULL;
}

static void reply_text(struct qry_call *c, int status, char *text)
{
    free(c->out);   /* a second answer (e.g. after a parameter's 400) replaces the first */
    c->status = text ? status : 500;
    c->out = text ? text : strdup("{\"error\":\"out of memory\"}");
    c->out_len = c->out ? strlen(c->out) : 0;
}

/* Answers {"error": message}; returns -1 so handlers can `return reply_error(..)`. */
static int reply_error(struct qry_call *c, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int reply_error(struct qry_call *c, int status, const char *fmt, ...)
{
    char msg[700];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    reply_text(c, status, qry_error_json(msg));
    c->cacheable = false;
    return -1;
}

/* Sends doc (taking it) as a 200 answer. */
static int reply_doc(struct qry_call *c, cJSON *doc)
{
    reply_text(c, 200, doc ? cJSON_PrintUnformatted(doc) : NULL);
    cJSON_Delete(doc);
    return 0;
}

/* Reads ?ranks=; 0 when absent (*n = -1) or valid, -1 after a 400. */
static int param_ranks(struct qry_call *c, int *ranks, int *n)
{
    const char *s = qry_call_param(c, "ranks");

    *n = -1;
    if (!s || !*s)
        return 0;
    if ((*n = qry_param_ranks(s, ranks, QRY_MAX_RANKS)) < 0) {
        reply_error(c, 400, "bad parameter ranks='%.100s' (example: 0,2-3)", s);
        return -1;
    }
    return 0;
}

/* Reads an integer parameter within [lo, hi]; keeps *v when absent. */
static int param_i64(struct qry_call *c, const char *key, int64_t lo, int64_t hi, int64_t *v)
{
    const char *s = qry_call_param(c, key);

    if (!s)
        return 0;
    if (qry_param_i64(s, lo, hi, v) == 0)
        return 0;
    reply_error(c, 400, "bad parameter %s='%.100s' (an integer from %lld to %lld)", key, s, (long long)lo,
                (long long)hi);
    return -1;
}

static int param_bool(struct qry_call *c, const char *key, bool *v)
{
    const char *s = qry_call_param(c, key);

    if (!s || qry_param_bool(s, v) == 0)
        return 0;
    reply_error(c, 400, "bad parameter %s='%.100s' (0 or 1)", key, s);
    return -1;
}

static struct qry_lod *need_lod(struct qry_dbh *h, struct qry_call *c, bool *fresh)
{
    struct hm_err err;
    struct qry_lod *lod;

    hm_err_clear(&err);
    lod = qry_dbh_lod(h, fresh, &err);
    if (!lod)
        reply_error(c, 500, "timeline: %s", err.msg);
    return lod;
}

/* /api/run: the summary report (rank_count, and ranks: the per-rank rows)
 * plus what the viewer needs to start. */
static int api_run(struct qry_dbh *h, struct qry_call *c)
{
    struct qry_report_opts o = {.topic = "summary"};
    struct hm_err err;
    const char *base = strrchr(h->path, '/');
    cJSON *doc = NULL, *st;
    int64_t origin, end;
    bool fresh;
    char num[32];
    struct qry_lod *lod = need_lod(h, c, &fresh);

    hm_err_clear(&err);
    if (!lod)
        return -1;
    if (qry_report_build(h->db, &o, &doc, &err) != 0)
        return reply_error(c, 500, "%s", err.msg);
    qry_lod_extent(lod, &origin, &end);
    st = cJSON_GetObjectItemCaseSensitive(doc, "run_status");
    cJSON_AddStringToObject(doc, "file", base ? base + 1 : h->path);
    snprintf(num, sizeof num, "%lld", (long long)origin);
    cJSON_AddStringToObject(doc, "origin_ns", num);
    cJSON_AddNumberToObject(doc, "span_ns", (double)(end - origin));
    cJSON_AddBoolToObject(doc, "live", cJSON_IsString(st) && !strcmp(st->valuestring, "running"));
    /* The version of what the timeline serves: while its index lags a
     * commit (rebuilt at most every QRY_LOD_REBUILD_S), a client told of the
     * new version would reload, get the old rows, and not ask again. */
    cJSON_AddNumberToObject(doc, "version", (double)(fresh ? h->version : h->lod_version));
    c->cacheable = fresh;
    return reply_doc(c, doc);
}

/* /api/ranks: ranks with their tracks in drawing order, and categories. */
static int api_ranks(struct qry_dbh *h, struct qry_call *c)
{
    struct hm_err err;
    cJSON *ranks, *tracks = NULL, *cats = NULL, *r, *t, *next, *doc;

    hm_err_clear(&err);
    ranks = qry_rows(h->db, hm_sql_serve_ranks, NULL, 0, &err);
    tracks = ranks ? qry_rows(h->db, hm_sql_serve_tracks, NULL, 0, &err) : NULL;
    cats = tracks ? qry_rows(h->db, hm_sql_serve_categories, NULL, 0, &err) : NULL;
    if (!cats) {
        cJSON_Delete(ranks), cJSON_Delete(tracks);
        return reply_error(c, 500, "%s", err.msg);
    }
    cJSON_ArrayForEach(r, ranks) {
        cJSON *mine = cJSON_AddArrayToObject(r, "tracks");
        int rank = cJSON_GetObjectItemCaseSensitive(r, "rank")->valueint;
        for (t = tracks->child; t; t = next) {
            next = t->next;
            if (cJSON_GetObjectItemCaseSensitive(t, "rank")->valueint == rank)
                cJSON_AddItemToArray(mine, cJSON_DetachItemViaPointer(tracks, t));
        }
    }
    cJSON_Delete(tracks);
    doc = cJSON_CreateObject();
    cJSON_AddItemToObject(doc, "ranks", ranks);
    cJSON_AddItemToObject(doc, "categories", cats);
    c->cacheable = true;
    return reply_doc(c, doc);
}

/* Reads ?steps= into steps[]; 0 ok (absent: *n = 0), -1 after a 400. */
static int param_steps(struct qry_call *c, int64_t *steps, int *n)
{
    int tmp[QRY_MAX_RANKS];
    const char *s = qry_call_param(c, "steps");

    *n = 0;
    if (!s)
        return 0;
    if ((*n = qry_param_ranks(s, tmp, QRY_MAX_RANKS)) < 0) {
        reply_error(c, 400, "bad parameter steps='%.100s' (example: 551,553-560)", s);
        return -1;
    }
    for (int i = 0; i < *n; i++)
        steps[i] = tmp[i];
    return 0;
}

/* /api/report/{topic}?all_steps=&ranks=&all_ranks=&steps=&top=&by= : report --format json. */
static int api_report(struct qry_dbh *h, struct qry_call *c, const char *topic)
{
    int64_t steps[QRY_MAX_RANKS];
    int ranks[QRY_MAX_RANKS], nranks, nsteps, rc;
    struct qry_report_opts o = {.topic = topic};
    bool all = false, all_ranks = false;
    int64_t top = 10;
    struct hm_err err;
    cJSON *doc = NULL;

    hm_err_clear(&err);
    if (param_ranks(c, ranks, &nranks) || param_bool(c, "all_steps", &all) || param_steps(c, steps, &nsteps) ||
        param_i64(c, "top", 1, 1000, &top) || param_bool(c, "all_ranks", &all_ranks))
        return -1;
    o.all_steps = all;
    o.all_ranks = all_ranks;
    o.ranks = nranks >= 0 ? ranks : NULL;
    o.nranks = nranks;
    o.steps = nsteps > 0 ? steps : NULL;
    o.nsteps = nsteps;
    o.top_kernels = (int)top;
    o.by = qry_call_param(c, "by");
    if (o.by && !*o.by)
        o.by = NULL;
    if (!qry_topic_find(topic))
        return reply_error(c, 404, "unknown report topic '%.60s'", topic);
    if ((rc = qry_report_build(h->db, &o, &doc, &err)) != 0)
        return reply_error(c, rc == HM_EINVAL ? 400 : 500, "%s", err.msg);
    c->cacheable = true;
    return reply_doc(c, doc);
}

/* /api/topics: the report topics (topics.h), for the viewer. */
static int api_topics(struct qry_call *c)
{
    cJSON *doc = qry_topics_json();

    if (!doc)
        return reply_error(c, 500, "out of memory");
    c->cacheable = true;
    return reply_doc(c, doc);
}

/* Column n of a one-row count query (0 when it fails): how many of the two
 * stitched NVTX tables the file has, how many ranks. */
static int64_t q_count(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st = NULL;
    int64_t n = 0;

    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK) {
        HM_COLUMNS_CHECK(st, nvtx_has_names);
        if (sqlite3_step(st) == SQLITE_ROW)
            n = sqlite3_column_int64(st, NVTX_HAS_TABLES);
    }
    sqlite3_finalize(st);
    return n;
}

/* A window request's common parameters: t0 and t1 (ns from the run's
 * origin, default the whole run) and ranks= (*nranks -1 when absent).
 * 0, or -1 after an error answer. */
struct win_params {
    struct qry_lod *lod;
    bool fresh;
    int64_t origin, t0, t1;
    int ranks[QRY_MAX_RANKS], nranks;
};

static int window_params(struct qry_dbh *h, struct qry_call *c, struct win_params *p)
{
    const int64_t lim = INT64_C(1) << 62;
    int64_t end;

    if (!(p->lod = need_lod(h, c, &p->fresh)))
        return -1;
    qry_lod_extent(p->lod, &p->origin, &end);
    p->t0 = 0;
    p->t1 = end > p->origin ? end - p->origin : 1;
    if (param_i64(c, "t0", -lim, lim, &p->t0) || param_i64(c, "t1", -lim, lim, &p->t1) ||
        param_ranks(c, p->ranks, &p->nranks))
        return -1;
    if (p->t1 <= p->t0)
        return reply_error(c, 400, "bad window: t1 (%lld) must be after t0 (%lld)", (long long)p->t1,
                           (long long)p->t0);
    return 0;
}

/* window_params and px= (default API_PX_DEFAULT): a view drawn px columns wide. */
static int view_params(struct qry_dbh *h, struct qry_call *c, struct win_params *p, int64_t *px)
{
    *px = API_PX_DEFAULT;
    return window_params(h, c, p) || param_i64(c, "px", 1, QRY_MAX_PX, px) ? -1 : 0;
}

/* Sends a built answer, or a 500 naming what failed. */
static int reply_built(struct qry_call *c, int rc, struct qry_buf *out, bool fresh, const char *what,
                       const struct hm_err *err)
{
    if (rc != 0) {
        qry_buf_free(out);
        return reply_error(c, 500, "%s: %s", what, err->msg);
    }
    c->cacheable = fresh;
    reply_text(c, 200, out->p);
    return 0;
}

/* Every rank of the run into p->ranks (at most QRY_TIMELINE_MAX_RANKS:
 * checked before); their count, or -1. */
static int all_ranks(struct qry_dbh *h, struct win_params *p)
{
    sqlite3_stmt *st = NULL;

    p->nranks = 0;
    if (sqlite3_prepare_v2(h->db, "SELECT rank FROM ranks ORDER BY rank", -1, &st, NULL) != SQLITE_OK)
        return -1;
    while (sqlite3_step(st) == SQLITE_ROW && p->nranks < QRY_TIMELINE_MAX_RANKS)
        p->ranks[p->nranks++] = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    return p->nranks;
}

/* /api/timeline?t0=&t1=&px=&ranks= (ns since the run's origin). */
static int api_timeline(struct qry_dbh *h, struct qry_call *c)
{
    struct win_params p;
    int64_t px;
    struct qry_buf out = {0};
    struct hm_err err;

    hm_err_clear(&err);
    if (view_params(h, c, &p, &px))
        return -1;
    if (p.nranks > QRY_TIMELINE_MAX_RANKS)
        return reply_error(c, 400, "ranks= names %d ranks; a timeline request takes at most %d (whole runs: "
                           "/api/heatmap)", p.nranks, QRY_TIMELINE_MAX_RANKS);
    if (p.nranks < 0 && q_count(h->db, hm_sql_serve_rank_count) > QRY_TIMELINE_MAX_RANKS)
        return reply_error(c, 400, "this run has more than %d ranks: name the ranks to draw, e.g. ranks=0-%d "
                           "(whole runs: /api/heatmap)", QRY_TIMELINE_MAX_RANKS, QRY_TIMELINE_MAX_RANKS - 1);
    struct qry_window w = {p.t0, p.t1, (int)px, p.nranks >= 0 ? p.ranks : NULL, p.nranks};
    if (qry_shard_count(h->db) > 0) {
        if (p.nranks < 0 && all_ranks(h, &p) < 0)
            return reply_error(c, 500, "timeline: cannot list the ranks");
        w.ranks = p.ranks;
        w.nranks = p.nranks;
        return reply_built(c, qry_shard_timeline(h, &w, &out, &err), &out, p.fresh, "timeline", &err);
    }
    return reply_built(c, qry_timeline(p.lod, &w, &out, &err), &out, p.fresh, "timeline", &err);
}

/* /api/heatmap: ranks x time shares of busy and communication (heatmap.h). */
static int api_heatmap(struct qry_dbh *h, struct qry_call *c)
{
    struct win_params p;
    int64_t cols = 512, rows = 0;
    struct qry_buf out = {0};
    struct hm_err err;

    hm_err_clear(&err);
    if (window_params(h, c, &p) || param_i64(c, "cols", 1, QRY_HEAT_MAX_COLS, &cols) ||
        param_i64(c, "rows", 1, QRY_HEAT_MAX_ROWS, &rows))
        return -1;
    struct qry_heat_req q = {p.origin, p.t0, p.t1, (int)cols, p.nranks >= 0 ? p.ranks : NULL, p.nranks, (int)rows};
    return reply_built(c, qry_heatmap(h->db, &q, &out, &err), &out, p.fresh, "heatmap", &err);
}

struct counters_part {
    int64_t origin, t0, t1;
    int px;
};

/* The counters of ranks in db: the index's own, or a shard's of a sharded
 * ingest (the index keeps none). */
static cJSON *counters_part(sqlite3 *db, const int *ranks, int nranks, void *arg, struct hm_err *err)
{
    const struct counters_part *q = arg;
    return qry_counters(db, q->origin, q->t0, q->t1, q->px, ranks, nranks, err);
}

/* /api/counters?t0=&t1=&px=&ranks=: the memory counters of a few ranks
 * (counters.h), for the timeline's memory rows. */
static int api_counters(struct qry_dbh *h, struct qry_call *c)
{
    struct win_params p;
    int64_t px;
    struct hm_err err;
    cJSON *doc;

    hm_err_clear(&err);
    if (view_params(h, c, &p, &px))
        return -1;
    if (p.nranks < 0 || p.nranks > QRY_TIMELINE_MAX_RANKS)
        return reply_error(c, 400, "counters needs ranks= naming 1 to %d ranks", QRY_TIMELINE_MAX_RANKS);
    struct counters_part q = {p.origin, p.t0, p.t1, (int)px};
    doc = qry_shard_count(h->db) > 0 ? qry_shard_gather(h, p.ranks, p.nranks, "series", counters_part, &q, &err)
                                     : counters_part(h->db, p.ranks, p.nranks, &q, &err);
    if (!doc)
        return reply_error(c, 500, "%s", err.msg);
    c->cacheable = p.fresh;
    return reply_doc(c, doc);
}

/* The capture windows of ranks in a shard of a sharded ingest (the index
 * keeps no counters). */
static cJSON *windows_part(sqlite3 *db, const int *ranks, int nranks, void *arg, struct hm_err *err)
{
    struct qry_windows_req q = *(const struct qry_windows_req *)arg;
    q.ranks = ranks, q.nranks = nranks;
    return qry_windows(db, &q, err);
}

/* /api/windows?t0=&t1=&px=&ranks=: when ranks' GPU was not recorded (CUPTI
 * detached) and their capture windows (capture_windows.h), for the
 * timeline's bands; every rank when ranks= is absent. */
static int api_windows(struct qry_dbh *h, struct qry_call *c)
{
    struct qry_windows_req q = {0};
    struct win_params p;
    struct hm_err err;
    int64_t px;
    cJSON *doc;

    hm_err_clear(&err);
    if (view_params(h, c, &p, &px))
        return -1;
    qry_lod_extent(p.lod, &q.origin, &q.end);
    q.t0 = p.t0, q.t1 = p.t1, q.px = (int)px;
    q.ranks = p.nranks >= 0 ? p.ranks : NULL, q.nranks = p.nranks;
    doc = qry_shard_count(h->db) > 0 ? qry_shard_gather(h, q.ranks, q.nranks, "windows", windows_part, &q, &err)
                                     : qry_windows(h->db, &q, &err);
    if (!doc)
        return reply_error(c, 500, "%s", err.msg);
    c->cacheable = p.fresh;
    return reply_doc(c, doc);
}

/* /api/search?q=: the viewer's jump box (search.h); on the index of a
 * sharded ingest its slices come from the shards (shard_search.h). */
static int api_search(struct qry_dbh *h, struct qry_call *c)
{
    const char *q = qry_call_param(c, "q");
    int64_t origin, end;
    struct hm_err err;
    bool fresh;
    cJSON *doc;
    struct qry_lod *lod = need_lod(h, c, &fresh);

    if (!lod)
        return -1;
    if (!q)
        return reply_error(c, 400, "search needs q=TEXT (a rank, \"step N\", \"PG:SEQ\", \"OP SEQ\" or a name)");
    hm_err_clear(&err);
    qry_lod_extent(lod, &origin, &end);
    doc = qry_shard_count(h->db) > 0 ? qry_shard_search(h, q, origin, &err) : qry_search(h->db, q, origin, &err);
    if (!doc)
        return reply_error(c, err.code == HM_EINVAL ? 400 : 500, "%s", err.msg);
    c->cacheable = fresh;
    return reply_doc(c, doc);
}


static int64_t origin_of(struct qry_dbh *h, struct qry_call *c, bool *ok)
{
    int64_t origin = 0, end;
    bool fresh;
    struct qry_lod *lod = need_lod(h, c, &fresh);

    *ok = lod != NULL;
    if (lod)
        qry_lod_extent(lod, &origin, &end);
    return origin;
}

/* /api/slice/{id}: one slice, names resolved, args as JSON. */
static int api_slice(struct qry_dbh *h, struct qry_call *c, const char *ids)
{
    int64_t args[2] = {0, 0}, asked;
    struct qry_dbh shard;
    struct hm_err err;
    cJSON *rows, *row, *a, *parsed;
    bool ok, routed = false;

    hm_err_clear(&err);
    if (qry_param_i64(ids, 1, INT64_MAX, &args[0]))
        return reply_error(c, 400, "bad slice id '%.40s'", ids);
    asked = args[0];
    if (args[0] >> QRY_SHARD_ID_SHIFT && qry_shard_count(h->db) > 0) {   /* drawn from a shard */
        origin_of(h, c, &ok);
        if (!ok)
            return -1;
        if (qry_shard_route(h, asked, &shard, &args[0], &err) != 0)
            return reply_error(c, err.code == HM_EEMPTY ? 404 : 500, "%s", err.msg);
        routed = true;
    }
    args[1] = origin_of(routed ? &shard : h, c, &ok);
    if (!ok)
        return -1;
    if (!(rows = qry_rows(routed ? shard.db : h->db, hm_sql_serve_slice, args, 2, &err)))
        return reply_error(c, 500, "%s", err.msg);
    if (!(row = cJSON_DetachItemFromArray(rows, 0))) {
        cJSON_Delete(rows);
        return reply_error(c, 404, "no slice %lld", (long long)asked);
    }
    cJSON_Delete(rows);
    if (routed)
        qry_shard_translate_slice(h, asked, row);
    a = cJSON_GetObjectItemCaseSensitive(row, "args");
    if (cJSON_IsString(a) && (parsed = cJSON_Parse(a->valuestring)) != NULL)
        cJSON_ReplaceItemInObjectCaseSensitive(row, "args", parsed);
    c->cacheable = true;
    return reply_doc(c, row);
}

/* Adds each rank's arrival (earliest enter), lag behind the first, skew
 * and late rank: the instance as the viewer highlights it. */
static void add_arrivals(cJSON *doc, const cJSON *members)
{
    cJSON *arr = cJSON_AddArrayToObject(doc, "arrivals"), *m, *a;
    double first = 0, last = 0;
    int late = -1;

    cJSON_ArrayForEach(m, members) {   /* ordered by rank, enter: a rank's first row is its arrival */
        int rank = cJSON_GetObjectItemCaseSensitive(m, "rank")->valueint;
        double enter = cJSON_GetObjectItemCaseSensitive(m, "enter_ns")->valuedouble;
        cJSON *prev = cJSON_GetArrayItem(arr, cJSON_GetArraySize(arr) - 1);
        if (prev && cJSON_GetObjectItemCaseSensitive(prev, "rank")->valueint == rank)
            continue;
        a = cJSON_CreateObject();
        cJSON_AddNumberToObject(a, "rank", rank);
        cJSON_AddNumberToObject(a, "enter_ns", enter);
        cJSON_AddItemToArray(arr, a);
        if (late < 0 || enter < first)
            first = enter;
        if (late < 0 || enter > last)
            last = enter, late = rank;
    }
    cJSON_ArrayForEach(a, arr)
        cJSON_AddNumberToObject(a, "lag_us", (cJSON_GetObjectItemCaseSensitive(a, "enter_ns")->valuedouble - first) / 1000);
    cJSON_AddNumberToObject(doc, "skew_us", (last - first) / 1000);
    if (last > first && cJSON_GetArraySize(arr) > 1)
        cJSON_AddNumberToObject(doc, "late_rank", late);
    else
        cJSON_AddNullToObject(doc, "late_rank");
}

/* /api/collective/find?pg=&seq=: a collectives row id of that instance
 * (report topics may number instances their own way); 0 when none. */
static int64_t find_collective(struct qry_dbh *h, const char *pg, int64_t seq)
{
    sqlite3_stmt *st = NULL;
    int64_t id = 0;

    if (sqlite3_prepare_v2(h->db, hm_sql_serve_collective_find, -1, &st, NULL) == SQLITE_OK) {
        HM_COLUMNS_CHECK(st, find_names);
        sqlite3_bind_text(st, 1, pg, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 2, seq);
        if (sqlite3_step(st) == SQLITE_ROW)
            id = sqlite3_column_int64(st, FIND_ID);
    }
    sqlite3_finalize(st);
    return id;
}

/* /api/collective/{id}: the instance of collectives row id on every rank. */
static int api_collective(struct qry_dbh *h, struct qry_call *c, const char *ids)
{
    int64_t args[2] = {0, 0}, seq = 0;
    struct hm_err err;
    cJSON *rows, *doc, *first;
    bool ok;

    hm_err_clear(&err);
    if (!strcmp(ids, "find")) {
        const char *pg = qry_call_param(c, "pg");
        if (!pg || param_i64(c, "seq", INT64_MIN, INT64_MAX, &seq) || !qry_call_param(c, "seq"))
            return reply_error(c, 400, "find needs pg= and seq=");
        if ((args[0] = find_collective(h, pg, seq)) == 0)
            return reply_error(c, 404, "no collective with pg %.60s and seq %lld", pg, (long long)seq);
    } else if (qry_param_i64(ids, 1, INT64_MAX, &args[0])) {
        return reply_error(c, 400, "bad collective id '%.40s'", ids);
    }
    args[1] = origin_of(h, c, &ok);
    if (!ok)
        return -1;
    if (!(rows = qry_rows(h->db, hm_sql_serve_collective_members, args, 2, &err)))
        return reply_error(c, 500, "%s", err.msg);
    if (!(first = rows->child)) {
        cJSON_Delete(rows);
        return reply_error(c, 404, "no collective %lld", (long long)args[0]);
    }
    doc = cJSON_CreateObject();
    cJSON_AddNumberToObject(doc, "id", (double)args[0]);
    cJSON_AddItemToObject(doc, "pg", cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(first, "pg"), 1));
    cJSON_AddItemToObject(doc, "op", cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(first, "op"), 1));
    cJSON_AddItemToObject(doc, "seq", cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(first, "seq"), 1));
    add_arrivals(doc, rows);
    cJSON_AddItemToObject(doc, "members", rows);
    c->cacheable = true;
    return reply_doc(c, doc);
}

/* /api/nvtx/{id}: one stitched NVTX range (nvtx_stitched row id) on every
 * rank, what the timeline shows when its NVTX row is clicked:
 * {"id","name","path","step","occurrence","ranks","skew_ns","late_rank",
 *  "gpu_ns","gpu_ops","members":[{"rank","slice","enter_ns","exit_ns",
 *  "dur_ns","lag_ns","gpu_ns","gpu_ops"},..]}; times relative to the
 * timeline's origin, lag_ns after the first rank's enter. */
static int api_nvtx(struct qry_dbh *h, struct qry_call *c, const char *ids)
{
    static const char *const top[] = {"id", "name", "path", "step", "occurrence", "ranks",
                                      "skew_ns", "late_rank", "gpu_ns", "gpu_ops"};
    static const char *const rename[][2] = {{"rank_gpu_ns", "gpu_ns"}, {"rank_gpu_ops", "gpu_ops"}};
    int64_t args[2] = {0, 0};
    struct hm_err err;
    cJSON *rows, *doc, *m;
    bool ok;

    hm_err_clear(&err);
    if (qry_param_i64(ids, 1, INT64_MAX, &args[0]))
        return reply_error(c, 400, "bad stitched NVTX range id '%.40s'", ids);
    args[1] = origin_of(h, c, &ok);
    if (!ok)
        return -1;
    if (q_count(h->db, hm_sql_timeline_nvtx_has) < 2)
        return reply_error(c, 404, "this file has no stitched NVTX ranges");
    if (!(rows = qry_rows(h->db, hm_sql_timeline_nvtx_range, args, 2, &err)))
        return reply_error(c, 500, "%s", err.msg);
    if (!rows->child) {
        cJSON_Delete(rows);
        return reply_error(c, 404, "no stitched NVTX range %lld", (long long)args[0]);
    }
    doc = cJSON_CreateObject();
    for (size_t i = 0; i < sizeof top / sizeof *top; i++)
        cJSON_AddItemToObject(doc, top[i], cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(rows->child, top[i]), 1));
    cJSON_ArrayForEach(m, rows) {
        for (size_t i = 0; i < sizeof top / sizeof *top; i++)
            if (strcmp(top[i], "id") != 0)
                cJSON_DeleteItemFromObjectCaseSensitive(m, top[i]);
        cJSON_DeleteItemFromObjectCaseSensitive(m, "id");
        for (size_t i = 0; i < 2; i++) {
            cJSON *v = cJSON_DetachItemFromObjectCaseSensitive(m, rename[i][0]);
            if (v)
                cJSON_AddItemToObject(m, rename[i][1], v);
        }
    }
    cJSON_AddItemToObject(doc, "members", rows);
    c->cacheable = true;
    return reply_doc(c, doc);
}

/* /api/path: {"steps":[{"step","start_ns","end_ns","path_ns"}]}, the steps
 * with a critical path; /api/path/{step}: {"step","segments":[{"seq",
 * "rank","kind","name","pg","dim","start_ns","end_ns","compute_ns"}]},
 * what the timeline draws. Times relative to the timeline's origin. */
static int api_path(struct qry_dbh *h, struct qry_call *c, const char *rest)
{
    int64_t args[2] = {0, 0};
    struct hm_err err;
    cJSON *rows, *doc;
    bool ok;

    hm_err_clear(&err);
    if (*rest && (*rest != '/' || qry_param_i64(rest + 1, INT64_MIN + 1, INT64_MAX, &args[0])))
        return reply_error(c, 400, "bad step '%.40s'", *rest ? rest + 1 : rest);
    if (!qry_has_column(h->db, "critical_path", "compute_ns"))
        return reply_error(c, 404, "this file has no critical path (written before it; re-analyse it)");
    if (!*rest) {
        args[0] = origin_of(h, c, &ok);
        if (!ok)
            return -1;
        if (!(rows = qry_rows(h->db, hm_sql_api_path_steps, args, 1, &err)))
            return reply_error(c, 500, "%s", err.msg);
        doc = cJSON_CreateObject();
        cJSON_AddItemToObject(doc, "steps", rows);
    } else {
        args[1] = origin_of(h, c, &ok);
        if (!ok)
            return -1;
        if (!(rows = qry_rows(h->db, hm_sql_api_path_segments, args, 2, &err)))
            return reply_error(c, 500, "%s", err.msg);
        if (!rows->child) {
            cJSON_Delete(rows);
            return reply_error(c, 404, "no critical path for step %lld", (long long)args[0]);
        }
        doc = cJSON_CreateObject();
        cJSON_AddNumberToObject(doc, "step", (double)args[0]);
        cJSON_AddItemToObject(doc, "segments", rows);
    }
    c->cacheable = true;
    return reply_doc(c, doc);
}

/* POST /api/capture, on the server a live job starts (--serve), which
 * passes rank 0's control socket in HTAMERGE_CAPTURE_SOCKET: what
 * `htamerge capture --no-wait` asks, from the browser or a script. The body
 * is {"steps": N} or {"seconds": S}; the answer says which steps every
 * rank will record. */
static int api_capture(struct qry_call *c)
{
    const char *sock = getenv("HTAMERGE_CAPTURE_SOCKET");
    struct hm_control_reader r = {0};
    const cJSON *steps, *secs;
    char request[64], line[1024];
    cJSON *body, *doc;
    int fd, k;

    if (!sock || !*sock)
        return reply_error(c, 404, "no running job here: capture needs the server of a live job (--serve)");
    body = c->body ? cJSON_Parse(c->body) : NULL;
    steps = cJSON_GetObjectItemCaseSensitive(body, "steps");
    secs = cJSON_GetObjectItemCaseSensitive(body, "seconds");
    if (cJSON_IsNumber(steps) && steps->valuedouble >= 1 && steps->valuedouble <= 100000)
        snprintf(request, sizeof request, "steps %d\n", (int)steps->valuedouble);
    else if (cJSON_IsNumber(secs) && secs->valuedouble > 0 && secs->valuedouble <= 3600)
        snprintf(request, sizeof request, "seconds %.6g\n", secs->valuedouble);
    else
        request[0] = 0;
    cJSON_Delete(body);
    if (!request[0])
        return reply_error(c, 400, "the body must be {\"steps\": N} (1 to 100000) or {\"seconds\": S} (0 < S <= 3600)");
    if ((fd = hm_control_send(sock, request)) < 0)
        return reply_error(c, 503, "the job does not answer at %s: %s", sock, strerror(errno));
    k = hm_control_read_line(fd, &r, line, sizeof line, 3000);
    close(fd);
    if (k <= 0)
        return reply_error(c, 503, "the job did not answer the request");
    if (strncmp(line, "ok ", 3) != 0)
        return reply_error(c, 409, "%s", !strncmp(line, "error ", 6) ? line + 6 : line);
    doc = cJSON_CreateObject();
    cJSON_AddBoolToObject(doc, "ok", 1);
    cJSON_AddStringToObject(doc, "message", line + 3);
    return reply_doc(c, doc);
}

/* POST /api/sql: the body is the SQL text, or {"sql": "..."}. */
static int api_sql(struct qry_dbh *h, struct qry_call *c)
{
    struct qry_sql_limits lim = {.max_rows = API_SQL_ROWS, .max_ms = QRY_API_SQL_MS, .max_bytes = API_SQL_BYTES};
    const char *p = c->body ? c->body : "";
    cJSON *json = NULL, *doc = NULL;
    struct hm_err err;
    int rc;

    hm_err_clear(&err);
    while (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')
        p++;
    if (*p == '{') {
        const cJSON *s;
        json = cJSON_Parse(p);
        s = cJSON_GetObjectItemCaseSensitive(json, "sql");
        if (!cJSON_IsString(s)) {
            cJSON_Delete(json);
            return reply_error(c, 400, "the JSON body needs a string member \"sql\"");
        }
        p = s->valuestring;
    }
    if (c->body && strlen(c->body) != c->body_len)
        rc = hm_err_set(&err, HM_EINVAL, NULL, -1, "the body holds a NUL byte");
    else
        rc = *p ? qry_sql_run(h->db, p, &lim, &doc, &err) : hm_err_set(&err, HM_EINVAL, NULL, -1, "empty statement");
    cJSON_Delete(json);
    if (rc != 0)   /* refused (not a read): 403; a read that fails: 400 */
        return reply_error(c, err.code == HM_EINVAL ? 403 : 400, "%s", err.msg);
    return reply_doc(c, doc);
}

/* On the index of a sharded ingest (which keeps only the slices
 * collectives and steps name, and no counters) the timeline, a slice, the
 * memory counters and the capture windows are drawn from its shards
 * (shard_view.h); the search answers ranks, steps, collectives and NVTX
 * ranges from the index and slice names from the shards (shard_search.h). */
void qry_api_dispatch(struct qry_dbh *h, struct qry_call *c)
{
    const char *p = c->path + strlen("/api/");

    c->cacheable = false;
    if (!strcmp(p, "sql"))
        c->post ? api_sql(h, c) : reply_error(c, 405, "use POST for /api/sql");
    else if (!strcmp(p, "capture"))
        c->post ? api_capture(c) : reply_error(c, 405, "use POST for /api/capture");
    else if (c->post)
        reply_error(c, 405, "use GET for %.100s", c->path);
    else if (!strcmp(p, "run"))
        api_run(h, c);
    else if (!strcmp(p, "ranks"))
        api_ranks(h, c);
    else if (!strcmp(p, "timeline"))
        api_timeline(h, c);
    else if (!strcmp(p, "search"))
        api_search(h, c);
    else if (!strcmp(p, "heatmap"))
        api_heatmap(h, c);
    else if (!strcmp(p, "counters"))
        api_counters(h, c);
    else if (!strcmp(p, "windows"))
        api_windows(h, c);
    else if (!strcmp(p, "topics"))
        api_topics(c);
    else if (!strncmp(p, "report/", 7))
        api_report(h, c, p + 7);
    else if (!strncmp(p, "slice/", 6))
        api_slice(h, c, p + 6);
    else if (!strncmp(p, "collective/", 11))
        api_collective(h, c, p + 11);
    else if (!strncmp(p, "nvtx/", 5))
        api_nvtx(h, c, p + 5);
    else if (!strcmp(p, "path") || !strncmp(p, "path/", 5))
        api_path(h, c, p + 4);
    else
        reply_error(c, 404, "no such endpoint %.100s", c->path);
}

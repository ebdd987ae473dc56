/* Timeline windows with level of detail: what /api/timeline answers.
 *
 * A window [t0, t1) drawn on px columns of width w = (t1 - t0) / px. Per
 * track, a slice at least one column wide is always sent. Narrower slices
 * are sent one by one where a column holds at most QRY_LOD_MAX_PER_COL of
 * them; a busier column is sent as a summary: how many slices start there
 * and which fraction of it the track is busy (union of its slices).
 *
 * Per track, built lazily on first use by one index-only scan of
 * slices_track_ts (timeline_track_scan.sql) and kept until the file changes:
 *   - a pyramid of buckets: level 0 has about n/4 buckets of 2^shift ns,
 *     each level above halves them; a bucket holds the count of slices
 *     starting in it and the ns of it that the track covers;
 *   - the "wide" slices (at least one level-0 bucket long), in memory with
 *     what drawing them needs.
 * A window whose columns span at least 2 level-0 buckets ("coarse") is
 * answered from the pyramid level with 2 to 4 (or more, at level 0) buckets
 * per column, plus one index range scan per run of sparse columns (at most
 * ~4 rows a column). A narrower window ("fine") scans its range directly:
 * it holds about 2 * 4 rows per column on average; positions only
 * (index-only), the drawn slices then looked up, unless slices_track_ts
 * covers depth, name and cat. So a request costs O(px) buckets plus
 * the rows actually drawn, whatever the track's size; memory is about
 * 2 bytes per slice for the pyramid plus the wide slices. A request runs in
 * one read transaction.
 *
 * The tracks' state (pyramids, wide slices, kept slices) stays within a
 * byte budget (qry_lod_new): past it, the tracks least recently drawn are
 * dropped and rebuilt if drawn again, so the server's memory does not grow
 * with the ranks a user visits.
 *
 * While the slices loaded so far fit half that budget (or
 * HTAMERGE_TIMELINE_MEMORY_MB; 0 turns it off), a track also keeps every
 * slice in memory, 32 bytes each, with what drawing needs, and its range
 * look-ups are a bisection instead of SQL: a window of 20 000 drawn slices
 * then costs a few ms instead of ~40 (bench/RESULTS.md, "Timeline").
 * Tracks loaded past the budget use the SQL path above; both give the same
 * answer (tests/cli/test_timeline_memory.sh).
 *
 * Also per rank, loaded on first use: the stitched NVTX ranges
 * (nvtx_stitched_ranks), drawn as a row per rank group; see qry_timeline.
 *
 * Not here: HTTP (api.c), the run's other facts (report.c, verdict.c). */
#include "query_int.h"
#include "common/vec.h"
#include "store/columns.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hm_sql.h"

/* Result columns of the timeline's queries (sql/queries/timeline_*.sql),
 * in SELECT order; see store/columns.h. track_scan reads the first three of
 * track_load's, rows_src the first three of rows' and row's. */
#define COUNT_COLUMNS(X) X(CT_N, "n")
#define EXTENT_COLUMNS(X) X(EX_ORIGIN, "origin") X(EX_END, "end_ns")
#define TRACK_COLUMNS(X) X(TR_ID, "id") X(TR_RANK, "rank")
#define SCAN_COLUMNS(X) X(SC_TS, "ts") X(SC_DUR, "dur") X(SC_ID, "id")
#define LOAD_COLUMNS(X) SCAN_COLUMNS(X) X(SC_DEPTH, "depth") X(SC_NAME, "name") X(SC_CAT, "cat")
#define SRC_COLUMNS(X) X(RW_ID, "id") X(RW_TS, "ts") X(RW_DUR, "dur")
#define ROW_COLUMNS(X) SRC_COLUMNS(X) X(RW_DEPTH, "depth") X(RW_NAME, "name") X(RW_CAT, "cat")
#define STRING_COLUMNS(X) X(STR_TEXT, "str")
#define COLL_COLUMNS(X) X(CO_SLICE, "slice") X(CO_COLL, "coll")
#define NVTX_COLUMNS(X)                                                                                \
    X(NV_RANK, "rank") X(NV_STITCHED, "stitched") X(NV_ENTER, "enter_ns") X(NV_EXIT, "exit_ns")        \
    X(NV_NAME, "name") X(NV_PATH, "path") X(NV_LATE, "late_rank") X(NV_SKEW, "skew_ns")

enum { COUNT_COLUMNS(HM_COLUMN_ENUM) CT__COUNT };
enum { EXTENT_COLUMNS(HM_COLUMN_ENUM) EX__COUNT };
enum { TRACK_COLUMNS(HM_COLUMN_ENUM) TR__COUNT };
enum { LOAD_COLUMNS(HM_COLUMN_ENUM) SC__COUNT };
enum { ROW_COLUMNS(HM_COLUMN_ENUM) RW__COUNT };
enum { STRING_COLUMNS(HM_COLUMN_ENUM) STR__COUNT };
enum { COLL_COLUMNS(HM_COLUMN_ENUM) CO__COUNT };
enum { NVTX_COLUMNS(HM_COLUMN_ENUM) NV__COUNT };
static const char *const count_names[] = {COUNT_COLUMNS(HM_COLUMN_NAME)};
static const char *const extent_names[] = {EXTENT_COLUMNS(HM_COLUMN_NAME)};
static const char *const track_names[] = {TRACK_COLUMNS(HM_COLUMN_NAME)};
static const char *const scan_names[] = {SCAN_COLUMNS(HM_COLUMN_NAME)};
static const char *const load_names[] = {LOAD_COLUMNS(HM_COLUMN_NAME)};
static const char *const src_names[] = {SRC_COLUMNS(HM_COLUMN_NAME)};
static const char *const row_names[] = {ROW_COLUMNS(HM_COLUMN_NAME)};
static const char *const string_names[] = {STRING_COLUMNS(HM_COLUMN_NAME)};
static const char *const coll_names[] = {COLL_COLUMNS(HM_COLUMN_NAME)};
static const char *const nvtx_names[] = {NVTX_COLUMNS(HM_COLUMN_NAME)};

#define LOD_MAX_LEV 64
#define LOD_L0_MAX (1u << 22)      /* level-0 buckets per track at most */
#define LOD_ROW_CAP 200000         /* rows read for one track in one window */

/* A slice as drawn; name and coll are 0 when NULL. */
struct lod_row {
    int64_t id, ts, dur, name, coll;
    int32_t depth, cat;
};

/* A slice as a track keeps it in memory (32 bytes). */
struct lod_slice {
    int64_t ts, dur, id;
    int32_t name;
    int16_t depth, cat;
};

/* A wide slice kept in memory; maxend = max end of it and all before it,
 * so the first one that can overlap a window is found by bisection. */
struct lod_wide {
    struct lod_row r;
    int64_t maxend;
};

struct lod_track {
    int64_t id;
    int rank;
    bool built;
    int64_t base, end;       /* first start, last end (ns) */
    size_t n;                /* slices */
    int shift;               /* level-0 bucket width is 1 << shift ns */
    int nlev;
    size_t nb[LOD_MAX_LEV];
    uint32_t *cnt[LOD_MAX_LEV];  /* owned: slices starting in the bucket */
    float *busy[LOD_MAX_LEV];    /* owned: covered ns of the bucket */
    struct lod_wide *wide;       /* owned, by ts */
    size_t nwide;
    struct lod_slice *mem;       /* owned, by ts: every slice, or NULL (SQL path) */
    size_t bytes;                /* what the above hold */
    uint64_t used;               /* the request that last drew it (qry_lod.tick) */
};

/* A rank's part of a stitched NVTX range; maxend as in lod_wide, within
 * its (rank, depth) group. */
struct lod_nvtx {
    int64_t id, enter, exit, name, skew, maxend;
    int32_t rank, depth, late;   /* late: the stitched range's late rank, -1 for none */
};

/* The NVTX ranges of one rank at one nesting depth: nv[first, first + n). */
struct lod_nvgroup {
    int32_t rank, depth;
    size_t first, n;
};

struct qry_lod {
    sqlite3 *db;                 /* borrowed */
    int64_t origin, end;
    struct lod_track *tracks;    /* owned, in drawing order */
    size_t ntracks;
    struct lod_nvtx *nv;         /* owned, by rank, depth, enter; loaded on first use */
    size_t nnv;
    struct lod_nvgroup *nvg;     /* owned */
    size_t nnvg;
    bool nv_loaded;
    bool covers;                 /* slices_track_ts covers depth, name, cat */
    size_t mem_left;             /* slices that may still be kept in memory */
    size_t budget, bytes;        /* the tracks' state: allowed, held */
    uint64_t tick;               /* requests so far */
    int64_t *coll_slice, *coll_id;   /* owned: slice -> collectives row, by slice */
    size_t ncoll;
    bool colls_loaded;
    sqlite3_stmt *scan, *load, *rows, *row1, *str, *src;   /* owned */
};

/* One request's scratch: per-column accumulators and the name table. */
struct lod_req {
    struct qry_lod *lod;
    uint64_t tick;               /* this request's number */
    const struct qry_window *win;
    int64_t a, b;                /* window, absolute ns */
    double w;                    /* column width, ns */
    double W;                    /* coarse mode: bucket width, ns (0 in fine mode) */
    uint32_t *cnt;               /* owned, px */
    double *busy;                /* owned, px: covered ns */
    int64_t *bfirst, *blast;     /* owned, px: coarse mode bucket range */
    struct lod_row *rows;        /* owned, scratch */
    size_t nrows, caprows;
    bool truncated;
    int64_t *name_keys;          /* owned: open-addressing strings.id -> index */
    int *name_idx;
    size_t name_cap, name_n;
    cJSON *names;                /* owned: texts by index */
    struct qry_buf *out;         /* borrowed */
};

/* ---- setup ---- */

/* Column col of a one-row query, or dflt; names: the query's first col + 1
 * column names, checked. */
static int64_t q_i64(sqlite3 *db, const char *sql, const char *const *names, int col, int64_t dflt)
{
    sqlite3_stmt *st = NULL;
    int64_t v = dflt;

    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK)
        hm_columns_check(st, names, col + 1);
    if (st && sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, col) != SQLITE_NULL)
        v = sqlite3_column_int64(st, col);
    sqlite3_finalize(st);
    return v;
}

static int load_tracks(struct qry_lod *l, struct hm_err *err)
{
    sqlite3_stmt *st = NULL;
    size_t cap = 0;
    int rc = sqlite3_prepare_v2(l->db, hm_sql_timeline_tracks, -1, &st, NULL);

    HM_COLUMNS_CHECK(st, track_names);

    while (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (hm_vec_reserve((void **)&l->tracks, &cap, l->ntracks + 1, sizeof *l->tracks) != 0) {
            sqlite3_finalize(st);
            return hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");
        }
        memset(&l->tracks[l->ntracks], 0, sizeof *l->tracks);
        l->tracks[l->ntracks].id = sqlite3_column_int64(st, TR_ID);
        l->tracks[l->ntracks++].rank = sqlite3_column_int(st, TR_RANK);
        rc = SQLITE_OK;
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE && rc != SQLITE_OK)
        return hm_err_set(err, HM_ESQL, NULL, -1, "timeline tracks: %s", sqlite3_errmsg(l->db));
    return 0;
}

static int prepare_all(struct qry_lod *l, struct hm_err *err)
{
    const char *sql[] = {hm_sql_timeline_track_scan, hm_sql_timeline_track_load, hm_sql_timeline_rows,
                         hm_sql_timeline_row, hm_sql_timeline_string, hm_sql_timeline_rows_src};
    sqlite3_stmt **st[] = {&l->scan, &l->load, &l->rows, &l->row1, &l->str, &l->src};

    for (int i = 0; i < 6; i++)
        if (sqlite3_prepare_v3(l->db, sql[i], -1, SQLITE_PREPARE_PERSISTENT, st[i], NULL) != SQLITE_OK)
            return hm_err_set(err, HM_ESQL, NULL, -1, "timeline: %s", sqlite3_errmsg(l->db));
    HM_COLUMNS_CHECK(l->scan, scan_names);
    HM_COLUMNS_CHECK(l->load, load_names);
    HM_COLUMNS_CHECK(l->rows, row_names);
    HM_COLUMNS_CHECK(l->row1, row_names);
    HM_COLUMNS_CHECK(l->str, string_names);
    HM_COLUMNS_CHECK(l->src, src_names);
    return 0;
}

/* Slices the tracks may keep in memory: half the budget, or
 * HTAMERGE_TIMELINE_MEMORY_MB. */
static size_t mem_budget(size_t budget)
{
    const char *v = getenv("HTAMERGE_TIMELINE_MEMORY_MB");
    char *end = NULL;
    double mb = v && *v ? strtod(v, &end) : -1;

    if (!v || !*v || *end || mb < 0)
        return budget / 2 / sizeof(struct lod_slice);   /* unset or malformed: the default */
    return (size_t)(mb * 1048576.0 / sizeof(struct lod_slice));
}

/* The run's origin and end, in one pass of the extent query (it reads
 * every track's head and tail). */
static void load_extent(struct qry_lod *l)
{
    sqlite3_stmt *st = NULL;

    l->origin = 0;
    l->end = INT64_MIN;
    if (sqlite3_prepare_v2(l->db, hm_sql_timeline_extent, -1, &st, NULL) == SQLITE_OK)
        hm_columns_check(st, extent_names, EX__COUNT);
    if (st && sqlite3_step(st) == SQLITE_ROW) {
        if (sqlite3_column_type(st, EX_ORIGIN) != SQLITE_NULL)
            l->origin = sqlite3_column_int64(st, EX_ORIGIN);
        if (sqlite3_column_type(st, EX_END) != SQLITE_NULL)
            l->end = sqlite3_column_int64(st, EX_END);
    }
    sqlite3_finalize(st);
    if (l->end == INT64_MIN)
        l->end = l->origin;
}

struct qry_lod *qry_lod_new(sqlite3 *db, size_t budget, struct hm_err *err)
{
    struct qry_lod *l = calloc(1, sizeof *l);
    bool indexed;
    int rc;

    if (!l) {
        hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");
        return NULL;
    }
    l->db = db;
    l->budget = budget;
    l->mem_left = mem_budget(budget);
    indexed = q_i64(db, hm_sql_timeline_has_index, count_names, CT_N, 0) > 0;
    l->covers = indexed && q_i64(db, hm_sql_timeline_index_covers, count_names, CT_N, 0) == 3;
    rc = sqlite3_exec(db, indexed ? hm_sql_timeline_setup_views : hm_sql_timeline_setup_copy, NULL, NULL,
                      NULL);
    if (rc != SQLITE_OK)
        rc = hm_err_set(err, HM_ESQL, NULL, -1, "timeline setup: %s", sqlite3_errmsg(db));
    if (rc == 0)
        rc = load_tracks(l, err);
    if (rc == 0)
        rc = prepare_all(l, err);
    if (rc != 0) {
        qry_lod_free(l);
        return NULL;
    }
    load_extent(l);
    return l;
}

static void track_clear(struct lod_track *t)
{
    for (int k = 0; k < t->nlev; k++) {
        free(t->cnt[k]);
        free(t->busy[k]);
    }
    free(t->wide);
    free(t->mem);
}

/* Back to "not built": what it held is given back. */
static void track_unbuild(struct qry_lod *l, struct lod_track *t)
{
    int64_t id = t->id;
    int rank = t->rank;

    if (t->mem)
        l->mem_left += t->n;
    l->bytes -= t->bytes;
    track_clear(t);
    memset(t, 0, sizeof *t);
    t->id = id;
    t->rank = rank;
}

void qry_lod_free(struct qry_lod *l)
{
    if (!l)
        return;
    for (size_t i = 0; i < l->ntracks; i++)
        track_clear(&l->tracks[i]);
    free(l->tracks);
    free(l->nv);
    free(l->nvg);
    free(l->coll_slice);
    free(l->coll_id);
    sqlite3_finalize(l->scan);
    sqlite3_finalize(l->load);
    sqlite3_finalize(l->src);
    sqlite3_finalize(l->rows);
    sqlite3_finalize(l->row1);
    sqlite3_finalize(l->str);
    free(l);
}

size_t qry_lod_held_bytes(const struct qry_lod *l)
{
    return l->bytes;
}

void qry_lod_set_extent(struct qry_lod *l, int64_t origin_ns, int64_t end_ns)
{
    l->origin = origin_ns;
    l->end = end_ns;
}

void qry_lod_extent(const struct qry_lod *l, int64_t *origin_ns, int64_t *end_ns)
{
    *origin_ns = l->origin;
    *end_ns = l->end;
}

/* ---- building a track's pyramid ---- */

/* A track's slices by ts, as its build reads them; details (depth, name,
 * cat) only when loading for memory ("full"), else depth is -1. */
struct scan {
    struct lod_slice *v;   /* owned */
    size_t n, cap;
    bool full;
};

/* Reads track's slices. A full scan stops being full (the track takes the
 * SQL path) when a value does not fit its lod_slice field: nothing is
 * drawn wrong, it is only slower. */
static int scan_track(struct qry_lod *l, int64_t track, struct scan *s, struct hm_err *err)
{
    sqlite3_stmt *st = s->full ? l->load : l->scan;
    int rc;

    sqlite3_reset(st);
    sqlite3_bind_int64(st, 1, track);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        struct lod_slice *v;
        if (hm_vec_reserve((void **)&s->v, &s->cap, s->n + 1, sizeof *s->v) != 0) {
            sqlite3_reset(st);
            return hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");
        }
        v = &s->v[s->n++];
        v->ts = sqlite3_column_int64(st, SC_TS);
        v->dur = sqlite3_column_int64(st, SC_DUR);
        v->id = sqlite3_column_int64(st, SC_ID);
        v->depth = -1, v->name = 0, v->cat = 0;
        if (s->full) {
            int64_t depth = sqlite3_column_int64(st, SC_DEPTH), name = sqlite3_column_int64(st, SC_NAME);
            int64_t cat = sqlite3_column_int64(st, SC_CAT);
            if (depth < 0 || depth > INT16_MAX || name < 0 || name > INT32_MAX || cat < 0 || cat > INT16_MAX)
                s->full = false;
            v->depth = (int16_t)depth, v->name = (int32_t)name, v->cat = (int16_t)cat;
        }
    }
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? 0 : hm_err_set(err, HM_ESQL, NULL, -1, "timeline scan: %s", sqlite3_errmsg(l->db));
}

/* Picks the level-0 bucket width (about 4 slices a bucket) and allocates
 * every level. */
static int pyramid_alloc(struct lod_track *t, struct hm_err *err)
{
    uint64_t span = (uint64_t)(t->end - t->base), target = t->n / 4 ? t->n / 4 : 1;
    size_t nb;

    t->shift = 0;
    while (t->shift < 62 && ((span >> t->shift) + 1 > target || (span >> t->shift) + 1 > LOD_L0_MAX))
        t->shift++;
    nb = (size_t)(span >> t->shift) + 1;
    for (t->nlev = 0; t->nlev < LOD_MAX_LEV; nb = (nb + 1) / 2) {
        t->nb[t->nlev] = nb;
        t->cnt[t->nlev] = calloc(nb, sizeof(uint32_t));
        t->busy[t->nlev] = calloc(nb, sizeof(float));
        if (!t->cnt[t->nlev++] || !t->busy[t->nlev - 1])
            return hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");
        if (nb == 1)
            break;
    }
    return 0;
}

/* Adds [s, e) to the busy time of the level-0 buckets it crosses. */
static void cover_buckets(struct lod_track *t, int64_t s, int64_t e)
{
    size_t i = (size_t)((s - t->base) >> t->shift);

    while (s < e && i < t->nb[0]) {
        int64_t bend = t->base + ((int64_t)(i + 1) << t->shift);
        int64_t seg = (e < bend ? e : bend) - s;
        t->busy[0][i++] += (float)seg;
        s += seg;
    }
}

static void pyramid_fill(struct lod_track *t, const struct scan *s)
{
    int64_t cover = t->base;

    for (size_t j = 0; j < s->n; j++) {
        int64_t e = s->v[j].ts + s->v[j].dur, from = s->v[j].ts > cover ? s->v[j].ts : cover;
        t->cnt[0][(s->v[j].ts - t->base) >> t->shift]++;
        if (e > from)
            cover_buckets(t, from, e);
        if (e > cover)
            cover = e;
    }
    for (int k = 1; k < t->nlev; k++)
        for (size_t i = 0; i < t->nb[k - 1]; i++) {
            t->cnt[k][i / 2] += t->cnt[k - 1][i];
            t->busy[k][i / 2] += t->busy[k - 1][i];
        }
}

/* Reads the slice -> collective map once (timeline_colls.sql). */
static int colls_load(struct qry_lod *l, struct hm_err *err)
{
    sqlite3_stmt *st = NULL;
    size_t cap_slice = 0, cap_id = 0;
    int rc;

    if (l->colls_loaded)
        return 0;
    rc = sqlite3_prepare_v2(l->db, hm_sql_timeline_colls, -1, &st, NULL);
    HM_COLUMNS_CHECK(st, coll_names);
    while (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (hm_vec_reserve((void **)&l->coll_slice, &cap_slice, l->ncoll + 1, sizeof *l->coll_slice) != 0 ||
            hm_vec_reserve((void **)&l->coll_id, &cap_id, l->ncoll + 1, sizeof *l->coll_id) != 0) {
            sqlite3_finalize(st);
            return hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");
        }
        l->coll_slice[l->ncoll] = sqlite3_column_int64(st, CO_SLICE);
        l->coll_id[l->ncoll++] = sqlite3_column_int64(st, CO_COLL);
        rc = SQLITE_OK;
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE && rc != SQLITE_OK)
        return hm_err_set(err, HM_ESQL, NULL, -1, "timeline collectives: %s", sqlite3_errmsg(l->db));
    l->colls_loaded = true;
    return 0;
}

/* The collectives row of slice id, 0 when none. */
static int64_t coll_of(const struct qry_lod *l, int64_t id)
{
    size_t lo = 0, hi = l->ncoll;

    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (l->coll_slice[mid] < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < l->ncoll && l->coll_slice[lo] == id ? l->coll_id[lo] : 0;
}

/* A slice kept in memory as drawn. */
static void row_of(const struct qry_lod *l, const struct lod_slice *v, struct lod_row *r)
{
    *r = (struct lod_row){.id = v->id, .ts = v->ts, .dur = v->dur, .depth = v->depth, .name = v->name,
                          .cat = v->cat, .coll = coll_of(l, v->id)};
}

static void row_read(const struct qry_lod *l, sqlite3_stmt *st, struct lod_row *r)
{
    r->id = sqlite3_column_int64(st, RW_ID);
    r->ts = sqlite3_column_int64(st, RW_TS);
    r->dur = sqlite3_column_int64(st, RW_DUR);
    r->depth = sqlite3_column_int(st, RW_DEPTH);
    r->name = sqlite3_column_int64(st, RW_NAME);
    r->cat = sqlite3_column_int(st, RW_CAT);
    r->coll = coll_of(l, r->id);
}

/* Keeps the slices at least one level-0 bucket long, with their details. */
static int wide_collect(struct qry_lod *l, struct lod_track *t, const struct scan *s, struct hm_err *err)
{
    int64_t width = INT64_C(1) << t->shift, maxend = INT64_MIN;
    size_t n = 0;

    for (size_t j = 0; j < s->n; j++)
        n += s->v[j].dur >= width;
    if (n && !(t->wide = calloc(n, sizeof *t->wide)))
        return hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");
    for (size_t j = 0; j < s->n; j++) {
        const struct lod_slice *v = &s->v[j];
        struct lod_wide *wd;
        if (v->dur < width)
            continue;
        wd = &t->wide[t->nwide++];
        if (s->full) {
            row_of(l, v, &wd->r);
        } else {
            wd->r = (struct lod_row){.id = v->id, .ts = v->ts, .dur = v->dur};
            sqlite3_reset(l->row1);
            sqlite3_bind_int64(l->row1, 1, v->id);
            if (sqlite3_step(l->row1) == SQLITE_ROW)
                row_read(l, l->row1, &wd->r);
        }
        if (v->ts + v->dur > maxend)
            maxend = v->ts + v->dur;
        wd->maxend = maxend;
    }
    sqlite3_reset(l->row1);
    return 0;
}

/* Builds the track's pyramid and wide slices, and keeps its slices in
 * memory while the budget allows (a track is loaded whole or not at all;
 * the one that crosses the budget is dropped after its build). */
static int track_build(struct qry_lod *l, struct lod_track *t, struct hm_err *err)
{
    struct scan s = {.full = l->mem_left > 0};
    int rc = scan_track(l, t->id, &s, err);

    t->built = true;
    if (rc == 0 && s.n > 0) {
        t->n = s.n;
        t->base = s.v[0].ts;
        t->end = t->base;
        for (size_t j = 0; j < s.n; j++)
            if (s.v[j].ts + s.v[j].dur > t->end)
                t->end = s.v[j].ts + s.v[j].dur;
        if (t->end > l->end)   /* the extent query looks only at each track's tail */
            l->end = t->end;
        rc = pyramid_alloc(t, err);
        if (rc == 0)
            pyramid_fill(t, &s);
        if (rc == 0)
            rc = wide_collect(l, t, &s, err);
        if (rc == 0 && s.full && s.n <= l->mem_left) {
            struct lod_slice *v = realloc(s.v, s.n * sizeof *v);   /* give back the growth slack */
            t->mem = v ? v : s.v;
            s.v = NULL;
            l->mem_left -= s.n;
        } else if (s.full) {
            l->mem_left = 0;
        }
    }
    free(s.v);
    t->bytes = t->nwide * sizeof *t->wide + (t->mem ? t->n * sizeof *t->mem : 0);
    for (int k = 0; k < t->nlev; k++)
        t->bytes += t->nb[k] * (sizeof *t->cnt[k] + sizeof *t->busy[k]);
    l->bytes += t->bytes;
    if (rc != 0)   /* so a later request retries */
        track_unbuild(l, t);
    return rc;
}

/* Drops the tracks least recently drawn, not by this request (tick), until
 * the tracks' state fits the budget again or only this request's remains. */
static void evict(struct qry_lod *l, uint64_t tick)
{
    while (l->bytes > l->budget) {
        struct lod_track *old = NULL;
        for (size_t i = 0; i < l->ntracks; i++) {
            struct lod_track *t = &l->tracks[i];
            if (t->built && t->used < tick && (!old || t->used < old->used))
                old = t;
        }
        if (!old)
            return;
        track_unbuild(l, old);
    }
}

/* ---- answering a window ---- */

static int col_of(const struct lod_req *q, int64_t ts)
{
    double c = floor((double)(ts - q->a) / q->w);
    return c < 0 ? 0 : c >= q->win->px ? q->win->px - 1 : (int)c;
}

/* Index of a string in the response's name table, adding it on first use;
 * -1 for no name. */
static int name_index(struct lod_req *q, int64_t sid)
{
    size_t h;

    if (sid <= 0)
        return -1;
    if (q->name_n * 2 >= q->name_cap) {
        size_t cap = q->name_cap ? 2 * q->name_cap : 1024;
        int64_t *keys = calloc(cap, sizeof *keys);
        int *idx = calloc(cap, sizeof *idx);
        if (!keys || !idx) {
            free(keys), free(idx);
            return -1;
        }
        for (size_t i = 0; i < q->name_cap; i++) {
            if (!q->name_keys[i])
                continue;
            for (h = (size_t)q->name_keys[i] * 2654435761u % cap; keys[h]; h = (h + 1) % cap) {}
            keys[h] = q->name_keys[i], idx[h] = q->name_idx[i];
        }
        free(q->name_keys), free(q->name_idx);
        q->name_keys = keys, q->name_idx = idx, q->name_cap = cap;
    }
    for (h = (size_t)sid * 2654435761u % q->name_cap; q->name_keys[h]; h = (h + 1) % q->name_cap)
        if (q->name_keys[h] == sid)
            return q->name_idx[h];
    sqlite3_reset(q->lod->str);
    sqlite3_bind_int64(q->lod->str, 1, sid);
    cJSON_AddItemToArray(q->names, cJSON_CreateString(sqlite3_step(q->lod->str) == SQLITE_ROW ?
                                                      (const char *)sqlite3_column_text(q->lod->str, STR_TEXT) : ""));
    sqlite3_reset(q->lod->str);
    q->name_keys[h] = sid;
    q->name_idx[h] = (int)q->name_n;
    return (int)q->name_n++;
}

/* Writes v in decimal at p; returns the end. Two digits a step: number
 * formatting was a fifth of a busy window's time (printf's, a tenth more). */
static char *put_i64(char *p, int64_t v)
{
    static const char pairs[] = "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
                                "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
                                "8081828384858687888990919293949596979899";
    char tmp[24], *e = tmp + sizeof tmp, *d = e;
    uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;

    if (v < 0)
        *p++ = '-';
    while (u >= 100) {
        unsigned k = (unsigned)(u % 100) * 2;
        u /= 100;
        *--d = pairs[k + 1];
        *--d = pairs[k];
    }
    if (u >= 10) {
        *--d = pairs[u * 2 + 1];
        *--d = pairs[u * 2];
    } else {
        *--d = (char)('0' + u);
    }
    memcpy(p, d, (size_t)(e - d));
    return p + (e - d);
}

static void emit(struct lod_req *q, const struct lod_row *r, bool *first)
{
    int64_t v[7] = {r->id, r->ts - q->lod->origin, r->dur, r->depth, name_index(q, r->name), r->cat, r->coll};
    char line[7 * 22 + 4], *p = line;

    if (!*first)
        *p++ = ',';
    *p++ = '[';
    for (int i = 0; i < 7; i++) {
        p = put_i64(p, v[i]);
        *p++ = i < 6 ? ',' : ']';
    }
    qry_buf_put(q->out, line, (size_t)(p - line));
    *first = false;
}

static int rows_push(struct lod_req *q, const struct lod_row *r)
{
    if (hm_vec_reserve((void **)&q->rows, &q->caprows, q->nrows + 1, sizeof *q->rows) != 0)
        return HM_ENOMEM;
    q->rows[q->nrows++] = *r;
    return 0;
}

/* fetch_rows from memory: bisection to from, then the run up to to. */
static int mem_rows(struct lod_req *q, const struct lod_track *t, int64_t from, int64_t to, struct hm_err *err)
{
    int64_t width = INT64_C(1) << t->shift;
    size_t lo = 0, hi = t->n;

    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (t->mem[mid].ts < from)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (; lo < t->n && t->mem[lo].ts < to; lo++) {
        const struct lod_slice *v = &t->mem[lo];
        struct lod_row r;
        if (v->dur >= width || v->ts + v->dur <= q->a)
            continue;
        if (q->nrows >= LOD_ROW_CAP) {
            q->truncated = true;
            break;
        }
        row_of(q->lod, v, &r);
        if (rows_push(q, &r))
            return hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");
    }
    return 0;
}

/* Appends the narrow rows of track starting in [from, to) to q->rows. */
static int fetch_rows(struct lod_req *q, const struct lod_track *t, int64_t from, int64_t to, struct hm_err *err)
{
    sqlite3_stmt *st = q->lod->rows;
    struct lod_row r;
    int rc;

    if (t->mem)
        return mem_rows(q, t, from, to, err);
    sqlite3_reset(st);
    sqlite3_bind_int64(st, 1, t->id);
    sqlite3_bind_int64(st, 2, from);
    sqlite3_bind_int64(st, 3, to);
    sqlite3_bind_int64(st, 4, INT64_C(1) << t->shift);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (q->nrows >= LOD_ROW_CAP) {
            q->truncated = true;
            break;
        }
        row_read(q->lod, st, &r);
        if (r.ts + r.dur > q->a && rows_push(q, &r))
            return hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");
    }
    sqlite3_reset(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return hm_err_set(err, HM_ESQL, NULL, -1, "timeline rows: %s", sqlite3_errmsg(q->lod->db));
    return 0;
}

/* First wide slice whose end (or an earlier one's) passes a. */
static size_t wide_first(const struct lod_track *t, int64_t a)
{
    size_t lo = 0, hi = t->nwide;

    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (t->wide[mid].maxend > a)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

static int by_ts(const void *x, const void *y)
{
    const struct lod_row *a = x, *b = y;
    return a->ts < b->ts ? -1 : a->ts > b->ts;
}

/* Adds [s, e) clipped to the window to the columns' busy time. */
static void cover_cols(struct lod_req *q, int64_t s, int64_t e)
{
    double x = (double)((s > q->a ? s : q->a) - q->a), end = (double)((e < q->b ? e : q->b) - q->a);

    while (x < end) {
        int c = (int)(x / q->w);
        double cend = c >= q->win->px - 1 ? end : (c + 1) * q->w;
        double seg = (end < cend ? end : cend) - x;
        if (c >= 0 && c < q->win->px)
            q->busy[c] += seg;
        x += seg > 0 ? seg : end;
    }
}

static void emit_dense(struct lod_req *q)
{
    bool first = true;

    for (int c = 0; c < q->win->px; c++) {
        /* Coarse columns hold a whole number of buckets, 4 or 5 when a
         * column is 4.5 buckets wide: their busy time is a share of those. */
        double span = q->W > 0 && q->bfirst[c] >= 0 ? (double)(q->blast[c] - q->bfirst[c] + 1) * q->W : q->w;
        double f = q->busy[c] / span;
        char line[64], *p = line;
        int milli = (int)lround((f > 1 ? 1 : f < 0 ? 0 : f) * 1000);
        if (q->cnt[c] <= QRY_LOD_MAX_PER_COL)
            continue;
        if (!first)
            *p++ = ',';
        *p++ = '[';
        p = put_i64(p, c);
        *p++ = ',';
        p = put_i64(p, q->cnt[c]);
        *p++ = ',';
        if (milli >= 1000) {   /* as %.3f would: 1.000, 0.042 */
            memcpy(p, "1.000", 5);
            p += 5;
        } else {
            *p++ = '0', *p++ = '.';
            *p++ = (char)('0' + milli / 100), *p++ = (char)('0' + milli / 10 % 10), *p++ = (char)('0' + milli % 10);
        }
        *p++ = ']';
        qry_buf_put(q->out, line, (size_t)(p - line));
        first = false;
    }
}

/* Appends the narrow slices of track starting in [from, to) to q->rows,
 * position only (depth -1: details not read yet). */
static int fetch_src(struct lod_req *q, const struct lod_track *t, int64_t from, int64_t to, struct hm_err *err)
{
    sqlite3_stmt *st = q->lod->src;
    int rc;

    if (t->mem)   /* details come with the rows: nothing to look up later */
        return mem_rows(q, t, from, to, err);
    sqlite3_reset(st);
    sqlite3_bind_int64(st, 1, t->id);
    sqlite3_bind_int64(st, 2, from);
    sqlite3_bind_int64(st, 3, to);
    sqlite3_bind_int64(st, 4, INT64_C(1) << t->shift);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        struct lod_row r = {.id = sqlite3_column_int64(st, RW_ID), .ts = sqlite3_column_int64(st, RW_TS),
                            .dur = sqlite3_column_int64(st, RW_DUR), .depth = -1};
        if (q->nrows >= LOD_ROW_CAP) {
            q->truncated = true;
            break;
        }
        if (r.ts + r.dur > q->a && rows_push(q, &r))
            return hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");
    }
    sqlite3_reset(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return hm_err_set(err, HM_ESQL, NULL, -1, "timeline rows: %s", sqlite3_errmsg(q->lod->db));
    return 0;
}

/* Reads what drawing needs of a row fetch_src left bare. */
static int row_details(struct lod_req *q, struct lod_row *r, struct hm_err *err)
{
    sqlite3_stmt *st = q->lod->row1;
    int rc;

    if (r->depth >= 0)
        return 0;
    sqlite3_reset(st);
    sqlite3_bind_int64(st, 1, r->id);
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        row_read(q->lod, st, r);
    sqlite3_reset(st);
    if (rc != SQLITE_ROW)
        return hm_err_set(err, HM_ESQL, NULL, -1, "timeline row %lld: %s", (long long)r->id,
                          rc == SQLITE_DONE ? "gone" : sqlite3_errmsg(q->lod->db));
    return 0;
}

/* Fine window: every slice in range is counted; columns count and cover
 * them. With a covering slices_track_ts the range scan reads all a drawn
 * slice needs; else it reads positions only (index-only) and the slices
 * drawn one by one are looked up (about 1.6 us each: most of the time of a
 * window with 20 000 of them). */
static int track_fine(struct lod_req *q, const struct lod_track *t, struct hm_err *err)
{
    int64_t width = INT64_C(1) << t->shift, cover = INT64_MIN;
    bool first = true;
    int rc = q->lod->covers ? fetch_rows(q, t, q->a - width, q->b, err) : fetch_src(q, t, q->a - width, q->b, err);
    size_t nnarrow = q->nrows;

    for (size_t i = wide_first(t, q->a); rc == 0 && i < t->nwide && t->wide[i].r.ts < q->b; i++)
        if (t->wide[i].r.ts + t->wide[i].r.dur > q->a && rows_push(q, &t->wide[i].r))
            rc = hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");
    if (rc != 0)
        return rc;
    if (q->nrows > nnarrow && nnarrow > 0)   /* two runs, each by ts: a few wide ones into many narrow */
        qsort(q->rows, q->nrows, sizeof *q->rows, by_ts);
    for (size_t i = 0; i < q->nrows; i++) {
        const struct lod_row *r = &q->rows[i];
        if ((double)r->dur < q->w)
            q->cnt[col_of(q, r->ts)]++;
        if (r->ts + r->dur > cover) {
            cover_cols(q, r->ts > cover ? r->ts : cover, r->ts + r->dur);
            cover = r->ts + r->dur;
        }
    }
    qry_buf_puts(q->out, "\"lod\":\"fine\",\"slices\":[");
    for (size_t i = 0; i < q->nrows && rc == 0; i++)
        if ((double)q->rows[i].dur >= q->w || q->cnt[col_of(q, q->rows[i].ts)] <= QRY_LOD_MAX_PER_COL) {
            rc = row_details(q, &q->rows[i], err);
            if (rc == 0)
                emit(q, &q->rows[i], &first);
        }
    return rc;
}

/* Coarse window: columns take the counts of the coarsest pyramid level with
 * at least 4 buckets per column, or level 0 (2 or more); a bucket goes to
 * the column holding its middle. */
static void coarse_columns(struct lod_req *q, const struct lod_track *t, int k)
{
    int sk = t->shift + k;
    int64_t W = INT64_C(1) << sk;
    int64_t i0 = q->a > t->base ? (q->a - t->base) >> sk : 0;
    int64_t i1 = (q->b - 1 - t->base) >> sk;

    if (i1 >= (int64_t)t->nb[k])
        i1 = (int64_t)t->nb[k] - 1;
    for (int64_t i = i0; i <= i1; i++) {
        int c = col_of(q, t->base + i * W + W / 2);
        q->cnt[c] += t->cnt[k][i];
        q->busy[c] += t->busy[k][i];
        if (q->bfirst[c] < 0)
            q->bfirst[c] = i;
        q->blast[c] = i;
    }
}

static int track_coarse(struct lod_req *q, const struct lod_track *t, int k, struct hm_err *err)
{
    int sk = t->shift + k, px = q->win->px, rc = 0;
    bool first = true;

    q->W = (double)(INT64_C(1) << sk);
    coarse_columns(q, t, k);
    /* Runs of sparse columns: one range scan each, on bucket bounds, so
     * exactly the slices the columns counted come back. */
    for (int c = 0; c < px && rc == 0; c++) {
        int e = c;
        if (q->cnt[c] > QRY_LOD_MAX_PER_COL || q->bfirst[c] < 0)
            continue;
        while (e + 1 < px && q->cnt[e + 1] <= QRY_LOD_MAX_PER_COL && q->bfirst[e + 1] >= 0)
            e++;
        rc = fetch_rows(q, t, t->base + (q->bfirst[c] << sk), t->base + ((q->blast[e] + 1) << sk), err);
        c = e;
    }
    if (rc != 0)
        return rc;
    qry_buf_puts(q->out, "\"lod\":\"coarse\",\"slices\":[");
    for (size_t i = 0; i < q->nrows; i++)
        emit(q, &q->rows[i], &first);
    for (size_t i = wide_first(t, q->a); i < t->nwide && t->wide[i].r.ts < q->b; i++) {
        const struct lod_row *r = &t->wide[i].r;
        int64_t bi = (r->ts - t->base) >> sk;
        int c = col_of(q, t->base + bi * (INT64_C(1) << sk) + (INT64_C(1) << sk) / 2);
        if (r->ts + r->dur > q->a &&
            ((double)r->dur >= q->w || r->ts < q->a || q->cnt[c] <= QRY_LOD_MAX_PER_COL))
            emit(q, r, &first);
    }
    return 0;
}

static void req_reset(struct lod_req *q)
{
    int px = q->win->px;

    memset(q->cnt, 0, (size_t)px * sizeof *q->cnt);
    memset(q->busy, 0, (size_t)px * sizeof *q->busy);
    for (int c = 0; c < px; c++)
        q->bfirst[c] = q->blast[c] = -1;
    q->nrows = 0;
    q->W = 0;
    q->truncated = false;
}

static int track_window(struct lod_req *q, struct lod_track *t, struct hm_err *err)
{
    int rc = t->built ? 0 : track_build(q->lod, t, err), k = 0;

    if (rc != 0)
        return rc;
    t->used = q->tick;
    evict(q->lod, q->tick);
    req_reset(q);
    qry_buf_printf(q->out, "{\"id\":%lld,\"rank\":%d,\"n\":%zu,", (long long)t->id, t->rank, t->n);
    if (t->n == 0 || t->end <= q->a || t->base >= q->b) {
        qry_buf_puts(q->out, "\"lod\":\"empty\",\"slices\":[");
    } else if ((double)(INT64_C(2) << t->shift) > q->w) {
        rc = track_fine(q, t, err);
    } else {
        while (k + 1 < t->nlev && (double)(INT64_C(4) << (t->shift + k + 1)) <= q->w)
            k++;
        rc = track_coarse(q, t, k, err);
    }
    qry_buf_puts(q->out, "],\"dense\":[");
    emit_dense(q);
    qry_buf_printf(q->out, "],\"truncated\":%s}", q->truncated ? "true" : "false");
    return rc;
}

static bool rank_wanted(const struct qry_window *w, int rank)
{
    if (!w->ranks)
        return true;
    for (int i = 0; i < w->nranks; i++)
        if (w->ranks[i] == rank)
            return true;
    return false;
}

static int req_init(struct lod_req *q, struct qry_lod *l, const struct qry_window *w, struct qry_buf *out)
{
    memset(q, 0, sizeof *q);
    q->lod = l;
    q->tick = ++l->tick;
    q->win = w;
    q->out = out;
    q->a = l->origin + w->t0;
    q->b = l->origin + w->t1;
    q->w = (double)(w->t1 - w->t0) / w->px;
    q->cnt = malloc((size_t)w->px * sizeof *q->cnt);
    q->busy = malloc((size_t)w->px * sizeof *q->busy);
    q->bfirst = malloc((size_t)w->px * sizeof *q->bfirst);
    q->blast = malloc((size_t)w->px * sizeof *q->blast);
    q->names = cJSON_CreateArray();
    return q->cnt && q->busy && q->bfirst && q->blast && q->names ? 0 : HM_ENOMEM;
}

static void req_free(struct lod_req *q)
{
    free(q->cnt), free(q->busy), free(q->bfirst), free(q->blast), free(q->rows);
    free(q->name_keys), free(q->name_idx);
    cJSON_Delete(q->names);
}

/* ---- stitched NVTX ranges ---- */

#define LOD_NVTX_MAX_DEPTH 7   /* deeper ranges share the last row */

static int by_rank_depth_enter(const void *x, const void *y)
{
    const struct lod_nvtx *a = x, *b = y;

    if (a->rank != b->rank)
        return a->rank < b->rank ? -1 : 1;
    if (a->depth != b->depth)
        return a->depth < b->depth ? -1 : 1;
    return a->enter < b->enter ? -1 : a->enter > b->enter;
}

/* Nesting depth from the stitched path "a/b/c" (ProfilerStep left out). */
static int32_t path_depth(const unsigned char *path)
{
    int32_t d = 0;

    for (; path && *path; path++)
        d += *path == '/';
    return d < LOD_NVTX_MAX_DEPTH ? d : LOD_NVTX_MAX_DEPTH - 1;
}

static int nvtx_group(struct qry_lod *l, struct hm_err *err)
{
    size_t cap = 0;
    int64_t maxend = INT64_MIN;

    for (size_t i = 0; i < l->nnv; i++) {
        struct lod_nvtx *r = &l->nv[i];
        if (i == 0 || r->rank != r[-1].rank || r->depth != r[-1].depth) {
            if (hm_vec_reserve((void **)&l->nvg, &cap, l->nnvg + 1, sizeof *l->nvg) != 0)
                return hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");
            l->nvg[l->nnvg++] = (struct lod_nvgroup){r->rank, r->depth, i, 0};
            maxend = INT64_MIN;
        }
        l->nvg[l->nnvg - 1].n++;
        if (r->exit > maxend)
            maxend = r->exit;
        r->maxend = maxend;
    }
    return 0;
}

/* Reads every rank's stitched ranges once; a file without the tables has
 * none. */
static int nvtx_load(struct qry_lod *l, struct hm_err *err)
{
    sqlite3_stmt *st = NULL;
    size_t cap = 0;
    int rc;

    if (l->nv_loaded)
        return 0;
    if (q_i64(l->db, hm_sql_timeline_nvtx_has, count_names, CT_N, 0) < 2) {
        l->nv_loaded = true;
        return 0;
    }
    rc = sqlite3_prepare_v2(l->db, hm_sql_timeline_nvtx, -1, &st, NULL);
    HM_COLUMNS_CHECK(st, nvtx_names);
    while (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (hm_vec_reserve((void **)&l->nv, &cap, l->nnv + 1, sizeof *l->nv) != 0) {
            sqlite3_finalize(st);
            return hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");
        }
        l->nv[l->nnv++] = (struct lod_nvtx){
            .rank = sqlite3_column_int(st, NV_RANK),
            .id = sqlite3_column_int64(st, NV_STITCHED),
            .enter = sqlite3_column_int64(st, NV_ENTER),
            .exit = sqlite3_column_int64(st, NV_EXIT),
            .name = sqlite3_column_int64(st, NV_NAME),
            .depth = path_depth(sqlite3_column_text(st, NV_PATH)),
            .late = sqlite3_column_type(st, NV_LATE) == SQLITE_NULL ? -1 : sqlite3_column_int(st, NV_LATE),
            .skew = sqlite3_column_int64(st, NV_SKEW),
        };
        rc = SQLITE_OK;
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE && rc != SQLITE_OK)
        return hm_err_set(err, HM_ESQL, NULL, -1, "timeline nvtx: %s", sqlite3_errmsg(l->db));
    if (l->nnv > 1)
        qsort(l->nv, l->nnv, sizeof *l->nv, by_rank_depth_enter);
    if ((rc = nvtx_group(l, err)) != 0) {
        free(l->nv), free(l->nvg);
        l->nv = NULL, l->nvg = NULL, l->nnv = l->nnvg = 0;
        return rc;
    }
    l->nv_loaded = true;
    return 0;
}

/* One entry: range r alone (n = 1), or r and the n - 1 narrow ranges
 * merged with it, to end; a merged entry has no late rank of its own. */
static void nvtx_emit(struct lod_req *q, const struct lod_nvtx *r, int64_t end, int n, bool *first)
{
    int64_t v[9] = {r->rank, r->id, r->enter - q->lod->origin, end - r->enter, r->depth,
                    name_index(q, r->name), n == 1 ? r->late : -1, n == 1 ? r->skew : 0, n};
    char line[9 * 22 + 4], *p = line;

    if (!*first)
        *p++ = ',';
    *p++ = '[';
    for (int i = 0; i < 9; i++) {
        p = put_i64(p, v[i]);
        *p++ = i < 8 ? ',' : ']';
    }
    *p = '\0';
    qry_buf_puts(q->out, line);
    *first = false;
}

/* One (rank, depth) group in the window: ranges at least a column wide one
 * by one; a run of narrower ones, each starting at most one column after
 * the run so far ends, as one entry standing for n of them (a range of the
 * same depth never holds another, so the run is what a person could not
 * tell apart anyway). At the widest zoom a rank's back-to-back steps
 * become one entry per depth instead of one per column. */
static void nvtx_window_group(struct lod_req *q, const struct lod_nvgroup *g, bool *first)
{
    const struct lod_nvtx *nv = q->lod->nv + g->first, *pend = NULL;
    size_t lo = 0, hi = g->n;
    int64_t pend_end = 0;
    int pend_n = 0;

    while (lo < hi) {   /* first range whose end (or an earlier one's) passes a */
        size_t mid = (lo + hi) / 2;
        if (nv[mid].maxend > q->a)
            hi = mid;
        else
            lo = mid + 1;
    }
    for (size_t i = lo; i < g->n && nv[i].enter < q->b; i++) {
        const struct lod_nvtx *r = &nv[i];
        if (r->exit <= q->a)
            continue;
        if ((double)(r->exit - r->enter) >= q->w || r->enter < q->a) {
            if (pend)
                nvtx_emit(q, pend, pend_end, pend_n, first);
            pend = NULL;
            nvtx_emit(q, r, r->exit, 1, first);
            continue;
        }
        if (pend && col_of(q, r->enter) <= col_of(q, pend_end > pend->enter ? pend_end - 1 : pend_end) + 1) {
            pend_n++;
            if (r->exit > pend_end)
                pend_end = r->exit;
            continue;
        }
        if (pend)
            nvtx_emit(q, pend, pend_end, pend_n, first);
        pend = r, pend_end = r->exit, pend_n = 1;
    }
    if (pend)
        nvtx_emit(q, pend, pend_end, pend_n, first);
}

static int nvtx_window(struct lod_req *q, struct hm_err *err)
{
    bool first = true;
    int rc = nvtx_load(q->lod, err);

    if (rc != 0)
        return rc;
    qry_buf_puts(q->out, ",\"nvtx\":[");
    for (size_t i = 0; i < q->lod->nnvg; i++)
        if (rank_wanted(q->win, q->lod->nvg[i].rank))
            nvtx_window_group(q, &q->lod->nvg[i], &first);
    qry_buf_puts(q->out, "]");
    return 0;
}

/* Document: {"origin_ns":"..","t0":..,"t1":..,"px":..,"col_ns":..,
 *   "tracks":[{"id","rank","n","lod":"fine|coarse|empty",
 *              "slices":[[id,ts,dur,depth,name,cat,collective],..],
 *              "dense":[[column,count,busy_fraction],..],"truncated":bool}],
 *   "nvtx":[[rank,stitched_id,ts,dur,depth,name,late_rank,skew_ns,n],..],
 *   "names":[..]}
 * ts relative to origin_ns; name indexes "names" (-1: none); collective is
 * a collectives.id or 0. "nvtx" holds each rank's part of the stitched NVTX
 * ranges (nvtx_stitched_ranks) in the window, by rank, depth (nesting, from
 * the stitched path) and ts; late_rank is the stitched range's (-1: none).
 * Runs of ranges narrower than a column come as one entry: the first
 * one's id and name, ts to the run's end, n = how many (1 otherwise) and
 * late_rank -1, skew 0; /api/nvtx/{id} gives one stitched range on every
 * rank. */
static int timeline_doc(struct qry_lod *l, const struct qry_window *w, struct qry_buf *out, struct hm_err *err)
{
    struct lod_req q;
    bool first = true;
    char *names;
    int rc = req_init(&q, l, w, out);

    if (rc == 0 && (rc = colls_load(l, err)) != 0) {
        req_free(&q);
        return rc;
    }
    if (rc != 0) {
        req_free(&q);
        return hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");
    }
    qry_buf_printf(out, "{\"origin_ns\":\"%lld\",\"t0\":%lld,\"t1\":%lld,\"px\":%d,\"col_ns\":%.3f,\"tracks\":[",
                   (long long)l->origin, (long long)w->t0, (long long)w->t1, w->px, q.w);
    for (size_t i = 0; i < l->ntracks && rc == 0; i++) {
        if (!rank_wanted(w, l->tracks[i].rank))
            continue;
        qry_buf_puts(out, first ? "" : ",");
        first = false;
        rc = track_window(&q, &l->tracks[i], err);
    }
    if (rc == 0) {
        qry_buf_puts(out, "]");
        rc = nvtx_window(&q, err);
    }
    names = rc == 0 ? cJSON_PrintUnformatted(q.names) : NULL;
    if (rc == 0 && !names)
        rc = hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");
    if (rc == 0)
        qry_buf_printf(out, ",\"names\":%s}", names);
    free(names);
    req_free(&q);
    if (rc == 0 && out->oom)
        rc = hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");
    return rc;
}

/* One read transaction around the request: each statement on its own
 * would take and drop the file's lock (fcntl calls, a WAL check), and a
 * fine window runs one statement per drawn slice: that was most of its
 * time. It also gives the whole answer one snapshot of a live file. */
int qry_timeline(struct qry_lod *l, const struct qry_window *w, struct qry_buf *out, struct hm_err *err)
{
    bool txn;
    int rc;

    if (w->t1 <= w->t0 || w->px < 1 || w->px > QRY_MAX_PX)
        return hm_err_set(err, HM_EINVAL, NULL, -1, "need t0 < t1 and 1 <= px <= %d", QRY_MAX_PX);
    txn = sqlite3_get_autocommit(l->db) && sqlite3_exec(l->db, "BEGIN", NULL, NULL, NULL) == SQLITE_OK;
    rc = timeline_doc(l, w, out, err);
    if (txn)
        sqlite3_exec(l->db, "COMMIT", NULL, NULL, NULL);
    return rc;
}

/* Cross-rank analyses driver (API in analysis/cross_rank.h): loads what the stages
 * need of each rank from the database being written (or takes the view
 * offline ingest tapped while writing), then runs them in
 * order, each one using what the one before left in the context:
 *   load view -> collect logical collectives -> match instances ->
 *   clock refine / check (may re-time the data) -> clock condition repair ->
 *   wait states and straggler verdicts -> store -> NVTX stitching ->
 *   step breakdown.
 * Nothing here writes slices; re-timing goes through mrg_writer_realign. */
#include "analysis/cross_rank.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <string.h>

#include "analysis/hta.h"
#include "clock_refine.h"
#include "common/record.h"
#include "common/proc_status.h"
#include "common/spill.h"
#include "common/strtab.h"
#include "cross_rank_int.h"
#include "hm_sql.h"
#include "store/columns.h"
#include "match.h"
#include "store/writer.h"
#include "comm_groups.h"
#include "critical_path.h"
#include "rank_activity.h"
#include "memory_peaks.h"
#include "graph_kernels.h"
#include "nvtx_stitch.h"
#include "overlap.h"
#include "step_breakdown.h"
#include "stragglers.h"
#include "common/monotime.h"

/* --- Shared helpers ----------------------------------------------------- */

/* Pages, not bytes: a small rank's four arrays still touch four pages. */
static size_t pages_of(size_t bytes)
{
    return (bytes + 2 * 4096 - 1) / 4096 * 4096;
}

void xr_rank_touched(struct xr_ctx *x, const struct xr_rank *r)
{
    if (x->spill)
        hm_spill_touched(x->spill, pages_of(r->gpu.n * sizeof *r->gpu.v) +
                                       pages_of(r->launches.n * sizeof *r->launches.v) +
                                       pages_of(r->annots.n * sizeof *r->annots.v) +
                                       pages_of(r->nby_corr * sizeof *r->by_corr));
}

void xr_sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
    if (n > 1)
        qsort(base, n, size, cmp);
}

int xr_sql_fail(struct xr_ctx *x, struct hm_err *err, const char *what)
{
    return hm_err_set(err, HM_ESQL, NULL, -1, "%s: %s", what, sqlite3_errmsg(x->db));
}

int xr_prepare(struct xr_ctx *x, const char *sql, sqlite3_stmt **st, struct hm_err *err)
{
    if (sqlite3_prepare_v2(x->db, sql, -1, st, NULL) != SQLITE_OK)
        return xr_sql_fail(x, err, "cross-rank analysis");
    return 0;
}

int xr_exec(struct xr_ctx *x, const char *sql, struct hm_err *err, const char *what)
{
    if (sqlite3_exec(x->db, sql, NULL, NULL, NULL) != SQLITE_OK)
        return xr_sql_fail(x, err, what);
    return 0;
}

void xr_bind_opt(sqlite3_stmt *st, int i, int64_t v)
{
    if (v == HM_NONE)
        sqlite3_bind_null(st, i);
    else
        sqlite3_bind_int64(st, i, v);
}

int64_t xr_col_opt(sqlite3_stmt *st, int col)
{
    return sqlite3_column_type(st, col) == SQLITE_NULL ? HM_NONE : sqlite3_column_int64(st, col);
}

const char *xr_name(const struct xr_ctx *x, int64_t id)
{
    size_t len;
    const char *s = id > 0 ? hm_strtab_get(x->names, (hm_strid)id, &len) : NULL;
    return s ? s : "";
}

int64_t xr_intern(struct xr_ctx *x, const char *s)
{
    hm_strid id = hm_strtab_intern_cstr(x->names, s);
    return id == UINT32_MAX ? 0 : (int64_t)id;
}

/* Grows the per-string caches to hold id. 0 or HM_ENOMEM. */
static int str_reserve(struct xr_ctx *x, int64_t id)
{
    size_t n = x->nstr, need = (size_t)id + 1;
    char **s;
    signed char *k;
    unsigned char *a;

    if (need <= n)
        return 0;
    need = need < 2 * n ? 2 * n : need + 64;
    s = realloc(x->str, need * sizeof *s);
    if (s)
        x->str = s;
    k = realloc(x->kcls, need);
    if (k)
        x->kcls = k;
    a = realloc(x->aflags, need);
    if (a)
        x->aflags = a;
    if (!s || !k || !a)
        return HM_ENOMEM;
    memset(s + n, 0, (need - n) * sizeof *s);
    memset(k + n, -1, need - n);
    memset(a + n, 0, need - n);
    x->nstr = need;
    return 0;
}

#define STR_COLUMNS(X) X(STR_TEXT, "str")
enum { STR_COLUMNS(HM_COLUMN_ENUM) STR__COUNT };
static const char *const str_names[] = {STR_COLUMNS(HM_COLUMN_NAME)};

const char *xr_str(struct xr_ctx *x, int64_t id)
{
    const unsigned char *t;

    if (id <= 0 || str_reserve(x, id))
        return "";
    if (x->str[id])
        return x->str[id];
    if (!x->str_st) {
        if (sqlite3_prepare_v2(x->db, "SELECT str FROM strings WHERE id = ?1", -1, &x->str_st, NULL))
            return "";
        HM_COLUMNS_CHECK(x->str_st, str_names);
    }
    sqlite3_bind_int64(x->str_st, 1, id);
    t = sqlite3_step(x->str_st) == SQLITE_ROW ? sqlite3_column_text(x->str_st, STR_TEXT) : NULL;
    x->str[id] = strdup(t ? (const char *)t : "");
    sqlite3_reset(x->str_st);
    return x->str[id] ? x->str[id] : "";
}

static int kclass_of(struct xr_ctx *x, int64_t id)
{
    if (id <= 0 || str_reserve(x, id))
        return XR_COMP;
    if (x->kcls[id] < 0) {
        enum an_kclass k = an_kclass_of(xr_str(x, id));
        x->kcls[id] = (signed char)(k == AN_KCLASS_COMM ? XR_COMM : k == AN_KCLASS_MEMORY ? XR_MEM
                                                                                      : XR_COMP);
    }
    return x->kcls[id];
}

/* Case-insensitive: does s equal one of the words (NULL-terminated)? */
static int is_word(const char *s, const char *const *words)
{
    for (int i = 0; words[i]; i++)
        if (!strcasecmp(s, words[i]))
            return 1;
    return 0;
}

/* Phase names users give their record_function / NVTX ranges. */
static unsigned phase_of(const char *s)
{
    static const char *const fwd[] = {"forward", "fwd", "forward_pass", "model_forward", "forward_step", NULL};
    static const char *const bwd[] = {"backward", "bwd", "backward_pass", "loss_backward", "backward_step", NULL};
    static const char *const opt[] = {"optimizer", "optimizer_step", "opt_step", "optimizer.step", "optim",
                                      "opt", "optimizer_update", "step_optimizer", NULL};

    if (is_word(s, fwd))
        return XR_A_FWD;
    if (is_word(s, bwd))
        return XR_A_BWD;
    if (is_word(s, opt) || !strncmp(s, "Optimizer.step#", 15))
        return XR_A_OPT;
    return 0;
}

unsigned xr_str_aflags(struct xr_ctx *x, int64_t id)
{
    const char *s;
    unsigned f = XR_A_KNOWN;

    if (id <= 0 || str_reserve(x, id))
        return XR_A_KNOWN;
    if (x->aflags[id])
        return x->aflags[id];
    s = xr_str(x, id);
    if (!strncmp(s, "ProfilerStep#", 13))
        f |= XR_A_STEP;
    else if (!strncmp(s, "gloo:", 5) || !strncmp(s, "nccl:", 5))
        f |= XR_A_COLL;
    else
        f |= phase_of(s);
    x->aflags[id] = (unsigned char)f;
    return f;
}

/* --- The rank view --------------------------------------------------------- */

static struct xr_rank *rank_at(struct xr_ctx *x, int64_t rank)
{
    return rank >= 0 && rank < x->nranks ? &x->ranks[rank] : NULL;
}

/* The one column of load_ranks' two queries. */
#define RANK_COLUMNS(X) X(RC_RANK, "rank")
enum { RANK_COLUMNS(HM_COLUMN_ENUM) RC__COUNT };
static const char *const rank_names[] = {RANK_COLUMNS(HM_COLUMN_NAME)};

static int load_ranks(struct xr_ctx *x, struct hm_err *err)
{
    sqlite3_stmt *st = NULL;
    int rc = xr_prepare(x, "SELECT max(rank) AS rank FROM ranks", &st, err);

    if (rc)
        return rc;
    HM_COLUMNS_CHECK(st, rank_names);
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, RC_RANK) != SQLITE_NULL)
        x->nranks = sqlite3_column_int(st, RC_RANK) + 1;
    sqlite3_finalize(st);
    if (x->nranks <= 0)
        return 0;
    x->ranks = calloc((size_t)x->nranks, sizeof *x->ranks);
    x->clock = calloc((size_t)x->nranks, sizeof *x->clock);
    if (!x->ranks || !x->clock)
        return hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");
    for (int r = 0; r < x->nranks; r++)
        x->ranks[r].rank = r;
    if ((rc = xr_prepare(x, "SELECT rank FROM ranks", &st, err)))
        return rc;
    HM_COLUMNS_CHECK(st, rank_names);
    while (sqlite3_step(st) == SQLITE_ROW)
        x->ranks[sqlite3_column_int(st, RC_RANK)].present = 1;
    sqlite3_finalize(st);
    return 0;
}

/* The columns of xrank_view.sql. */
#define VIEW_COLUMNS(X)                                                                          \
    X(VC_RANK, "rank") X(VC_ID, "id") X(VC_TRACK, "track") X(VC_GPU, "gpu") X(VC_CAT, "cat")      \
    X(VC_TS, "ts") X(VC_END, "end_ts") X(VC_CORRELATION, "correlation") X(VC_NAME, "name")        \
    X(VC_ITERATION, "iteration")
enum { VIEW_COLUMNS(HM_COLUMN_ENUM) VC__COUNT };
static const char *const view_names[] = {VIEW_COLUMNS(HM_COLUMN_NAME)};

/* Adds one slice row of the view query to its rank. */
static int view_row(struct xr_ctx *x, sqlite3_stmt *st)
{
    struct xr_rank *r = rank_at(x, sqlite3_column_int64(st, VC_RANK));
    int cat = sqlite3_column_int(st, VC_CAT), gpu = sqlite3_column_int(st, VC_GPU);
    int64_t ts = sqlite3_column_int64(st, VC_TS), end = sqlite3_column_int64(st, VC_END);

    if (!r)
        return 0;
    if (gpu && (cat == HM_CAT_KERNEL || cat == HM_CAT_GPU_MEMCPY || cat == HM_CAT_GPU_MEMSET)) {
        struct xr_gpu *g = HM_VEC_PUSH(r->gpu);
        int64_t name = cat == HM_CAT_KERNEL ? sqlite3_column_int64(st, VC_NAME) : 0;
        if (!g)
            return HM_ENOMEM;
        *g = (struct xr_gpu){ts, end, xr_col_opt(st, VC_CORRELATION), name,
                             cat == HM_CAT_KERNEL ? kclass_of(x, name) : XR_MEM, 0};
    } else if (!gpu && (cat == HM_CAT_CUDA_RUNTIME || cat == HM_CAT_CUDA_DRIVER)) {
        struct xr_launch *l;
        if (sqlite3_column_type(st, VC_CORRELATION) == SQLITE_NULL)
            return 0;
        if (!(l = HM_VEC_PUSH(r->launches)))
            return HM_ENOMEM;
        *l = (struct xr_launch){ts, sqlite3_column_int64(st, VC_CORRELATION), sqlite3_column_int64(st, VC_TRACK)};
    } else if (!gpu && cat == HM_CAT_CUDA_GRAPH) {
        r->graph_events++;
    } else if (!gpu && (cat == HM_CAT_USER_ANNOTATION || cat == HM_CAT_NVTX)) {
        struct xr_annot *a = HM_VEC_PUSH(r->annots);
        if (!a)
            return HM_ENOMEM;
        *a = (struct xr_annot){sqlite3_column_int64(st, VC_ID), ts, end, sqlite3_column_int64(st, VC_TRACK),
                               xr_col_opt(st, VC_NAME), xr_col_opt(st, VC_ITERATION)};
    }
    return 0;
}

struct hm_spill *xr_view_spill_for(const char *db_path)
{
    char dir[4096];
    const char *slash = db_path ? strrchr(db_path, '/') : NULL;

    if (!slash)
        return hm_spill_new(".");
    snprintf(dir, sizeof dir, "%.*s", slash == db_path ? 1 : (int)(slash - db_path), db_path);
    return hm_spill_new(dir);
}

/* A new slot at the end of a view array, in the spill arena when there is
 * one (its pages count towards the arena's resident budget), else malloc. */
static void *view_slot(struct hm_spill *sp, void **data, size_t *n, size_t *cap, size_t elem)
{
    char *slot;

    if (!sp)
        return hm_vec_reserve(data, cap, *n + 1, elem) ? NULL
                                                       : memset((char *)*data + (*n)++ * elem, 0, elem);
    if (hm_spill_reserve(sp, data, cap, *n, *n + 1, elem))
        return NULL;
    slot = (char *)*data + (*n)++ * elem;
    hm_spill_touched(sp, elem);
    return slot;
}
#define VIEW_PUSH(sp, vec) \
    view_slot((sp), (void **)&(vec).v, &(vec).n, &(vec).cap, sizeof *(vec).v)

/* view_row's choice, made on a row as the writer stores it. */
void xr_view_tap(void *ctx, const struct mrg_slice_row *row)
{
    struct xr_view *v = ctx;
    struct xr_rank *r;
    int cat = row->cat;
    int64_t end;

    if (v->broken || row->rank < 0)
        return;
    if (row->rank >= v->nranks) {
        int n = row->rank + 8;
        struct xr_rank *k = realloc(v->ranks, (size_t)n * sizeof *k);
        if (!k) {
            v->broken = 1;
            return;
        }
        memset(k + v->nranks, 0, (size_t)(n - v->nranks) * sizeof *k);
        v->ranks = k;
        v->nranks = n;
    }
    r = &v->ranks[row->rank];
    /* SQLite gives an overflowing ts + dur as a REAL: leave that to it. */
    if (__builtin_add_overflow(row->ts, row->dur, &end)) {
        v->broken = 1;
        return;
    }
    if (row->gpu && (cat == HM_CAT_KERNEL || cat == HM_CAT_GPU_MEMCPY || cat == HM_CAT_GPU_MEMSET)) {
        struct xr_gpu *g = VIEW_PUSH(v->spill, r->gpu);
        if (g)
            *g = (struct xr_gpu){row->ts, end, row->correlation,
                                 cat == HM_CAT_KERNEL ? row->name : 0,
                                 cat == HM_CAT_KERNEL ? -1 : XR_MEM, 0};
        v->broken |= !g;
    } else if (!row->gpu && (cat == HM_CAT_CUDA_RUNTIME || cat == HM_CAT_CUDA_DRIVER)) {
        struct xr_launch *l;
        if (row->correlation == HM_NONE)
            return;
        l = VIEW_PUSH(v->spill, r->launches);
        if (l)
            *l = (struct xr_launch){row->ts, row->correlation, row->track};
        v->broken |= !l;
    } else if (!row->gpu && cat == HM_CAT_CUDA_GRAPH) {
        r->graph_events++;
    } else if (!row->gpu && (cat == HM_CAT_USER_ANNOTATION || cat == HM_CAT_NVTX)) {
        struct xr_annot *a = VIEW_PUSH(v->spill, r->annots);
        if (a)
            *a = (struct xr_annot){row->id, row->ts, end, row->track,
                                   row->name ? row->name : HM_NONE, row->iteration};
        v->broken |= !a;
    }
}

void xr_view_free(struct xr_view *v)
{
    if (!v)
        return;
    for (int i = 0; i < v->nranks && !v->spill; i++) {
        HM_VEC_FREE(v->ranks[i].gpu);
        HM_VEC_FREE(v->ranks[i].launches);
        HM_VEC_FREE(v->ranks[i].annots);
    }
    hm_spill_free(v->spill);
    free(v->ranks);
    *v = (struct xr_view){0};
}

/* Moves the tapped view into x (what the view query would have loaded). */
static void adopt_view(struct xr_ctx *x)
{
    struct xr_view *v = x->view;

    x->spill = v->spill;   /* the arrays move, their arena with them */
    v->spill = NULL;
    for (int i = x->nranks; i < v->nranks && x->spill; i++) {   /* ranks without a ranks row */
        struct xr_rank *k = &v->ranks[i];
        memset(&k->gpu, 0, sizeof k->gpu);
        memset(&k->launches, 0, sizeof k->launches);
        memset(&k->annots, 0, sizeof k->annots);
    }
    for (int i = 0; i < v->nranks && i < x->nranks; i++) {
        struct xr_rank *r = &x->ranks[i], *k = &v->ranks[i];
        r->gpu = k->gpu;
        r->launches = k->launches;
        r->annots = k->annots;
        r->graph_events = k->graph_events;
        memset(&k->gpu, 0, sizeof k->gpu);
        memset(&k->launches, 0, sizeof k->launches);
        memset(&k->annots, 0, sizeof k->annots);
        for (size_t g = 0; g < r->gpu.n; g++)
            if (r->gpu.v[g].kclass < 0)
                r->gpu.v[g].kclass = kclass_of(x, r->gpu.v[g].name);
        xr_rank_touched(x, r);
    }
}

static int cmp_gpu(const void *pa, const void *pb)
{
    const struct xr_gpu *a = pa, *b = pb;
    return a->ts != b->ts ? (a->ts < b->ts ? -1 : 1) : (a->end > b->end) - (a->end < b->end);
}

static int cmp_launch(const void *pa, const void *pb)
{
    const struct xr_launch *a = pa, *b = pb;
    if (a->track != b->track)
        return a->track < b->track ? -1 : 1;
    return (a->ts > b->ts) - (a->ts < b->ts);
}

/* Annotations by (track, start, longer first): parents before children. */
static int cmp_annot(const void *pa, const void *pb)
{
    const struct xr_annot *a = pa, *b = pb;
    if (a->track != b->track)
        return a->track < b->track ? -1 : 1;
    if (a->ts != b->ts)
        return a->ts < b->ts ? -1 : 1;
    if (a->end != b->end)
        return a->end > b->end ? -1 : 1;
    return (a->id > b->id) - (a->id < b->id);
}

static const struct xr_gpu *corr_base;

static int cmp_corr(const void *pa, const void *pb)
{
    int64_t a = corr_base[*(const size_t *)pa].corr, b = corr_base[*(const size_t *)pb].corr;
    return (a > b) - (a < b);
}

/* Indexes the rank's GPU ops by correlation (qsort needs the array through
 * a file-scope pointer, set and used only here). */
static int index_corr(struct xr_ctx *x, struct xr_rank *r)
{
    size_t n = 0, bytes = (r->gpu.n ? r->gpu.n : 1) * sizeof *r->by_corr;

    r->by_corr = x->spill ? hm_spill_alloc(x->spill, bytes) : malloc(bytes);
    if (!r->by_corr)
        return HM_ENOMEM;
    for (size_t i = 0; i < r->gpu.n; i++)
        if (r->gpu.v[i].corr != HM_NONE)
            r->by_corr[n++] = i;
    corr_base = r->gpu.v;
    xr_sort(r->by_corr, n, sizeof *r->by_corr, cmp_corr);
    r->nby_corr = n;
    return 0;
}

void xr_gpu_by_corr(const struct xr_rank *r, int64_t corr, size_t *lo, size_t *hi)
{
    size_t a = 0, b = r->nby_corr;

    while (a < b) {
        size_t m = (a + b) / 2;
        if (r->gpu.v[r->by_corr[m]].corr < corr)
            a = m + 1;
        else
            b = m;
    }
    *lo = a;
    while (a < r->nby_corr && r->gpu.v[r->by_corr[a]].corr == corr)
        a++;
    *hi = a;
}

void xr_launch_range(const struct xr_rank *r, int64_t track, int64_t a, int64_t b, size_t *lo,
                     size_t *hi)
{
    size_t l = 0, h = r->launches.n;

    while (l < h) {
        size_t m = (l + h) / 2;
        const struct xr_launch *x = &r->launches.v[m];
        if (x->track < track || (x->track == track && x->ts < a))
            l = m + 1;
        else
            h = m;
    }
    *lo = l;
    while (l < r->launches.n && r->launches.v[l].track == track && r->launches.v[l].ts <= b)
        l++;
    *hi = l;
}

/* The columns of xrank_steps.sql. */
#define STEP_COLUMNS(X)                                                                          \
    X(SC_RANK, "rank") X(SC_NUMBER, "number") X(SC_TS, "ts") X(SC_END, "end_ts") X(SC_DROPPED, "dropped")
enum { STEP_COLUMNS(HM_COLUMN_ENUM) SC__COUNT };
static const char *const step_names[] = {STEP_COLUMNS(HM_COLUMN_NAME)};

static int load_steps(struct xr_ctx *x, struct hm_err *err)
{
    sqlite3_stmt *st = NULL;
    int rc = xr_prepare(x, hm_sql_xrank_steps, &st, err);

    if (rc == 0)
        HM_COLUMNS_CHECK(st, step_names);
    while (rc == 0 && sqlite3_step(st) == SQLITE_ROW) {
        struct xr_rank *r = rank_at(x, sqlite3_column_int64(st, SC_RANK));
        struct xr_step *s;
        if (!r)
            continue;
        if (!(s = HM_VEC_PUSH(r->steps)))
            rc = hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");
        else
            *s = (struct xr_step){sqlite3_column_int64(st, SC_NUMBER), sqlite3_column_int64(st, SC_TS),
                                  sqlite3_column_int64(st, SC_END), sqlite3_column_int(st, SC_DROPPED)};
    }
    sqlite3_finalize(st);
    return rc;
}

/* One scan of the slices for GPU ops, launches and annotations. */
static int load_view(struct xr_ctx *x, struct hm_err *err)
{
    sqlite3_stmt *st = NULL;
    int rc, s;

    if (x->view && !x->view->broken) {
        adopt_view(x);
    } else {
        if ((rc = xr_prepare(x, hm_sql_xrank_view, &st, err)))
            return rc;
        HM_COLUMNS_CHECK(st, view_names);
        while ((s = sqlite3_step(st)) == SQLITE_ROW)
            if (view_row(x, st)) {
                sqlite3_finalize(st);
                return hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory loading the ranks");
            }
        sqlite3_finalize(st);
        if (s != SQLITE_DONE)
            return xr_sql_fail(x, err, "loading the ranks");
    }
    for (int i = 0; i < x->nranks; i++) {
        struct xr_rank *r = &x->ranks[i];
        xr_sort(r->gpu.v, r->gpu.n, sizeof *r->gpu.v, cmp_gpu);
        xr_sort(r->launches.v, r->launches.n, sizeof *r->launches.v, cmp_launch);
        xr_sort(r->annots.v, r->annots.n, sizeof *r->annots.v, cmp_annot);
        if (index_corr(x, r))
            return hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");
        xr_rank_touched(x, r);
    }
    return load_steps(x, err);
}

static void ctx_free(struct xr_ctx *x)
{
    for (int i = 0; i < x->nranks; i++) {
        if (!x->spill) {
            HM_VEC_FREE(x->ranks[i].gpu);
            HM_VEC_FREE(x->ranks[i].launches);
            HM_VEC_FREE(x->ranks[i].annots);
            free(x->ranks[i].by_corr);
        }
        HM_VEC_FREE(x->ranks[i].steps);
    }
    hm_spill_free(x->spill);
    for (size_t i = 0; i < x->nstr; i++)
        free(x->str[i]);
    free(x->str);
    free(x->kcls);
    free(x->aflags);
    sqlite3_finalize(x->str_st);
    free(x->ranks);
    free(x->clock);
    HM_VEC_FREE(x->coll);
    HM_VEC_FREE(x->inst);
    HM_VEC_FREE(x->members);
    hm_strtab_free(x->names);
}

/* Takes the writer's guessed shifts out of what was loaded, so that the
 * stages see each rank's times as written without a guess and decide
 * exactly as they would then (a uniform shift per rank keeps every
 * within-rank order the loads and the grouping of collectives rely on);
 * the re-timing at the end of clock refinement settles the rows. */
static int unshift_guesses(struct xr_ctx *x, const struct mrg_writer *w)
{
    for (int i = 0; i < x->nranks; i++) {
        struct xr_rank *r = &x->ranks[i];
        int64_t d = mrg_writer_time_shift(w, i);
        if (d == 0)
            continue;
        for (size_t k = 0; k < r->gpu.n; k++) {
            r->gpu.v[k].ts -= d;
            r->gpu.v[k].end -= d;
        }
        for (size_t k = 0; k < r->launches.n; k++)
            r->launches.v[k].ts -= d;
        for (size_t k = 0; k < r->annots.n; k++) {
            r->annots.v[k].ts -= d;
            r->annots.v[k].end -= d;
        }
        for (size_t k = 0; k < r->steps.n; k++) {
            r->steps.v[k].ts -= d;
            r->steps.v[k].end -= d;
        }
        xr_rank_touched(x, r);
    }
    for (size_t k = 0; k < x->coll.n; k++) {   /* one pass: a scan per rank grew with ranks x calls */
        int64_t d = mrg_writer_time_shift(w, x->coll.v[k].rank);
        x->coll.v[k].enter -= d;
        x->coll.v[k].exit -= d;
    }
    return 0;
}

/* HTAMERGE_STATS=1 prints each stage's time and the peak RSS so far (for
 * the benchmarks). */
#define STAGE(call)                                                                       \
    do {                                                                                  \
        double t0_ = hm_mono_s();                                                         \
        if (rc == 0)                                                                      \
            rc = (call);                                                                  \
        hm_spill_release(x->spill);   /* the next stage faults back what it reads */      \
        if (stats)                                                                        \
            fprintf(stderr, "htamerge-stats: cross-rank %-22s %.3f s, peak RSS %ld MB\n", #call, \
                    hm_mono_s() - t0_, hm_proc_status_kb("VmHWM") / 1024);                                     \
    } while (0)

/* Stitched NVTX rows, at most one per annotation, are the one output that
 * can run to millions; copied from the scratch database at ~1 us a row,
 * past this many they would cost more than the index beside them saves
 * (1.4 s at 64 ranks), so stitching waits for the index instead. */
#define XR_OVERLAP_MAX_ANNOTS 200000

static size_t annotations(const struct xr_ctx *x)
{
    size_t n = 0;

    for (int r = 0; r < x->nranks; r++)
        n += x->ranks[r].annots.n;
    return n;
}

static int any_graph_events(const struct xr_ctx *x)
{
    for (int r = 0; r < x->nranks; r++)
        if (x->ranks[r].graph_events)
            return 1;
    return 0;
}

static int run_stages(struct xr_ctx *x, struct mrg_writer *w, struct hm_err *err)
{
    int rc = 0, stats = getenv("HTAMERGE_STATS") != NULL;

    /* A view tapped while writing means a fresh ingest: build the slice
     * index beside the analyses, which then read copies (overlap.c). */
    if (x->view && !x->view->broken)
        xr_overlap_begin(x, w);
    STAGE(load_ranks(x, err));
    if (x->nranks > 0)
        STAGE(load_view(x, err));
    STAGE(xr_match_collect(x, err));
    STAGE(unshift_guesses(x, w));
    STAGE(xr_match_build(x, err));
    STAGE(xr_clock_refine(x, w, err));
    STAGE(xr_clock_condition(x, err));
    STAGE(xr_stragglers_judge(x, err));
    STAGE(xr_match_store(x, err));
    STAGE(xr_stragglers_store(x, err));
    STAGE(xr_clock_store(x, err));
    if (any_graph_events(x))   /* their queries read the slices themselves */
        STAGE(xr_overlap_end(x, rc, err));
    STAGE(xr_graph_kernels(x, err));   /* before the stages that charge GPU time to phases */
    if (annotations(x) > XR_OVERLAP_MAX_ANNOTS)
        STAGE(xr_overlap_end(x, rc, err));
    STAGE(xr_nvtx_stitch(x, err));
    STAGE(xr_step_breakdown(x, err));
    STAGE(xr_comm_groups(x, err));
    STAGE(xr_critical_path(x, err));
    STAGE(xr_rank_activity(x, err));
    STAGE(xr_overlap_end(x, rc, err));   /* memory samples are counters, not copied */
    STAGE(xr_memory_peaks(x, err));
    return rc;
}

int xr_finish(struct mrg_writer *w, const struct xr_opts *opts, struct hm_err *err)
{
    return xr_finish_view(w, opts, NULL, err);
}

int xr_finish_view(struct mrg_writer *w, const struct xr_opts *opts, struct xr_view *view,
                   struct hm_err *err)
{
    struct xr_ctx x = {.view = view};
    int rc = mrg_writer_flush(w, err);

    if (rc)
        return rc;
    x.db = mrg_writer_db(w);
    x.live = opts && opts->live;
    x.no_refine = opts && opts->no_refine;
    x.names = hm_strtab_new();
    if (!x.names)
        return hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");
    rc = run_stages(&x, w, err);
    rc = xr_overlap_end(&x, rc, err);   /* on every path: joins the index's thread */
    ctx_free(&x);
    if (rc)
        hm_err_prefix(err, "cross-rank analysis");
    return rc;
}

/* Members before their instances and stitched ranges, in case a reader
 * adds foreign keys later. */
int xr_clear(struct mrg_writer *w, struct hm_err *err)
{
    static const char *const tables[] = {"collective_instance_ranks", "collective_instances",
                                         "clock_checks", "straggler_verdicts",
                                         "nvtx_stitched_ranks", "nvtx_stitched", "step_breakdown",
                                         "comm_exposed", "process_groups", "critical_path",
                                         "rank_activity", "memory_peaks", "graph_kernels"};
    char sql[64];

    for (size_t i = 0; i < sizeof tables / sizeof *tables; i++) {
        snprintf(sql, sizeof sql, "DELETE FROM %s", tables[i]);
        if (sqlite3_exec(mrg_writer_db(w), sql, NULL, NULL, NULL) != SQLITE_OK)
            return hm_err_set(err, HM_ESQL, NULL, -1, "clearing %s: %s", tables[i],
                              sqlite3_errmsg(mrg_writer_db(w)));
    }
    return 0;
}

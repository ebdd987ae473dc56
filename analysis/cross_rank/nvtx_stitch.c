/* NVTX / annotation stitching (key and GPU projection in nvtx_stitch.h).
 * Per rank: a stack sweep over each thread's ranges gives each range its
 * path; ranges are numbered within (step, path). Then all ranks' ranges
 * are sorted by key and each run of equal keys is one stitched range. */
#include "nvtx_stitch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/record.h"
#include "hm_sql.h"

#define PATH_MAX_LEN 1024
#define STACK_MAX 256

struct rec {
    int64_t path;        /* id in x->names */
    int64_t step, occ;
    int64_t name, slice, ts, end;
    int64_t gpu_ns, gpu_ops, gpu_start, gpu_end;
    int rank;
};

typedef HM_VEC(struct rec) rec_vec;

/* Launches made on other threads while no range of their own thread is
 * open, by time. PyTorch's autograd engine launches backward's kernels
 * from its own thread while the main thread's "backward" range is open;
 * Nsight Systems' per-thread projection gives that range no GPU time.
 * These launches count for the ranges of the rank's main annotated thread
 * (the one with the most ranges) open when they were made. */
struct orphans {
    struct xr_launch *v;   /* owned */
    size_t n;
    int64_t main_track;    /* HM_NONE when the rank has no ranges */
};

struct span {
    int64_t track, ts, end;
};

static int cmp_span(const void *pa, const void *pb)
{
    const struct span *a = pa, *b = pb;
    if (a->track != b->track)
        return a->track < b->track ? -1 : 1;
    return (a->ts > b->ts) - (a->ts < b->ts);
}

static int cmp_launch_ts(const void *pa, const void *pb)
{
    const struct xr_launch *a = pa, *b = pb;
    return (a->ts > b->ts) - (a->ts < b->ts);
}

/* Whether some range of track covers ts; u[0, n) are disjoint unions of
 * ranges sorted by (track, ts). */
static int covered(const struct span *u, size_t n, int64_t track, int64_t ts)
{
    size_t lo = 0, hi = n;

    while (lo < hi) {   /* first span after (track, ts) */
        size_t m = lo + (hi - lo) / 2;
        if (u[m].track < track || (u[m].track == track && u[m].ts <= ts))
            lo = m + 1;
        else
            hi = m;
    }
    return lo > 0 && u[lo - 1].track == track && u[lo - 1].end >= ts;
}

static int find_orphans(const struct xr_rank *k, struct orphans *o)
{
    struct span *u = malloc((k->annots.n + 1) * sizeof *u);
    size_t nu = 0, best = 0, run = 0;

    o->v = malloc((k->launches.n + 1) * sizeof *o->v);
    o->n = 0;
    o->main_track = HM_NONE;
    if (!u || !o->v) {
        free(u);
        free(o->v);
        o->v = NULL;
        return HM_ENOMEM;
    }
    for (size_t i = 0; i < k->annots.n; i++)
        u[i] = (struct span){k->annots.v[i].track, k->annots.v[i].ts, k->annots.v[i].end};
    xr_sort(u, k->annots.n, sizeof *u, cmp_span);
    for (size_t i = 0; i < k->annots.n; i++) {   /* the busiest track, then the unions */
        run = i && u[i].track == u[i - 1].track ? run + 1 : 1;
        if (run > best)
            best = run, o->main_track = u[i].track;
    }
    for (size_t i = 0; i < k->annots.n; i++) {
        if (nu && u[nu - 1].track == u[i].track && u[i].ts <= u[nu - 1].end) {
            if (u[i].end > u[nu - 1].end)
                u[nu - 1].end = u[i].end;
        } else {
            u[nu++] = u[i];
        }
    }
    for (size_t i = 0; o->main_track != HM_NONE && i < k->launches.n; i++) {
        const struct xr_launch *l = &k->launches.v[i];
        if (l->track != o->main_track && !covered(u, nu, l->track, l->ts))
            o->v[o->n++] = *l;
    }
    xr_sort(o->v, o->n, sizeof *o->v, cmp_launch_ts);
    free(u);
    return 0;
}

static void add_launch(const struct xr_rank *k, int64_t corr, struct rec *out)
{
    size_t ga, gb;

    xr_gpu_by_corr(k, corr, &ga, &gb);
    for (size_t g = ga; g < gb; g++) {
        const struct xr_gpu *op = &k->gpu.v[k->by_corr[g]];
        out->gpu_ns += op->end - op->ts;
        out->gpu_ops++;
        if (out->gpu_start == HM_NONE || op->ts < out->gpu_start)
            out->gpu_start = op->ts;
        if (out->gpu_end == HM_NONE || op->end > out->gpu_end)
            out->gpu_end = op->end;
    }
}

/* GPU projection of one range of rank k: the GPU work of the launches made
 * inside it on its thread, and on the main thread also the orphans'. */
static void project(const struct xr_rank *k, const struct orphans *o, const struct xr_annot *a,
                    struct rec *out)
{
    size_t lo, hi;

    out->gpu_start = out->gpu_end = HM_NONE;
    xr_launch_range(k, a->track, a->ts, a->end, &lo, &hi);
    for (size_t i = lo; i < hi; i++)
        add_launch(k, k->launches.v[i].corr, out);
    if (a->track != o->main_track)
        return;
    lo = 0, hi = o->n;
    while (lo < hi) {   /* first orphan launched at or after the range's start */
        size_t m = lo + (hi - lo) / 2;
        if (o->v[m].ts < a->ts)
            lo = m + 1;
        else
            hi = m;
    }
    for (size_t i = lo; i < o->n && o->v[i].ts <= a->end; i++)
        add_launch(k, o->v[i].corr, out);
}

/* Builds the path of a given the open ranges (their names) in buf. */
static void make_path(struct xr_ctx *x, const int64_t *open, int depth, int64_t name, char *buf)
{
    size_t n = 0;

    buf[0] = '\0';
    for (int i = 0; i <= depth; i++) {
        const char *s = xr_str(x, i < depth ? open[i] : name);
        int w = snprintf(buf + n, PATH_MAX_LEN - n, "%s%s", n ? "/" : "", s);
        if (w < 0 || (size_t)w >= PATH_MAX_LEN - n)
            break;
        n += (size_t)w;
    }
}

/* One rank's ranges with their paths (occurrences come later). */
static int rank_records(struct xr_ctx *x, const struct xr_rank *k, rec_vec *out)
{
    int64_t open_name[STACK_MAX], open_end[STACK_MAX], track = HM_NONE;
    int depth = 0;
    char path[PATH_MAX_LEN];
    struct orphans o;

    if (find_orphans(k, &o))
        return HM_ENOMEM;

    for (size_t i = 0; i < k->annots.n; i++) {
        const struct xr_annot *a = &k->annots.v[i];
        unsigned f = xr_str_aflags(x, a->name);
        struct rec *r;
        if (a->track != track)
            depth = 0, track = a->track;
        while (depth > 0 && !(a->ts < open_end[depth - 1] && a->end <= open_end[depth - 1]))
            depth--;
        if (f & (XR_A_STEP | XR_A_COLL))
            continue;
        make_path(x, open_name, depth, a->name, path);
        if (!(r = HM_VEC_PUSH(*out))) {
            free(o.v);
            return HM_ENOMEM;
        }
        *r = (struct rec){.path = xr_intern(x, path), .step = a->iteration, .name = a->name,
                          .slice = a->id, .ts = a->ts, .end = a->end, .rank = k->rank};
        if (!r->path) {
            free(o.v);
            return HM_ENOMEM;
        }
        project(k, &o, a, r);
        if (depth < STACK_MAX) {
            open_name[depth] = a->name;
            open_end[depth++] = a->end;
        }
    }
    free(o.v);
    return 0;
}

static int cmp_rec(const void *pa, const void *pb)
{
    const struct rec *a = pa, *b = pb;
    if (a->path != b->path)
        return a->path < b->path ? -1 : 1;
    if (a->step != b->step)
        return a->step < b->step ? -1 : 1;
    if (a->rank != b->rank)
        return a->rank < b->rank ? -1 : 1;
    return (a->ts > b->ts) - (a->ts < b->ts);
}

static int cmp_key(const void *pa, const void *pb)
{
    const struct rec *a = pa, *b = pb;
    if (a->path != b->path)
        return a->path < b->path ? -1 : 1;
    if (a->step != b->step)
        return a->step < b->step ? -1 : 1;
    if (a->occ != b->occ)
        return a->occ < b->occ ? -1 : 1;
    return a->rank - b->rank;
}

/* Numbers each (path, step, rank)'s ranges by start. */
static void number(rec_vec *v)
{
    xr_sort(v->v, v->n, sizeof *v->v, cmp_rec);
    for (size_t i = 0; i < v->n; i++) {
        const struct rec *p = i ? &v->v[i - 1] : NULL;
        struct rec *r = &v->v[i];
        r->occ = p && p->path == r->path && p->step == r->step && p->rank == r->rank ? p->occ + 1 : 0;
    }
    xr_sort(v->v, v->n, sizeof *v->v, cmp_key);
}

static int store_group(struct xr_ctx *x, sqlite3_stmt *sg, sqlite3_stmt *sm, const struct rec *g,
                       size_t n)
{
    int64_t first = INT64_MAX, last = INT64_MIN, mn = INT64_MAX, mx = INT64_MIN, gns = 0, gops = 0;
    int late = -1, rc;

    for (size_t i = 0; i < n; i++) {
        first = g[i].ts < first ? g[i].ts : first;
        if (g[i].ts > last)
            last = g[i].ts, late = g[i].rank;
        mn = g[i].end < mn ? g[i].end : mn;
        mx = g[i].end > mx ? g[i].end : mx;
        gns += g[i].gpu_ns;
        gops += g[i].gpu_ops;
    }
    if (n < 2 || first == last)
        late = -1;
    sqlite3_bind_int64(sg, 1, g->name);
    sqlite3_bind_text(sg, 2, xr_name(x, g->path), -1, SQLITE_TRANSIENT);
    xr_bind_opt(sg, 3, g->step);
    sqlite3_bind_int64(sg, 4, g->occ);
    sqlite3_bind_int64(sg, 5, (int64_t)n);
    sqlite3_bind_int64(sg, 6, first);
    sqlite3_bind_int64(sg, 7, last);
    xr_bind_opt(sg, 8, late >= 0 ? late : HM_NONE);
    sqlite3_bind_int64(sg, 9, last - first);
    sqlite3_bind_int64(sg, 10, mn);
    sqlite3_bind_int64(sg, 11, mx);
    sqlite3_bind_int64(sg, 12, gns);
    sqlite3_bind_int64(sg, 13, gops);
    rc = sqlite3_step(sg);
    sqlite3_reset(sg);
    /* Taken once: after the first member row, last_insert_rowid is that
     * row's rowid in nvtx_stitched_ranks, no longer the range's id. */
    int64_t id = sqlite3_last_insert_rowid(x->db);
    for (size_t i = 0; rc == SQLITE_DONE && i < n; i++) {
        sqlite3_bind_int64(sm, 1, id);
        sqlite3_bind_int(sm, 2, g[i].rank);
        sqlite3_bind_int64(sm, 3, g[i].slice);
        sqlite3_bind_int64(sm, 4, g[i].ts);
        sqlite3_bind_int64(sm, 5, g[i].end);
        xr_bind_opt(sm, 6, g[i].gpu_start);
        xr_bind_opt(sm, 7, g[i].gpu_end);
        sqlite3_bind_int64(sm, 8, g[i].gpu_ns);
        sqlite3_bind_int64(sm, 9, g[i].gpu_ops);
        rc = sqlite3_step(sm);
        sqlite3_reset(sm);
    }
    return rc == SQLITE_DONE ? 0 : -1;
}

static int store_all(struct xr_ctx *x, const rec_vec *v, struct hm_err *err)
{
    sqlite3_stmt *sg = NULL, *sm = NULL;
    int rc = xr_prepare(x, hm_sql_xrank_insert_nvtx, &sg, err);
    size_t lo = 0;

    if (rc == 0)
        rc = xr_prepare(x, hm_sql_xrank_insert_nvtx_rank, &sm, err);
    for (size_t i = 1; rc == 0 && i <= v->n; i++) {
        const struct rec *a = &v->v[lo];
        if (i < v->n && v->v[i].path == a->path && v->v[i].step == a->step && v->v[i].occ == a->occ)
            continue;
        if (store_group(x, sg, sm, a, i - lo))
            rc = xr_sql_fail(x, err, "storing stitched ranges");
        lo = i;
    }
    sqlite3_finalize(sg);
    sqlite3_finalize(sm);
    return rc;
}

int xr_nvtx_stitch(struct xr_ctx *x, struct hm_err *err)
{
    rec_vec v = {0};
    int rc = 0;

    for (int r = 0; r < x->nranks && rc == 0; r++) {
        if (rank_records(x, &x->ranks[r], &v))
            rc = hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory stitching ranges");
        xr_rank_touched(x, &x->ranks[r]);
    }
    if (rc == 0) {
        number(&v);
        rc = store_all(x, &v, err);
    }
    HM_VEC_FREE(v);
    return rc;
}

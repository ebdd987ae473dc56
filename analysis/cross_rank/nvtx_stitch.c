/* NVTX / annotation stitching (key and GPU projection in nvtx_stitch.h).
 * Per rank: a stack sweep over each thread's ranges gives each range its
 * path; ranges are numbered within (step, path). Then each rank's ranges
 * are sorted by key, the ranks merged, and each run of equal keys is one
 * stitched range. */
#include "nvtx_stitch.h"
#include "batch_insert.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/record.h"
#include "common/spill.h"
#include "hm_sql.h"

#define PATH_MAX_LEN 1024
/* What one read of a rank's view costs the resident set when the reads
 * jump from rank to rank (a stitched range's members, one per rank): a
 * read fault on the spill arena's file mapping maps up to 16 pages around
 * it (the kernel's fault-around), so the arena is told 64 KiB (spill.h).
 * Told nothing, the members' reads kept 39 MB of a 1,024-rank run's view
 * resident. */
#define SCATTERED_TOUCH ((size_t)64 << 10)
#define STACK_MAX 256

/* One range: what its key and order need; the rest is read back from its
 * rank's annotation when stored. 32 bytes, since every rank's ranges are
 * held at once (2 M of them at 8 ranks of 62,500 steps) and the first
 * touch of each fresh page cost more than sorting them. */
struct rec {
    int64_t step, ts;
    uint32_t path;       /* id in x->names (32-bit ids) */
    uint32_t occ;
    uint32_t annot;      /* index in its rank's annots */
    uint32_t gpu;        /* 1 + index in the projections; 0: no GPU op launched inside */
};

/* The GPU projection of a range with GPU ops (most ranges of a CPU-only
 * program have none, and need no room for it). */
struct proj {
    int64_t ns, ops, start, end;
};

typedef HM_VEC(struct proj) proj_vec;
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
    int sorted = 1;

    o->v = malloc((k->launches.n + 1) * sizeof *o->v);
    o->n = 0;
    o->main_track = HM_NONE;
    if (!u || !o->v) {
        free(u);
        free(o->v);
        o->v = NULL;
        return HM_ENOMEM;
    }
    for (size_t i = 0; i < k->annots.n; i++) {
        u[i] = (struct span){k->annots.v[i].track, k->annots.v[i].ts, k->annots.v[i].end};
        sorted = sorted && (i == 0 || cmp_span(&u[i - 1], &u[i]) <= 0);
    }
    if (!sorted)   /* annotations come by track and start already (cmp_annot) */
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

static void add_launch(const struct xr_rank *k, int64_t corr, struct proj *out)
{
    size_t ga, gb;

    xr_gpu_by_corr(k, corr, &ga, &gb);
    for (size_t g = ga; g < gb; g++) {
        const struct xr_gpu *op = &k->gpu.v[k->by_corr[g]];
        out->ns += op->end - op->ts;
        out->ops++;
        if (out->start == HM_NONE || op->ts < out->start)
            out->start = op->ts;
        if (out->end == HM_NONE || op->end > out->end)
            out->end = op->end;
    }
}

/* GPU projection of one range of rank k: the GPU work of the launches made
 * inside it on its thread, and on the main thread also the orphans'. */
static void project(const struct xr_rank *k, const struct orphans *o, const struct xr_annot *a,
                    struct proj *out)
{
    size_t lo, hi;

    *out = (struct proj){0, 0, HM_NONE, HM_NONE};
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
static int rank_records(struct xr_ctx *x, const struct xr_rank *k, rec_vec *out, proj_vec *gp)
{
    int64_t open_name[STACK_MAX], open_end[STACK_MAX], track = HM_NONE;
    int depth = 0;
    char path[PATH_MAX_LEN];
    struct orphans o;

    if (k->annots.n > UINT32_MAX || find_orphans(k, &o))
        return HM_ENOMEM;

    for (size_t i = 0; i < k->annots.n; i++) {
        const struct xr_annot *a = &k->annots.v[i];
        unsigned f = xr_str_aflags(x, a->name);
        struct rec *r;
        struct proj g, *e;
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
        *r = (struct rec){.step = a->iteration, .ts = a->ts, .path = (uint32_t)xr_intern(x, path),
                          .annot = (uint32_t)i};
        project(k, &o, a, &g);
        if (g.ops && (e = gp->n < UINT32_MAX ? HM_VEC_PUSH(*gp) : NULL) != NULL) {
            *e = g;
            r->gpu = (uint32_t)gp->n;
        }
        if (!r->path || (g.ops && !r->gpu)) {
            free(o.v);
            return HM_ENOMEM;
        }
        if (depth < STACK_MAX) {
            open_name[depth] = a->name;
            open_end[depth++] = a->end;
        }
    }
    free(o.v);
    return 0;
}

/* A rank's ranges by (path, step, start), then as they were found: so
 * equal starts keep the order that one stable sort of all ranks' ranges by
 * (path, step, rank, start) gave them before. */
static int cmp_occ(const void *pa, const void *pb)
{
    const struct rec *a = pa, *b = pb;
    if (a->path != b->path)
        return a->path < b->path ? -1 : 1;
    if (a->step != b->step)
        return a->step < b->step ? -1 : 1;
    if (a->ts != b->ts)
        return a->ts < b->ts ? -1 : 1;
    return (a->annot > b->annot) - (a->annot < b->annot);
}

static int cmp_u32(const void *pa, const void *pb)
{
    uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
    return (a > b) - (a < b);
}

/* Scratch of sort_rank, sized once for the largest rank. */
struct sorter {
    struct rec *tmp;   /* as many as the largest rank's ranges */
    size_t *start;     /* per path id: a count, then a place; 0 between ranks */
    uint32_t *used;    /* the rank's distinct paths */
};

/* Sorts a rank's n ranges by cmp_occ. A rank has few paths, and each
 * path's ranges come in its thread's time order already (annotations are
 * by track and start); so: the ranges grouped by path in the order they
 * come (a counting sort), then a sort of only those paths whose ranges
 * are out of order (several threads). A qsort of each rank's 250k ranges
 * was most of the numbering's time. */
static void sort_rank(struct sorter *s, struct rec *k, size_t n)
{
    size_t nused = 0, at = 0, lo = 0;

    for (size_t i = 0; i < n; i++)
        if (s->start[k[i].path]++ == 0)
            s->used[nused++] = k[i].path;
    xr_sort(s->used, nused, sizeof *s->used, cmp_u32);
    for (size_t u = 0; u < nused; u++) {
        size_t c = s->start[s->used[u]];
        s->start[s->used[u]] = at;
        at += c;
    }
    for (size_t i = 0; i < n; i++)
        s->tmp[s->start[k[i].path]++] = k[i];
    memcpy(k, s->tmp, n * sizeof *k);
    for (size_t u = 0; u < nused; u++) {
        size_t hi = s->start[s->used[u]];   /* the end of the path's ranges now */
        for (size_t i = lo + 1; i < hi; i++)
            if (cmp_occ(&k[i - 1], &k[i]) > 0) {
                xr_sort(k + lo, hi - lo, sizeof *k, cmp_occ);
                break;
            }
        s->start[s->used[u]] = 0;
        lo = hi;
    }
}

/* The ranks' sorted runs of ranges being merged. */
struct runs {
    const struct rec *v;
    size_t *at, *end;   /* per rank: its next range and the end of its run */
    size_t *heap, n;    /* ranks with ranges left, a min-heap on run_before() */
};

/* Whether rank a's next range comes before rank b's in the stitched
 * order (path, step, occurrence, rank). */
static int run_before(const struct runs *r, size_t a, size_t b)
{
    const struct rec *ka = &r->v[r->at[a]], *kb = &r->v[r->at[b]];
    if (ka->path != kb->path)
        return ka->path < kb->path;
    if (ka->step != kb->step)
        return ka->step < kb->step;
    if (ka->occ != kb->occ)
        return ka->occ < kb->occ;
    return a < b;
}

static void sift_down(struct runs *r, size_t i)
{
    for (;;) {
        size_t c = 2 * i + 1, m = i, t;
        if (c < r->n && run_before(r, r->heap[c], r->heap[m]))
            m = c;
        if (c + 1 < r->n && run_before(r, r->heap[c + 1], r->heap[m]))
            m = c + 1;
        if (m == i)
            return;
        t = r->heap[i];
        r->heap[i] = r->heap[m];
        r->heap[m] = t;
        i = m;
    }
}

/* Numbers each (path, step, rank)'s ranges by start, and puts in order[]
 * the ranges by (path, step, occurrence, rank), so that each run of equal
 * keys is one stitched range: a sort per rank, in place, and a merge of
 * the ranks, not one sort of every range of the job. Rank r's ranges are
 * v[first[r] .. first[r + 1]). */
static int number(rec_vec *v, const size_t *first, int nranks, size_t *order)
{
    size_t *mem = malloc(3 * ((size_t)nranks + 1) * sizeof *mem), most = 1;
    struct runs r = {v->v, mem, mem + nranks + 1, mem + 2 * ((size_t)nranks + 1), 0};
    struct sorter s;
    uint32_t paths = 0;

    for (int q = 0; q < nranks; q++)
        most = first[q + 1] - first[q] > most ? first[q + 1] - first[q] : most;
    for (size_t i = 0; i < v->n; i++)
        paths = v->v[i].path > paths ? v->v[i].path : paths;
    s = (struct sorter){malloc(most * sizeof *s.tmp), calloc((size_t)paths + 1, sizeof *s.start),
                        malloc(most * sizeof *s.used)};
    if (!mem || !s.tmp || !s.start || !s.used) {
        free(mem);
        free(s.tmp);
        free(s.start);
        free(s.used);
        return HM_ENOMEM;
    }
    for (int q = 0; q < nranks; q++) {
        size_t lo = first[q], hi = first[q + 1];
        struct rec *k = v->v;
        sort_rank(&s, k + lo, hi - lo);
        for (size_t i = lo; i < hi; i++)
            k[i].occ = i > lo && k[i].path == k[i - 1].path && k[i].step == k[i - 1].step ? k[i - 1].occ + 1 : 0;
        r.at[q] = lo;
        r.end[q] = hi;
        if (lo < hi)
            r.heap[r.n++] = (size_t)q;
    }
    free(s.tmp);
    free(s.start);
    free(s.used);
    for (size_t i = r.n; i > 0; i--)
        sift_down(&r, i - 1);
    for (size_t o = 0; r.n; o++) {
        size_t q = r.heap[0];
        order[o] = r.at[q]++;
        if (r.at[q] == r.end[q])
            r.heap[0] = r.heap[--r.n];
        sift_down(&r, 0);
    }
    free(mem);
    return 0;
}

static const char stitch_what[] = "storing stitched ranges";

/* Every rank's ranges, as stitching holds them. */
struct ranges {
    rec_vec v;
    proj_vec gpu;
    size_t *first;   /* rank r's ranges are v[first[r] .. first[r + 1]) */
};

/* The rank whose ranges hold v[i]. */
static int rank_of(const struct xr_ctx *x, const struct ranges *g, size_t i)
{
    int lo = 0, hi = x->nranks;

    while (lo < hi) {   /* the first rank whose ranges start after i, less one */
        int m = lo + (hi - lo) / 2;
        if (g->first[m + 1] <= i)
            lo = m + 1;
        else
            hi = m;
    }
    return lo;
}

/* The stitched range of the n ranges m[0 .. n) (indexes into g->v), as
 * a row of xrank_insert_nvtx.sql. */
static void group_row(const struct xr_ctx *x, const struct ranges *g, const size_t *m, size_t n,
                      int64_t row[13])
{
    int64_t first = INT64_MAX, last = INT64_MIN, mn = INT64_MAX, mx = INT64_MIN, gns = 0, gops = 0;
    const struct rec *a = &g->v.v[m[0]];
    const struct xr_annot *an = NULL;
    int late = -1;

    for (size_t i = 0; i < n; i++) {
        const struct rec *r = &g->v.v[m[i]];
        const struct xr_rank *k = &x->ranks[rank_of(x, g, m[i])];
        const struct xr_annot *e = &k->annots.v[r->annot];
        hm_spill_touched(x->spill, SCATTERED_TOUCH);
        an = an ? an : e;
        first = e->ts < first ? e->ts : first;
        if (e->ts > last)
            last = e->ts, late = k->rank;
        mn = e->end < mn ? e->end : mn;
        mx = e->end > mx ? e->end : mx;
        if (r->gpu) {
            gns += g->gpu.v[r->gpu - 1].ns;
            gops += g->gpu.v[r->gpu - 1].ops;
        }
    }
    if (n < 2 || first == last)
        late = -1;
    int64_t v[13] = {an->name, a->path, a->step,   a->occ, (int64_t)n, first, last,
                     late >= 0 ? late : HM_NONE, last - first, mn, mx, gns, gops};
    memcpy(row, v, sizeof v);
}

/* A stitched range written, its members not yet: they need its id. */
struct held {
    size_t lo, n;   /* its ranges: order[lo .. lo + n) */
};

/* Writes the members of the nh ranges just written. Their ids are the
 * last nh rowids, one apart: SQLite gives a row without one the largest
 * rowid plus one. Read before any member row is written: after one,
 * last_insert_rowid is that row's, in nvtx_stitched_ranks. */
static int store_members(struct xr_ctx *x, struct xr_batch *sm, const struct ranges *g, const size_t *order,
                         const struct held *h, int nh, struct hm_err *err)
{
    int64_t last = sqlite3_last_insert_rowid(x->db);
    int rc = 0;

    for (int j = 0; j < nh && rc == 0; j++) {
        int64_t id = last - (nh - 1 - j);
        for (size_t i = h[j].lo; i < h[j].lo + h[j].n && rc == 0; i++) {
            const struct rec *r = &g->v.v[order[i]];
            const struct xr_rank *k = &x->ranks[rank_of(x, g, order[i])];
            const struct xr_annot *e = &k->annots.v[r->annot];
            struct proj p = r->gpu ? g->gpu.v[r->gpu - 1] : (struct proj){0, 0, HM_NONE, HM_NONE};
            int64_t row[9] = {id, k->rank, e->id, e->ts, e->end, p.start, p.end, p.ns, p.ops};
            hm_spill_touched(x->spill, SCATTERED_TOUCH);
            rc = xr_batch_add(x, sm, row, err, stitch_what);
        }
    }
    return rc;
}

static int store_all(struct xr_ctx *x, const struct ranges *g, const size_t *order, struct hm_err *err)
{
    struct xr_batch sg, sm;
    struct held h[XR_BATCH_ROWS];
    /* Ranges: path (?2) is a text; step (?3) and late_rank (?8) may be
     * NULL. Members: gpu_start_ns and gpu_end_ns (?6, ?7) are NULL when
     * no GPU op was launched inside. */
    int rc = xr_batch_open(x, &sg, hm_sql_xrank_insert_nvtx, 1u << 2 | 1u << 7, 1u << 1, err), nh = 0;
    size_t lo = 0, n = g->v.n;

    if (rc == 0)
        rc = xr_batch_open(x, &sm, hm_sql_xrank_insert_nvtx_rank, 1u << 5 | 1u << 6, 0, err);
    else
        sm = (struct xr_batch){0};
    for (size_t i = 1; rc == 0 && i <= n; i++) {
        const struct rec *a = &g->v.v[order[lo]], *b = i < n ? &g->v.v[order[i]] : NULL;
        int64_t row[13];
        if (b && b->path == a->path && b->step == a->step && b->occ == a->occ)
            continue;
        group_row(x, g, order + lo, i - lo, row);
        h[nh++] = (struct held){lo, i - lo};
        rc = xr_batch_add(x, &sg, row, err, stitch_what);
        if (rc == 0 && sg.held == 0) {   /* these ranges were written just now */
            rc = store_members(x, &sm, g, order, h, nh, err);
            nh = 0;
        }
        lo = i;
    }
    if (rc == 0)
        rc = xr_batch_flush(x, &sg, err, stitch_what);
    if (rc == 0)
        rc = store_members(x, &sm, g, order, h, nh, err);
    if (rc == 0)
        rc = xr_batch_flush(x, &sm, err, stitch_what);
    xr_batch_close(&sg);
    xr_batch_close(&sm);
    return rc;
}

int xr_nvtx_stitch(struct xr_ctx *x, struct hm_err *err)
{
    struct ranges g = {{0}, {0}, malloc(((size_t)x->nranks + 1) * sizeof *g.first)};
    size_t *order = NULL, all = 0;
    int rc = g.first ? 0 : HM_ENOMEM;

    for (int r = 0; r < x->nranks; r++)   /* one allocation: no copies while it grows */
        all += x->ranks[r].annots.n;
    if (rc == 0)
        rc = hm_vec_reserve((void **)&g.v.v, &g.v.cap, all ? all : 1, sizeof *g.v.v);
    for (int r = 0; r < x->nranks && rc == 0; r++) {
        g.first[r] = g.v.n;
        rc = rank_records(x, &x->ranks[r], &g.v, &g.gpu);
        xr_rank_touched(x, &x->ranks[r]);
    }
    if (rc == 0) {
        g.first[x->nranks] = g.v.n;
        order = malloc((g.v.n ? g.v.n : 1) * sizeof *order);
        rc = order ? number(&g.v, g.first, x->nranks, order) : HM_ENOMEM;
    }
    if (rc)
        rc = hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory stitching ranges");
    else
        rc = store_all(x, &g, order, err);
    HM_VEC_FREE(g.v);
    HM_VEC_FREE(g.gpu);
    free(g.first);
    free(order);
    return rc;
}

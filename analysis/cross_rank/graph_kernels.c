/* CUDA graph kernels (graph_kernels.h): the graph nodes, the graph kernels
 * and their launch calls are read once for all ranks (only when some rank
 * recorded nodes being made); then per rank each node is followed back to
 * the node made at capture, one sweep per track finds the innermost
 * annotation open at each making and each launch, and the call that made
 * each node, and each kernel gets its row and its capture phase. */
#include "graph_kernels.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "common/record.h"
#include "hm_sql.h"
#include "phases.h"
#include "store/columns.h"

enum { MAX_CLONE_HOPS = 8 };   /* a graph cloned, then instantiated: two hops */
/* A node made by stream capture is made inside the captured launch call,
 * which began at most this long before. */
#define CALL_WINDOW_NS INT64_C(10000000)

struct gnode {
    int rank;
    int64_t slice, track, ts, node, orig, graph, call;   /* orig, graph, call: HM_NONE if none */
    long root;                 /* index of the node made at capture; -1 unknown */
    long range;                /* made nodes: index into the rank's annots; -1 none */
};

struct gop {
    int rank;
    int64_t slice, ts, corr, name, graph, node;
};

/* A CUDA call on a thread that made graph nodes. */
struct gcall {
    int rank;
    int64_t slice, track, ts, end;
};

struct glaunch {
    int rank;
    int64_t slice, track, ts, corr;
    long range;                /* index into the rank's annots; -1 none */
};

struct graph_data {
    HM_VEC(struct gnode) nodes;        /* by (rank, node) */
    HM_VEC(struct gop) ops;            /* by (rank, ts) */
    HM_VEC(struct glaunch) launches;   /* by (rank, corr), a graph launch first */
    HM_VEC(struct gcall) calls;        /* by (rank, track, ts) */
};

/* A time on a track whose innermost open annotation is wanted. */
struct probe {
    int64_t track, ts;
    long *out;
};

#define NODE_COLUMNS(X)                                                                            \
    X(NC_RANK, "rank") X(NC_ID, "id") X(NC_TRACK, "track") X(NC_TS, "ts") X(NC_NODE, "node")        \
    X(NC_ORIGINAL, "original") X(NC_GRAPH, "graph")
enum { NODE_COLUMNS(HM_COLUMN_ENUM) NC__COUNT };
static const char *const node_names[] = {NODE_COLUMNS(HM_COLUMN_NAME)};

#define OP_COLUMNS(X)                                                                              \
    X(OC_RANK, "rank") X(OC_ID, "id") X(OC_TS, "ts") X(OC_CORRELATION, "correlation")              \
    X(OC_NAME, "name") X(OC_GRAPH, "graph") X(OC_NODE, "node")
enum { OP_COLUMNS(HM_COLUMN_ENUM) OC__COUNT };
static const char *const op_names[] = {OP_COLUMNS(HM_COLUMN_NAME)};

#define LAUNCH_COLUMNS(X)                                                                          \
    X(LC_RANK, "rank") X(LC_ID, "id") X(LC_TRACK, "track") X(LC_TS, "ts")                          \
    X(LC_CORRELATION, "correlation") X(LC_GRAPH_LAUNCH, "graph_launch")
enum { LAUNCH_COLUMNS(HM_COLUMN_ENUM) LC__COUNT };
static const char *const launch_names[] = {LAUNCH_COLUMNS(HM_COLUMN_NAME)};

#define CALL_COLUMNS(X) \
    X(CC_RANK, "rank") X(CC_ID, "id") X(CC_TRACK, "track") X(CC_TS, "ts") X(CC_END, "end_ts")
enum { CALL_COLUMNS(HM_COLUMN_ENUM) CC__COUNT };
static const char *const call_names[] = {CALL_COLUMNS(HM_COLUMN_NAME)};

static int node_row(sqlite3_stmt *st, struct graph_data *d)
{
    struct gnode *n = HM_VEC_PUSH(d->nodes);
    if (!n)
        return HM_ENOMEM;
    *n = (struct gnode){sqlite3_column_int(st, NC_RANK), sqlite3_column_int64(st, NC_ID),
                        sqlite3_column_int64(st, NC_TRACK), sqlite3_column_int64(st, NC_TS),
                        sqlite3_column_int64(st, NC_NODE), xr_col_opt(st, NC_ORIGINAL),
                        xr_col_opt(st, NC_GRAPH), HM_NONE, -1, -1};
    return 0;
}

static int op_row(sqlite3_stmt *st, struct graph_data *d)
{
    struct gop *o = HM_VEC_PUSH(d->ops);
    if (!o)
        return HM_ENOMEM;
    *o = (struct gop){sqlite3_column_int(st, OC_RANK), sqlite3_column_int64(st, OC_ID),
                      sqlite3_column_int64(st, OC_TS), xr_col_opt(st, OC_CORRELATION),
                      xr_col_opt(st, OC_NAME), xr_col_opt(st, OC_GRAPH), xr_col_opt(st, OC_NODE)};
    return 0;
}

static int launch_row(sqlite3_stmt *st, struct graph_data *d)
{
    struct glaunch *l = HM_VEC_PUSH(d->launches);
    if (!l)
        return HM_ENOMEM;
    *l = (struct glaunch){sqlite3_column_int(st, LC_RANK), sqlite3_column_int64(st, LC_ID),
                          sqlite3_column_int64(st, LC_TRACK), sqlite3_column_int64(st, LC_TS),
                          sqlite3_column_int64(st, LC_CORRELATION), -1};
    return 0;
}

static int call_row(sqlite3_stmt *st, struct graph_data *d)
{
    struct gcall *c = HM_VEC_PUSH(d->calls);
    if (!c)
        return HM_ENOMEM;
    *c = (struct gcall){sqlite3_column_int(st, CC_RANK), sqlite3_column_int64(st, CC_ID),
                        sqlite3_column_int64(st, CC_TRACK), sqlite3_column_int64(st, CC_TS),
                        sqlite3_column_int64(st, CC_END)};
    return 0;
}

/* Runs one of the queries, each row through row(). */
static int load(struct xr_ctx *x, const char *sql, const char *const *names, int ncols,
                int (*row)(sqlite3_stmt *, struct graph_data *), struct graph_data *d, struct hm_err *err)
{
    sqlite3_stmt *st = NULL;
    int rc = xr_prepare(x, sql, &st, err), s = SQLITE_DONE;

    if (rc)
        return rc;
    hm_columns_check(st, names, ncols);
    while (rc == 0 && (s = sqlite3_step(st)) == SQLITE_ROW)
        rc = row(st, d);
    sqlite3_finalize(st);
    if (rc)
        return hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory reading CUDA graphs");
    return s == SQLITE_DONE ? 0 : xr_sql_fail(x, err, "reading CUDA graphs");
}

/* The first of n structs of size bytes, sorted by the int64_t at offset
 * off, whose key is not below key (n when none). */
static size_t lower_bound(const void *v, size_t n, size_t size, size_t off, int64_t key)
{
    const char *b = v;
    size_t lo = 0, hi = n;

    while (lo < hi) {
        size_t m = (lo + hi) / 2;
        int64_t k;
        memcpy(&k, b + m * size + off, sizeof k);
        if (k < key)
            lo = m + 1;
        else
            hi = m;
    }
    return lo;
}

/* Index in n[0, len) (sorted by node) of node id, or -1. */
static long find_node(const struct gnode *n, size_t len, int64_t node)
{
    size_t i = lower_bound(n, len, sizeof *n, offsetof(struct gnode, node), node);
    return i < len && n[i].node == node ? (long)i : -1;
}

/* Index in l[0, len) (sorted by corr, a graph launch first) of corr's first
 * call, or -1. */
static long find_launch(const struct glaunch *l, size_t len, int64_t corr)
{
    size_t i = lower_bound(l, len, sizeof *l, offsetof(struct glaunch, corr), corr);
    return i < len && l[i].corr == corr ? (long)i : -1;
}

/* The earliest call in c[0, n) (sorted by track, ts) on track that began
 * at most CALL_WINDOW_NS before t and had not ended by t: the call that made
 * a node at t. Its slice id, or HM_NONE. */
static int64_t call_at(const struct gcall *c, size_t n, int64_t track, int64_t t)
{
    size_t a = lower_bound(c, n, sizeof *c, offsetof(struct gcall, track), track);
    size_t b = lower_bound(c, n, sizeof *c, offsetof(struct gcall, track), track + 1);

    a += lower_bound(c + a, b - a, sizeof *c, offsetof(struct gcall, ts), t - CALL_WINDOW_NS);
    for (; a < b && c[a].ts <= t; a++)
        if (c[a].end >= t)
            return c[a].slice;
    return HM_NONE;
}

/* Each node's root: the node made at capture it was cloned from (itself
 * when made so), followed through at most MAX_CLONE_HOPS clones. */
static void find_roots(struct gnode *n, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        long j = (long)i;
        for (int hop = 0; j >= 0 && n[j].orig != HM_NONE && hop < MAX_CLONE_HOPS; hop++)
            j = find_node(n, len, n[j].orig);
        n[i].root = j >= 0 && n[j].orig == HM_NONE ? j : -1;
    }
}

static int cmp_probe(const void *pa, const void *pb)
{
    const struct probe *a = pa, *b = pb;
    if (a->track != b->track)
        return a->track < b->track ? -1 : 1;
    return (a->ts > b->ts) - (a->ts < b->ts);
}

/* Sets each probe's *out to the index in k->annots of the innermost
 * annotation open on its track at its time (-1: none). Annotations come by
 * (track, start, longer first), so one pass per track, keeping a stack of
 * those still open, answers the probes in time order. stack holds
 * k->annots.n entries. */
static void open_at(const struct xr_rank *k, struct probe *p, size_t n, long *stack)
{
    const struct xr_annot *a = k->annots.v;
    size_t next = 0, depth = 0;

    xr_sort(p, n, sizeof *p, cmp_probe);
    for (size_t i = 0; i < n; i++) {
        if (i == 0 || p[i].track != p[i - 1].track) {
            depth = 0;
            next = lower_bound(a, k->annots.n, sizeof *a, offsetof(struct xr_annot, track), p[i].track);
        }
        for (; next < k->annots.n && a[next].track == p[i].track && a[next].ts <= p[i].ts; next++) {
            while (depth && a[stack[depth - 1]].end <= a[next].ts)
                depth--;
            stack[depth++] = (long)next;
        }
        while (depth && a[stack[depth - 1]].end < p[i].ts)
            depth--;
        *p[i].out = depth ? stack[depth - 1] : -1;
    }
}

/* Marks the view's GPU op that is o (same correlation and name, the
 * nearest start) with its capture phase, for phase_gpu.c. */
static void mark_gpu(struct xr_rank *k, const struct gop *o, int phase)
{
    size_t lo, hi;
    struct xr_gpu *best = NULL;

    xr_gpu_by_corr(k, o->corr, &lo, &hi);
    for (size_t i = lo; i < hi; i++) {
        struct xr_gpu *g = &k->gpu.v[k->by_corr[i]];
        if (g->name == o->name && (!best || llabs(g->ts - o->ts) < llabs(best->ts - o->ts)))
            best = g;
    }
    if (best && phase != XR_PH_OTHER)
        best->graph_phase = (unsigned char)(1 + phase);
}

static void bind_phase(sqlite3_stmt *st, int i, int phase)
{
    if (phase == XR_PH_OTHER)
        sqlite3_bind_null(st, i);
    else
        sqlite3_bind_text(st, i, xr_phase_name(phase), -1, SQLITE_STATIC);
}

/* One rank's slices of the lists. */
struct rank_part {
    struct gnode *nodes;
    size_t nnodes;
    struct gop *ops;
    size_t nops;
    struct glaunch *launches;
    size_t nlaunches;
    struct gcall *calls;
    size_t ncalls;
};

/* The innermost annotations open at each node's making and each launch. */
static int find_ranges(const struct xr_rank *k, struct rank_part *r)
{
    struct probe *p = malloc((r->nnodes + r->nlaunches + 1) * sizeof *p);
    long *stack = malloc((k->annots.n + 1) * sizeof *stack);
    size_t n = 0;

    if (!p || !stack) {
        free(p);
        free(stack);
        return HM_ENOMEM;
    }
    for (size_t i = 0; i < r->nnodes; i++)
        if (r->nodes[i].orig == HM_NONE)
            p[n++] = (struct probe){r->nodes[i].track, r->nodes[i].ts, &r->nodes[i].range};
    for (size_t i = 0; i < r->nlaunches; i++)
        p[n++] = (struct probe){r->launches[i].track, r->launches[i].ts, &r->launches[i].range};
    open_at(k, p, n, stack);
    free(p);
    free(stack);
    return 0;
}

static int64_t annot_id(const struct xr_rank *k, long i)
{
    return i >= 0 ? k->annots.v[i].id : HM_NONE;
}

/* A row per graph kernel of the rank, and the kernels' capture phases. */
static int attribute_rank(struct xr_ctx *x, struct xr_rank *k, struct rank_part *r, sqlite3_stmt *ins,
                          struct hm_err *err)
{
    struct xr_phases p = {0};
    int rc = 0;

    find_roots(r->nodes, r->nnodes);
    for (size_t i = 0; i < r->nnodes; i++)
        if (r->nodes[i].orig == HM_NONE)
            r->nodes[i].call = call_at(r->calls, r->ncalls, r->nodes[i].track, r->nodes[i].ts);
    if (find_ranges(k, r) || xr_phases_of(x, k, &p)) {
        xr_phases_free(&p);
        return hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");
    }
    for (size_t i = 0; i < r->nops && rc == 0; i++) {
        const struct gop *o = &r->ops[i];
        long ni = find_node(r->nodes, r->nnodes, o->node), li = find_launch(r->launches, r->nlaunches, o->corr);
        const struct gnode *made = ni >= 0 && r->nodes[ni].root >= 0 ? &r->nodes[r->nodes[ni].root] : NULL;
        const struct glaunch *l = li >= 0 ? &r->launches[li] : NULL;
        int cap = made ? xr_phase_at(&p, made->ts) : XR_PH_OTHER;
        /* As phase_gpu.c times a GPU op without a launch: by its start. */
        int at_launch = xr_phase_at(&p, l ? l->ts : o->ts);

        mark_gpu(k, o, cap);
        sqlite3_reset(ins);
        sqlite3_bind_int64(ins, 1, o->slice);
        sqlite3_bind_int(ins, 2, k->rank);
        xr_bind_opt(ins, 3, o->graph);
        xr_bind_opt(ins, 4, o->node);
        xr_bind_opt(ins, 5, made ? made->node : HM_NONE);
        xr_bind_opt(ins, 6, made ? made->graph : HM_NONE);
        xr_bind_opt(ins, 7, made ? made->slice : HM_NONE);
        xr_bind_opt(ins, 8, made ? made->call : HM_NONE);
        xr_bind_opt(ins, 9, made ? annot_id(k, made->range) : HM_NONE);
        bind_phase(ins, 10, cap);
        xr_bind_opt(ins, 11, l ? l->slice : HM_NONE);
        xr_bind_opt(ins, 12, l ? annot_id(k, l->range) : HM_NONE);
        bind_phase(ins, 13, l ? at_launch : XR_PH_OTHER);
        bind_phase(ins, 14, at_launch != XR_PH_OTHER ? at_launch : cap);
        if (sqlite3_step(ins) != SQLITE_DONE)
            rc = xr_sql_fail(x, err, "storing CUDA graph kernels");
    }
    xr_phases_free(&p);
    xr_rank_touched(x, k);
    return rc;
}

/* In a list sorted by rank whose structs begin with their int rank: moves
 * *at to rank's first entry and returns the index past its last. */
static size_t rank_run(const void *v, size_t n, size_t size, size_t *at, int rank)
{
    const char *b = v;
    size_t end;

    while (*at < n && *(const int *)(b + *at * size) < rank)
        (*at)++;
    for (end = *at; end < n && *(const int *)(b + end * size) == rank; end++)
        ;
    return end;
}

static int attribute_all(struct xr_ctx *x, struct graph_data *d, struct hm_err *err)
{
    sqlite3_stmt *ins = NULL;
    size_t o = 0, n = 0, l = 0, c = 0;
    int rc = xr_prepare(x, hm_sql_xrank_insert_graph_kernel, &ins, err);

    while (rc == 0 && o < d->ops.n) {
        int rank = d->ops.v[o].rank;
        size_t o1 = rank_run(d->ops.v, d->ops.n, sizeof *d->ops.v, &o, rank);
        size_t n1 = rank_run(d->nodes.v, d->nodes.n, sizeof *d->nodes.v, &n, rank);
        size_t l1 = rank_run(d->launches.v, d->launches.n, sizeof *d->launches.v, &l, rank);
        size_t c1 = rank_run(d->calls.v, d->calls.n, sizeof *d->calls.v, &c, rank);
        struct rank_part r = {d->nodes.v + n, n1 - n, d->ops.v + o, o1 - o, d->launches.v + l, l1 - l,
                              d->calls.v + c, c1 - c};

        if (rank >= 0 && rank < x->nranks)
            rc = attribute_rank(x, &x->ranks[rank], &r, ins, err);
        o = o1;
    }
    sqlite3_finalize(ins);
    return rc;
}

int xr_graph_kernels(struct xr_ctx *x, struct hm_err *err)
{
    struct graph_data d = {0};
    int rc = 0, any = 0;

    for (int r = 0; r < x->nranks; r++)
        any |= x->ranks[r].graph_events > 0;
    if (!any)
        return 0;
    rc = load(x, hm_sql_xrank_graph_nodes, node_names, NC__COUNT, node_row, &d, err);
    if (rc == 0)
        rc = load(x, hm_sql_xrank_graph_ops, op_names, OC__COUNT, op_row, &d, err);
    if (rc == 0 && d.ops.n)
        rc = load(x, hm_sql_xrank_graph_launches, launch_names, LC__COUNT, launch_row, &d, err);
    if (rc == 0 && d.ops.n)
        rc = load(x, hm_sql_xrank_graph_calls, call_names, CC__COUNT, call_row, &d, err);
    if (rc == 0 && d.ops.n)
        rc = attribute_all(x, &d, err);
    HM_VEC_FREE(d.nodes);
    HM_VEC_FREE(d.ops);
    HM_VEC_FREE(d.launches);
    HM_VEC_FREE(d.calls);
    return rc;
}

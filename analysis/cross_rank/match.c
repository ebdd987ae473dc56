/* Collective matching (API in match.h).
 *
 * Per rank, the collectives rows become logical collectives:
 *   1. keyed rows (a Seq with a pg or a comms id) merge by key; the GPU row
 *      times the call, else the CPU op, else the annotation;
 *   2. unkeyed GPU rows stand alone;
 *   3. an unkeyed CPU op stands alone unless a GPU row has its External id;
 *   4. a gloo:/nccl: annotation stands alone unless it overlaps a CPU op
 *      row on its thread (it is then that op's inner range);
 *   5. a CPU-timed call that launched communication kernels (a kernel of
 *      class COMMUNICATION whose launch lies inside it on its thread) is
 *      timed by those kernels;
 *   6. an unkeyed call so timed that shares its kernels with a keyed call of
 *      the same op is that call seen twice (torch.profiler's CPU op and the
 *      NCCL plugin's event of one all-reduce): the keyed one stays;
 *   7. likewise an unkeyed CPU-timed call that overlaps a keyed CPU-timed
 *      call of the same op on its thread, or an unkeyed gloo:/nccl:
 *      annotation that overlaps one on any thread (torch 2's gloo marks the
 *      call on its worker thread): torch.profiler's record of a call the
 *      Python hooks keyed by (pg, seq).
 * Then across ranks: equal keys form one instance; unkeyed calls are
 * numbered within (pg, op, size, step) on each rank by enter time and the
 * k-th calls of every rank form one instance. A second pass numbers the
 * unkeyed calls the first left alone within (pg, op, step), whatever their
 * size, and matches those, for ops whose size may differ per rank
 * (all-to-all, gather, ...; never allreduce or broadcast). */
#include "match.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/record.h"
#include "hm_sql.h"
#include "store/columns.h"

/* One collectives row while its rank is being grouped. */
struct row {
    int64_t id, pg, op, seq, comm, size, gsize;
    int64_t enter, exit, track, iter, ext;
    int rank, gpu, src, keytype;   /* keytype -1: unkeyed */
    int keep;
};

typedef HM_VEC(struct row) row_vec;

void xr_op_normalise(const char *in, char *out, size_t cap)
{
    size_t n = 0;

    if (!strncmp(in, "c10d::", 6))
        in += 6;
    else if (!strncmp(in, "nccl:", 5))   /* the NCCL plugin's "nccl:AllReduce" */
        in += 5;
    for (; *in && n + 1 < cap; in++)
        if (*in != '_')
            out[n++] = (char)tolower((unsigned char)*in);
    while (n > 0 && out[n - 1] == ' ')
        n--;
    out[n] = '\0';
}

int xr_op_is_p2p(const char *op)
{
    static const char *const p2p[] = {"send", "recv", "isend", "irecv", "batchisendirecv",
                                      "sendrecv", NULL};
    for (int i = 0; p2p[i]; i++)
        if (!strcmp(op, p2p[i]))
            return 1;
    return 0;
}

/* Product of the numbers in a JSON array text like "[1059850]" or "[2, 3]";
 * HM_NONE when there is none. */
static int64_t dims_product(const char *s)
{
    int64_t p = 1;
    int any = 0;

    for (; s && *s; s++) {
        if (*s >= '0' && *s <= '9') {
            char *end;
            long long v = strtoll(s, &end, 10);
            p *= v;
            any = 1;
            s = end - 1;
        }
    }
    return any ? p : HM_NONE;
}

static int64_t intern_col(struct xr_ctx *x, sqlite3_stmt *st, int col, const char *prefix)
{
    char buf[512];
    const unsigned char *t = sqlite3_column_text(st, col);

    if (!t || !*t)
        return 0;
    snprintf(buf, sizeof buf, "%s%s", prefix, (const char *)t);
    return xr_intern(x, buf);
}

/* The columns of xrank_collectives.sql. */
#define COLL_COLUMNS(X)                                                                          \
    X(CC_ID, "id") X(CC_RANK, "rank") X(CC_PG, "pg") X(CC_OP, "op") X(CC_SEQ, "seq")              \
    X(CC_COMMS_ID, "comms_id") X(CC_IN_NELEMS, "in_nelems") X(CC_GROUP_SIZE, "group_size")        \
    X(CC_ENTER, "enter_ns") X(CC_EXIT, "exit_ns") X(CC_GPU, "gpu") X(CC_TRACK, "track")           \
    X(CC_ITERATION, "iteration") X(CC_EXTERNAL_ID, "external_id") X(CC_SLICE_NAME, "slice_name")  \
    X(CC_DIMS, "dims")
enum { COLL_COLUMNS(HM_COLUMN_ENUM) CC__COUNT };
static const char *const coll_names[] = {COLL_COLUMNS(HM_COLUMN_NAME)};

/* Reads one row of xrank_collectives.sql. Returns 0, 1 to skip it, or
 * HM_ENOMEM. */
static int read_row(struct xr_ctx *x, sqlite3_stmt *st, struct row *r)
{
    char op[128];
    const unsigned char *name = sqlite3_column_text(st, CC_SLICE_NAME), *opt = sqlite3_column_text(st, CC_OP);
    int annot = name && (!strncmp((const char *)name, "gloo:", 5) ||
                         !strncmp((const char *)name, "nccl:", 5));

    memset(r, 0, sizeof *r);
    xr_op_normalise(opt ? (const char *)opt : "", op, sizeof op);
    if (!op[0] || !strcmp(op, "wait"))
        return 1; /* work.wait() and nameless rows are not calls */
    r->id = sqlite3_column_int64(st, CC_ID);
    r->rank = sqlite3_column_int(st, CC_RANK);
    r->pg = intern_col(x, st, CC_PG, "");
    r->op = xr_intern(x, op);
    r->seq = xr_col_opt(st, CC_SEQ);
    r->comm = intern_col(x, st, CC_COMMS_ID, "comm:");
    r->size = xr_col_opt(st, CC_IN_NELEMS);
    r->gsize = xr_col_opt(st, CC_GROUP_SIZE);
    r->enter = sqlite3_column_int64(st, CC_ENTER);
    r->exit = sqlite3_column_int64(st, CC_EXIT);
    r->gpu = sqlite3_column_int(st, CC_GPU);
    r->track = sqlite3_column_int64(st, CC_TRACK);
    r->iter = xr_col_opt(st, CC_ITERATION);
    r->ext = xr_col_opt(st, CC_EXTERNAL_ID);
    if (r->size == HM_NONE && sqlite3_column_type(st, CC_DIMS) == SQLITE_TEXT)
        r->size = dims_product((const char *)sqlite3_column_text(st, CC_DIMS));
    r->src = r->gpu ? XR_SRC_GPU : annot && !r->pg ? XR_SRC_ANNOT : XR_SRC_CPU;
    r->keytype = r->seq == HM_NONE ? -1 : r->pg ? XR_KEY_PG_SEQ : r->comm ? XR_KEY_COMM_SEQ : -1;
    if (!r->op)
        return HM_ENOMEM;
    return 0;
}

static int64_t key_pg(const struct row *r)
{
    return r->keytype == XR_KEY_COMM_SEQ ? r->comm : r->pg;
}

static int cmp_keyed(const void *pa, const void *pb)
{
    const struct row *a = pa, *b = pb;
    if (a->keytype != b->keytype)
        return a->keytype < b->keytype ? -1 : 1;
    if (key_pg(a) != key_pg(b))
        return key_pg(a) < key_pg(b) ? -1 : 1;
    if (a->seq != b->seq)
        return a->seq < b->seq ? -1 : 1;
    return a->src - b->src; /* best timing source first */
}

static struct xr_coll *push_coll(struct xr_ctx *x, const struct row *r, int keytype)
{
    struct xr_coll *c = HM_VEC_PUSH(x->coll);

    if (!c)
        return NULL;
    *c = (struct xr_coll){.rank = r->rank, .keytype = keytype, .src = r->src, .row = r->id,
                          .pg = keytype == XR_KEY_COMM_SEQ ? r->comm : r->pg, .op = r->op,
                          .seq = keytype == XR_KEY_ORDER ? HM_NONE : r->seq, .size = r->size,
                          .size_key = r->size,
                          .group_size = r->gsize, .step = r->iter, .track = r->track,
                          .enter = r->enter, .exit = r->exit, .inst = -1};
    return c;
}

/* Merges the keyed rows rows[lo, hi) (one key, best source first). */
static int merge_keyed(struct xr_ctx *x, struct row *v, size_t lo, size_t hi)
{
    struct xr_coll *c = push_coll(x, &v[lo], v[lo].keytype);

    if (!c)
        return HM_ENOMEM;
    for (size_t i = lo + 1; i < hi; i++) {
        if (v[i].src == v[lo].src) {
            if (v[i].enter < c->enter)
                c->enter = v[i].enter;
            if (v[i].exit > c->exit)
                c->exit = v[i].exit;
        }
        if (c->step == HM_NONE)
            c->step = v[i].iter;
        if (c->size == HM_NONE)
            c->size = v[i].size;
        if (c->group_size == HM_NONE)
            c->group_size = v[i].gsize;
    }
    return 0;
}

static int keyed_calls(struct xr_ctx *x, struct row *v, size_t n)
{
    size_t lo = 0, k = 0;
    struct row *kv = malloc((n ? n : 1) * sizeof *kv);

    if (!kv)
        return HM_ENOMEM;
    for (size_t i = 0; i < n; i++)
        if (v[i].keytype >= 0)
            kv[k++] = v[i];
    xr_sort(kv, k, sizeof *kv, cmp_keyed);
    for (size_t i = 1; i <= k; i++) {
        if (i < k && cmp_keyed(&kv[i], &kv[lo]) == 0)
            continue;
        if (i < k && kv[i].keytype == kv[lo].keytype && key_pg(&kv[i]) == key_pg(&kv[lo]) &&
            kv[i].seq == kv[lo].seq)
            continue; /* same key, worse source */
        if (merge_keyed(x, kv, lo, i)) {
            free(kv);
            return HM_ENOMEM;
        }
        lo = i;
    }
    free(kv);
    return 0;
}

/* Does a GPU row of the rank carry external id ext? */
static int gpu_has_ext(const struct row *v, size_t n, int64_t ext)
{
    for (size_t i = 0; ext != HM_NONE && i < n; i++)
        if (v[i].gpu && v[i].ext == ext)
            return 1;
    return 0;
}

/* Does a CPU op row of the rank overlap [a, b] on track? */
static int cpu_overlaps(const struct row *v, size_t n, int64_t track, int64_t a, int64_t b)
{
    for (size_t i = 0; i < n; i++)
        if (!v[i].gpu && v[i].src == XR_SRC_CPU && v[i].track == track && v[i].enter <= b &&
            a <= v[i].exit)
            return 1;
    return 0;
}

/* Times a CPU-timed call by the communication kernels launched inside it. */
static void project_to_kernels(struct xr_ctx *x, struct xr_coll *c)
{
    const struct xr_rank *r = &x->ranks[c->rank];
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    size_t a, b, ga, gb;

    xr_launch_range(r, c->track, c->enter, c->exit, &a, &b);
    for (size_t i = a; i < b; i++) {
        xr_gpu_by_corr(r, r->launches.v[i].corr, &ga, &gb);
        for (size_t g = ga; g < gb; g++) {
            const struct xr_gpu *k = &r->gpu.v[r->by_corr[g]];
            if (k->kclass != XR_COMM)
                continue;
            lo = k->ts < lo ? k->ts : lo;
            hi = k->end > hi ? k->end : hi;
        }
    }
    if (lo <= hi) {
        c->enter = lo;
        c->exit = hi;
        c->src = XR_SRC_GPU;
    }
}

/* A keyed GPU-timed call of the rank being grouped (rule 6). */
struct keyed_span {
    int64_t enter, exit, op, track;
};

static int cmp_span(const void *pa, const void *pb)
{
    const struct keyed_span *a = pa, *b = pb;
    return a->enter < b->enter ? -1 : a->enter > b->enter;
}

/* Rule 6: is c (GPU-timed, unkeyed) the same call as one of the rank's
 * keyed GPU-timed calls, by[0, n) sorted by enter? Keyed calls of one
 * stream do not overlap, so the candidates are the last few entering
 * before c ends. */
/* The first of by[0, n) (sorted by enter) entering after t. */
static size_t first_entering_after(const struct keyed_span *by, size_t n, int64_t t)
{
    size_t lo = 0, hi = n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (by[mid].enter <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static int is_keyed_twin(const struct xr_coll *c, const struct keyed_span *by, size_t n)
{
    size_t lo = first_entering_after(by, n, c->exit);

    for (size_t k = lo; k-- > 0 && lo - k <= 8;)
        if (by[k].op == c->op && by[k].exit >= c->enter)
            return 1;
    return 0;
}

/* Rule 7: does c (CPU-timed, unkeyed) overlap a keyed CPU-timed call of
 * its op, by[0, n) sorted by enter, on its thread (any thread: any_track)? */
static int is_keyed_cpu_twin(const struct xr_coll *c, const struct keyed_span *by, size_t n, int any_track)
{
    size_t lo = first_entering_after(by, n, c->exit);

    for (size_t k = lo; k-- > 0 && lo - k <= 32;)
        if (by[k].op == c->op && (any_track || by[k].track == c->track) && by[k].exit >= c->enter)
            return 1;
    return 0;
}

/* Unkeyed rows of one rank: rules 2-7 of the file comment. The rank's
 * keyed calls are x->coll.v[first, x->coll.n) on entry. */
static int unkeyed_calls(struct xr_ctx *x, struct row *v, size_t n, size_t first)
{
    size_t nk = 0, nc = 0;
    struct keyed_span *by = malloc((x->coll.n - first + 1) * sizeof *by);
    struct keyed_span *cpu = malloc((x->coll.n - first + 1) * sizeof *cpu);

    if (!by || !cpu) {
        free(by);
        free(cpu);
        return HM_ENOMEM;
    }
    for (size_t i = first; i < x->coll.n; i++) {
        const struct xr_coll *k = &x->coll.v[i];
        if (k->src == XR_SRC_GPU)
            by[nk++] = (struct keyed_span){k->enter, k->exit, k->op, k->track};
        else
            cpu[nc++] = (struct keyed_span){k->enter, k->exit, k->op, k->track};
    }
    xr_sort(by, nk, sizeof *by, cmp_span);
    xr_sort(cpu, nc, sizeof *cpu, cmp_span);
    for (size_t i = 0; i < n; i++) {
        struct row *r = &v[i];
        struct xr_coll *c;
        if (r->keytype >= 0)
            continue;
        if (r->src == XR_SRC_CPU && gpu_has_ext(v, n, r->ext))
            continue;
        if (r->src == XR_SRC_ANNOT && cpu_overlaps(v, n, r->track, r->enter, r->exit))
            continue;
        if (!(c = push_coll(x, r, XR_KEY_ORDER))) {
            free(by);
            free(cpu);
            return HM_ENOMEM;
        }
        if (c->src != XR_SRC_GPU && is_keyed_cpu_twin(c, cpu, nc, c->src == XR_SRC_ANNOT)) {
            x->coll.n--;
            continue;
        }
        if (c->src != XR_SRC_GPU && x->ranks && c->rank < x->nranks)
            project_to_kernels(x, c);
        if (r->src != XR_SRC_GPU && c->src == XR_SRC_GPU && is_keyed_twin(c, by, nk))
            x->coll.n--;
    }
    free(by);
    free(cpu);
    return 0;
}

static int rank_calls(struct xr_ctx *x, struct row *v, size_t n)
{
    size_t first = x->coll.n;
    int rc = keyed_calls(x, v, n);
    return rc ? rc : unkeyed_calls(x, v, n, first);
}

int xr_match_collect(struct xr_ctx *x, struct hm_err *err)
{
    sqlite3_stmt *st = NULL;
    row_vec rows = {0};
    size_t lo = 0;
    int rc = xr_prepare(x, hm_sql_xrank_collectives, &st, err), s;

    if (rc == 0)
        HM_COLUMNS_CHECK(st, coll_names);

    while (rc == 0 && (s = sqlite3_step(st)) == SQLITE_ROW) {
        struct row r, *p;
        int k = read_row(x, st, &r);
        if (k == 1)
            continue;
        if (k || !(p = HM_VEC_PUSH(rows)))
            rc = hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");
        else
            *p = r;
    }
    if (rc == 0 && s != SQLITE_DONE)
        rc = xr_sql_fail(x, err, "reading collectives");
    sqlite3_finalize(st);
    for (size_t i = 1; rc == 0 && i <= rows.n; i++) {
        if (i < rows.n && rows.v[i].rank == rows.v[lo].rank)
            continue;
        if (rank_calls(x, rows.v + lo, i - lo))
            rc = hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");
        lo = i;
    }
    HM_VEC_FREE(rows);
    return rc;
}

/* --- Instances ------------------------------------------------------------- */

/* Sort order that puts the members of one instance next to each other. */
static int cmp_inst_key(const struct xr_coll *a, const struct xr_coll *b)
{
    if (a->keytype != b->keytype)
        return a->keytype < b->keytype ? -1 : 1;
    if (a->pg != b->pg)
        return a->pg < b->pg ? -1 : 1;
    if (a->keytype == XR_KEY_ORDER) {
        if (a->op != b->op)
            return a->op < b->op ? -1 : 1;
        if (a->size_key != b->size_key)
            return a->size_key < b->size_key ? -1 : 1;
        if (a->step != b->step)
            return a->step < b->step ? -1 : 1;
    }
    if (a->seq != b->seq)
        return a->seq < b->seq ? -1 : 1;
    return 0;
}

static const struct xr_coll *sort_base;

static int cmp_member(const void *pa, const void *pb)
{
    const struct xr_coll *a = &sort_base[*(const size_t *)pa], *b = &sort_base[*(const size_t *)pb];
    int c = cmp_inst_key(a, b);
    if (c)
        return c;
    if (a->rank != b->rank)
        return a->rank < b->rank ? -1 : 1;
    return (a->enter > b->enter) - (a->enter < b->enter);
}

/* Calls in (rank, pg, op, size, step, enter) order, for numbering. */
static int cmp_order(const void *pa, const void *pb)
{
    const struct xr_coll *a = &sort_base[*(const size_t *)pa], *b = &sort_base[*(const size_t *)pb];
    if (a->keytype != b->keytype)
        return a->keytype < b->keytype ? -1 : 1;
    if (a->rank != b->rank)
        return a->rank < b->rank ? -1 : 1;
    if (a->pg != b->pg || a->op != b->op || a->size_key != b->size_key || a->step != b->step)
        return cmp_inst_key(a, b);
    return (a->enter > b->enter) - (a->enter < b->enter);
}

/* Numbers the unkeyed calls of each (rank, pg, op, size key, step) 0, 1,
 * ... by enter time; only_any: only those in the second pass. (qsort's
 * comparator needs the array: a file-scope pointer, set and used only
 * inside this call and build_instances.) */
static void number_unkeyed(struct xr_ctx *x, size_t *idx, int only_any)
{
    size_t n = x->coll.n;
    int64_t k = 0;

    for (size_t i = 0; i < n; i++)
        idx[i] = i;
    sort_base = x->coll.v;
    xr_sort(idx, n, sizeof *idx, cmp_order);
    for (size_t i = 0; i < n; i++) {
        struct xr_coll *c = &x->coll.v[idx[i]], *p = i ? &x->coll.v[idx[i - 1]] : NULL;
        if (c->keytype != XR_KEY_ORDER || (only_any && c->size_key != XR_ANY_SIZE))
            continue;
        k = p && p->keytype == XR_KEY_ORDER && p->rank == c->rank && p->pg == c->pg &&
                    p->op == c->op && p->size_key == c->size_key && p->step == c->step
                ? k + 1
                : 0;
        c->seq = k;
    }
}

static int add_instance(struct xr_ctx *x, size_t lo, size_t hi)
{
    struct xr_inst *in = HM_VEC_PUSH(x->inst);
    const struct xr_coll *c = &x->coll.v[x->members.v[lo]];

    if (!in)
        return HM_ENOMEM;
    *in = (struct xr_inst){.keytype = c->keytype, .pg = c->pg, .op = c->op, .seq = c->seq,
                           .step = HM_NONE, .group_size = HM_NONE, .first = lo, .n = hi - lo,
                           .late_rank = -1};
    for (size_t i = lo; i < hi; i++) {
        struct xr_coll *m = &x->coll.v[x->members.v[i]];
        m->inst = (int64_t)(x->inst.n - 1);
        if (in->step == HM_NONE || (m->step != HM_NONE && m->step < in->step))
            in->step = m->step;
        if (in->group_size == HM_NONE)
            in->group_size = m->group_size;
    }
    in->analysed = in->n >= 2 && !xr_op_is_p2p(xr_name(x, in->op));
    return 0;
}

static int build_instances(struct xr_ctx *x, int only_any)
{
    size_t n = x->coll.n, lo = 0;
    size_t *idx = malloc((n ? n : 1) * sizeof *idx);

    if (!idx || hm_vec_reserve((void **)&x->members.v, &x->members.cap, n + 1, sizeof(size_t))) {
        free(idx);
        return HM_ENOMEM;
    }
    x->inst.n = 0;
    number_unkeyed(x, idx, only_any);
    xr_sort(idx, n, sizeof *idx, cmp_member);
    memcpy(x->members.v, idx, n * sizeof *idx);
    x->members.n = n;
    free(idx);
    for (size_t i = 1; i <= n; i++) {
        const struct xr_coll *a = &x->coll.v[x->members.v[lo]];
        if (i < n && cmp_inst_key(&x->coll.v[x->members.v[i]], a) == 0 &&
            x->coll.v[x->members.v[i]].rank != x->coll.v[x->members.v[i - 1]].rank)
            continue;
        if (add_instance(x, lo, i))
            return HM_ENOMEM;
        lo = i;
    }
    return 0;
}

/* Ops whose size is the same on every rank: two calls of different sizes
 * are never one collective, so they get no second pass. */
static int same_size_everywhere(const char *op)
{
    static const char *const same[] = {"allreduce", "allreducecoalesced", "broadcast", "reduce",
                                       "allgatherbase", "allgatherintotensor", "reducescatterbase",
                                       "reducescattertensor", "barrier", NULL};
    for (int i = 0; same[i]; i++)
        if (!strcmp(op, same[i]))
            return 1;
    return 0;
}

/* Marks the unkeyed calls left alone by the first pass for the second;
 * returns how many. */
static size_t mark_leftovers(struct xr_ctx *x)
{
    size_t n = 0;

    for (size_t i = 0; i < x->inst.n; i++) {
        const struct xr_inst *in = &x->inst.v[i];
        if (in->keytype == XR_KEY_ORDER && in->n == 1 && !same_size_everywhere(xr_name(x, in->op))) {
            x->coll.v[x->members.v[in->first]].size_key = XR_ANY_SIZE;
            n++;
        }
    }
    return n;
}

int xr_match_build(struct xr_ctx *x, struct hm_err *err)
{
    int rc = build_instances(x, 0);

    if (rc == 0 && mark_leftovers(x) >= 2)
        rc = build_instances(x, 1);
    if (rc)
        return hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");
    xr_match_summarise(x);
    return 0;
}

void xr_match_summarise(struct xr_ctx *x)
{
    for (size_t i = 0; i < x->inst.n; i++) {
        struct xr_inst *in = &x->inst.v[i];
        in->first_enter = in->min_exit = INT64_MAX;
        in->last_enter = in->max_exit = INT64_MIN;
        in->late_rank = -1;
        for (size_t k = in->first; k < in->first + in->n; k++) {
            const struct xr_coll *m = &x->coll.v[x->members.v[k]];
            if (m->enter < in->first_enter)
                in->first_enter = m->enter;
            if (m->enter > in->last_enter) {
                in->last_enter = m->enter;
                in->late_rank = m->rank;
            }
            if (m->exit < in->min_exit)
                in->min_exit = m->exit;
            if (m->exit > in->max_exit)
                in->max_exit = m->exit;
        }
        if (in->n < 2 || in->last_enter == in->first_enter)
            in->late_rank = -1;
    }
}

/* --- Storing --------------------------------------------------------------- */

static const char *const keytype_name[] = {"pg_seq", "comms_id", "order"};
static const char *const src_name[] = {"gpu", "cpu", "annotation"};

static void bind_name(struct xr_ctx *x, sqlite3_stmt *st, int i, int64_t id)
{
    if (id)
        sqlite3_bind_text(st, i, xr_name(x, id), -1, SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(st, i);
}

static int store_instance(struct xr_ctx *x, sqlite3_stmt *st, struct xr_inst *in)
{
    const struct xr_coll *m0 = &x->coll.v[x->members.v[in->first]];

    bind_name(x, st, 1, in->pg);
    bind_name(x, st, 2, in->op);
    xr_bind_opt(st, 3, in->seq);
    sqlite3_bind_text(st, 4, keytype_name[in->keytype], -1, SQLITE_STATIC);
    xr_bind_opt(st, 5, in->step);
    xr_bind_opt(st, 6, m0->size);
    xr_bind_opt(st, 7, in->group_size);
    sqlite3_bind_int64(st, 8, (int64_t)in->n);
    sqlite3_bind_int(st, 9, in->analysed);
    sqlite3_bind_int64(st, 10, in->first_enter);
    sqlite3_bind_int64(st, 11, in->last_enter);
    xr_bind_opt(st, 12, in->late_rank >= 0 ? in->late_rank : HM_NONE);
    sqlite3_bind_int64(st, 13, in->last_enter - in->first_enter);
    sqlite3_bind_int64(st, 14, in->min_exit);
    sqlite3_bind_int64(st, 15, in->max_exit);
    if (sqlite3_step(st) != SQLITE_DONE) {
        sqlite3_reset(st);
        return -1;
    }
    sqlite3_reset(st);
    in->id = sqlite3_last_insert_rowid(x->db);
    return 0;
}

static int store_member(sqlite3_stmt *st, const struct xr_inst *in, const struct xr_coll *m)
{
    int rc;

    sqlite3_bind_int64(st, 1, in->id);
    sqlite3_bind_int(st, 2, m->rank);
    sqlite3_bind_int64(st, 3, m->row);
    sqlite3_bind_text(st, 4, src_name[m->src], -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 5, m->enter);
    sqlite3_bind_int64(st, 6, m->exit);
    sqlite3_bind_int64(st, 7, m->repair);
    sqlite3_bind_int(st, 8, m->late);
    sqlite3_bind_int64(st, 9, m->wait);
    sqlite3_bind_int64(st, 10, m->completion);
    sqlite3_bind_int64(st, 11, m->blame);
    rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? 0 : -1;
}

int xr_match_store(struct xr_ctx *x, struct hm_err *err)
{
    sqlite3_stmt *si = NULL, *sm = NULL;
    int rc = xr_prepare(x, hm_sql_xrank_insert_instance, &si, err);

    if (rc == 0)
        rc = xr_prepare(x, hm_sql_xrank_insert_member, &sm, err);
    for (size_t i = 0; rc == 0 && i < x->inst.n; i++) {
        struct xr_inst *in = &x->inst.v[i];
        if (store_instance(x, si, in))
            rc = xr_sql_fail(x, err, "storing collective instances");
        for (size_t k = in->first; rc == 0 && k < in->first + in->n; k++)
            if (store_member(sm, in, &x->coll.v[x->members.v[k]]))
                rc = xr_sql_fail(x, err, "storing collective instance ranks");
    }
    sqlite3_finalize(si);
    sqlite3_finalize(sm);
    return rc;
}

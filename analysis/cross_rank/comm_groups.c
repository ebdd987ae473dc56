/* Communication by process group (comm_groups.h): the groups' facts, then
 * one sweep per rank over the boundaries of its computation kernels, its
 * collectives (by group) and its steps. */
#include "comm_groups.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "hm_sql.h"
#include "store/columns.h"

#define UNKEYED "(unkeyed)"

/* ---- dimensions ---------------------------------------------------------- */

static int token_is(const char *tok, size_t n, const char *const *words)
{
    for (; *words; words++)
        if (strlen(*words) == n && !strncasecmp(tok, *words, n))
            return 1;
    return 0;
}

static int has_token(const char *s, const char *const *words)
{
    while (s && *s) {
        size_t n = strcspn(s, "_-: /.");
        if (n && token_is(s, n, words))
            return 1;
        s += n + (s[n] != '\0');
    }
    return 0;
}

const char *xr_pg_dimension(const char *name, const char *desc)
{
    static const char *const fsdp[] = {"fsdp", "shard", "sharding", NULL};
    static const char *const dp[] = {"dp", "ddp", "data", "replicate", NULL};
    static const char *const tp[] = {"tp", "tensor", NULL};
    static const char *const pp[] = {"pp", "pipe", "pipeline", NULL};
    static const char *const ep[] = {"ep", "expert", "experts", "moe", NULL};
    static const char *const cp[] = {"cp", "context", "sp", "sequence", NULL};
    static const char *const world[] = {"default", "world", NULL};
    static const struct { const char *dim; const char *const *words; } dims[] = {
        {"fsdp", fsdp}, {"dp", dp}, {"tp", tp}, {"pp", pp}, {"ep", ep}, {"cp", cp}, {"world", world}};

    /* "dp_shard" (torchtitan's FSDP dimension) is fsdp, so fsdp's words
     * come first; the description before the name, which is often a number. */
    for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++)
        if (has_token(desc, dims[i].words) || has_token(name, dims[i].words))
            return dims[i].dim;
    if (name && !strcmp(name, "0") && (!desc || !*desc))
        return "world";   /* torch names the default group "0" */
    return NULL;
}

#define PG_FACT_COLUMNS(X)                                                                     \
    X(PF_PG, "pg") X(PF_CALLS, "calls") X(PF_SIZE, "size") X(PF_DESC, "description") X(PF_RANKS, "ranks")
enum { PG_FACT_COLUMNS(HM_COLUMN_ENUM) };
static const char *const pg_fact_names[] = {PG_FACT_COLUMNS(HM_COLUMN_NAME)};

static int store_groups(struct xr_ctx *x, struct hm_err *err)
{
    sqlite3_stmt *q = NULL, *ins = NULL;
    int rc = xr_prepare(x, hm_sql_xrank_pg_facts, &q, err), s;

    if (rc == 0) {
        HM_COLUMNS_CHECK(q, pg_fact_names);
        rc = xr_prepare(x, hm_sql_xrank_insert_pg, &ins, err);
    }
    while (rc == 0 && (s = sqlite3_step(q)) == SQLITE_ROW) {
        const char *pg = (const char *)sqlite3_column_text(q, PF_PG);
        const char *desc = (const char *)sqlite3_column_text(q, PF_DESC);
        const char *dim = xr_pg_dimension(pg, desc);

        sqlite3_bind_text(ins, 1, pg, -1, SQLITE_TRANSIENT);
        if (dim)
            sqlite3_bind_text(ins, 2, dim, -1, SQLITE_STATIC);
        else
            sqlite3_bind_null(ins, 2);
        sqlite3_bind_value(ins, 3, sqlite3_column_value(q, PF_DESC));
        sqlite3_bind_value(ins, 4, sqlite3_column_value(q, PF_RANKS));
        sqlite3_bind_value(ins, 5, sqlite3_column_value(q, PF_SIZE));
        sqlite3_bind_value(ins, 6, sqlite3_column_value(q, PF_CALLS));
        if (sqlite3_step(ins) != SQLITE_DONE)
            rc = xr_sql_fail(x, err, "storing a process group");
        sqlite3_reset(ins);
        sqlite3_clear_bindings(ins);
    }
    if (rc == 0 && s != SQLITE_DONE)
        rc = xr_sql_fail(x, err, "reading the process groups");
    sqlite3_finalize(q);
    sqlite3_finalize(ins);
    return rc;
}

/* ---- exposed time per group ----------------------------------------------- */

enum { E_COMP = -1, E_STEP = -2 };   /* else: a group's index in the rank's list */

struct edge {
    int64_t t;
    int what;     /* E_COMP, E_STEP or a group index */
    int delta;    /* +1 open, -1 close */
    int64_t step; /* E_STEP: index into the rank's steps */
};

typedef HM_VEC(struct edge) edge_vec;

static int cmp_edge(const void *pa, const void *pb)
{
    const struct edge *a = pa, *b = pb;
    if (a->t != b->t)
        return a->t < b->t ? -1 : 1;
    return a->delta - b->delta;   /* closes first: touching intervals do not overlap */
}

static int push(edge_vec *v, int64_t a, int64_t b, int what, int64_t step)
{
    struct edge *e;
    if (b <= a)
        return 0;
    if (!(e = HM_VEC_PUSH(*v)))
        return HM_ENOMEM;
    *e = (struct edge){a, what, +1, step};
    if (!(e = HM_VEC_PUSH(*v)))
        return HM_ENOMEM;
    *e = (struct edge){b, what, -1, step};
    return 0;
}

/* One rank's groups: names ids of x->names, in order of first use. */
struct rank_groups {
    int64_t *pg;
    int n, cap;
};

static int group_index(struct rank_groups *g, int64_t pg)
{
    for (int i = 0; i < g->n; i++)
        if (g->pg[i] == pg)
            return i;
    if (g->n == g->cap) {
        int cap = g->cap ? 2 * g->cap : 8;
        int64_t *p = realloc(g->pg, (size_t)cap * sizeof *p);
        if (!p)
            return -1;
        g->pg = p;
        g->cap = cap;
    }
    g->pg[g->n] = pg;
    return g->n++;
}

struct acc {
    double comm, exposed;
};

static int store_rank(struct xr_ctx *x, sqlite3_stmt *st, const struct xr_rank *k, const struct rank_groups *g,
                      const struct acc *acc, size_t nslots, struct hm_err *err)
{
    for (size_t s = 0; s < nslots; s++)
        for (int i = 0; i < g->n; i++) {
            const struct acc *a = &acc[s * (size_t)g->n + (size_t)i];
            const char *pg = g->pg[i] ? xr_name(x, g->pg[i]) : UNKEYED;
            if (a->comm <= 0)
                continue;
            sqlite3_bind_int(st, 1, k->rank);
            if (k->steps.n)
                sqlite3_bind_int64(st, 2, k->steps.v[s].number);
            else
                sqlite3_bind_null(st, 2);
            sqlite3_bind_text(st, 3, pg, -1, SQLITE_TRANSIENT);
            sqlite3_bind_int64(st, 4, (int64_t)(a->comm + 0.5));
            sqlite3_bind_int64(st, 5, (int64_t)(a->exposed + 0.5));
            if (sqlite3_step(st) != SQLITE_DONE) {
                sqlite3_reset(st);
                return xr_sql_fail(x, err, "storing exposed communication");
            }
            sqlite3_reset(st);
        }
    return 0;
}

/* Sweeps rank k: in each segment between two edges, every open group adds
 * the segment to its comm time, and when no computation runs, its share
 * (segment / open groups) to its exposed time. Inside steps only when the
 * rank has steps; its whole run otherwise. */
static int rank_exposed(struct xr_ctx *x, sqlite3_stmt *st, const struct xr_rank *k, struct hm_err *err)
{
    struct rank_groups g = {0};
    edge_vec v = {0};
    struct acc *acc = NULL;
    int *open = NULL, comp = 0, nopen = 0, rc = 0;
    int64_t cur = k->steps.n ? -1 : 0;
    size_t nslots = k->steps.n ? k->steps.n : 1;

    for (size_t i = 0; i < x->coll.n && rc == 0; i++) {
        const struct xr_coll *c = &x->coll.v[i];
        int gi;
        if (c->rank != k->rank)
            continue;
        if ((gi = group_index(&g, c->pg)) < 0)
            rc = HM_ENOMEM;
        else
            rc = push(&v, c->enter, c->exit, gi, 0);
    }
    for (size_t i = 0; i < k->gpu.n && rc == 0 && g.n; i++)
        if (k->gpu.v[i].kclass == XR_COMP)
            rc = push(&v, k->gpu.v[i].ts, k->gpu.v[i].end, E_COMP, 0);
    for (size_t i = 0; i < k->steps.n && rc == 0 && g.n; i++)
        rc = push(&v, k->steps.v[i].ts, k->steps.v[i].end, E_STEP, (int64_t)i);
    if (rc == 0 && g.n) {
        acc = calloc(nslots * (size_t)g.n, sizeof *acc);
        open = calloc((size_t)g.n, sizeof *open);
        if (!acc || !open)
            rc = HM_ENOMEM;
    }
    if (rc == 0 && g.n) {
        xr_sort(v.v, v.n, sizeof *v.v, cmp_edge);
        for (size_t i = 0; i < v.n; i++) {
            const struct edge *e = &v.v[i];
            if (i > 0 && cur >= 0 && nopen > 0 && e->t > v.v[i - 1].t) {
                double seg = (double)(e->t - v.v[i - 1].t);
                struct acc *row = &acc[(size_t)cur * (size_t)g.n];
                for (int j = 0; j < g.n; j++)
                    if (open[j] > 0) {
                        row[j].comm += seg;
                        if (comp == 0)
                            row[j].exposed += seg / nopen;
                    }
            }
            if (e->what == E_COMP) {
                comp += e->delta;
            } else if (e->what == E_STEP) {
                cur = e->delta > 0 ? e->step : -1;
            } else {
                int was = open[e->what] > 0;
                open[e->what] += e->delta;
                nopen += (open[e->what] > 0) - was;
            }
        }
        rc = store_rank(x, st, k, &g, acc, nslots, err);
    } else if (rc) {
        rc = hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory in the communication by group");
    }
    HM_VEC_FREE(v);
    free(g.pg);
    free(acc);
    free(open);
    return rc;
}

int xr_comm_groups(struct xr_ctx *x, struct hm_err *err)
{
    sqlite3_stmt *st = NULL;
    int rc = store_groups(x, err);

    if (rc == 0)
        rc = xr_prepare(x, hm_sql_xrank_insert_exposed, &st, err);
    for (int r = 0; r < x->nranks && rc == 0; r++)
        if (x->ranks[r].present) {
            rc = rank_exposed(x, st, &x->ranks[r], err);
            xr_rank_touched(x, &x->ranks[r]);
        }
    sqlite3_finalize(st);
    return rc;
}

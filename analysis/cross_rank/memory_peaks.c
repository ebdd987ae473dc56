/* Memory peaks per rank, device, step and phase (memory_peaks.h): one pass
 * over the samples in (rank, device, time) order, a cell per (step, phase)
 * of the current rank and device, written when the device changes. */
#include "memory_peaks.h"

#include <stdlib.h>
#include <string.h>

#include "common/record.h"
#include "hm_sql.h"
#include "phases.h"
#include "store/columns.h"

#define SAMPLE_COLUMNS(X) \
    X(MS_RANK, "rank") X(MS_DEVICE, "device") X(MS_TS, "ts") X(MS_VALUE, "value") X(MS_RESERVED, "reserved")
enum { SAMPLE_COLUMNS(HM_COLUMN_ENUM) MS__COUNT };
static const char *const sample_names[] = {SAMPLE_COLUMNS(HM_COLUMN_NAME)};

static const char *const phase_name[] = {[XR_PH_FWD] = "forward", [XR_PH_BWD] = "backward",
                                         [XR_PH_OPT] = "optimizer", [XR_PH_OTHER] = "other"};
#define NPHASES 4

struct cell {
    int64_t samples;
    double allocated, reserved;   /* -1: none sampled */
    int64_t peak_ns;
};

/* The samples of one rank and device being gathered. */
struct group {
    int rank;                     /* -1 before the first sample */
    int64_t device;
    const struct xr_rank *k;      /* NULL: a rank without a ranks row */
    struct xr_phases phases;
    struct cell *cells;           /* (steps + 1) x NPHASES: row 0 is outside every step */
    size_t ncells;
    const struct cell *last;      /* the previous sample's cell; NULL at the group's start */
    double level_alloc, level_reserved;   /* the latest samples: what is in use now */
};

/* Index into k->steps of the step holding t (steps are in number order,
 * which is time order), or -1. */
static long step_at(const struct xr_rank *k, int64_t t)
{
    size_t lo = 0, hi = k ? k->steps.n : 0;

    while (lo < hi) {   /* first step starting after t */
        size_t m = (lo + hi) / 2;
        if (k->steps.v[m].ts <= t)
            lo = m + 1;
        else
            hi = m;
    }
    return lo > 0 && t < k->steps.v[lo - 1].end ? (long)lo - 1 : -1;
}

static int flush(sqlite3_stmt *st, struct group *g)
{
    for (size_t i = 0; i < g->ncells; i++) {
        const struct cell *c = &g->cells[i];
        long s = (long)(i / NPHASES) - 1;
        if (!c->samples)
            continue;
        sqlite3_bind_int64(st, 1, g->rank);
        sqlite3_bind_int64(st, 2, g->device);
        xr_bind_opt(st, 3, s >= 0 ? g->k->steps.v[s].number : HM_NONE);
        sqlite3_bind_text(st, 4, phase_name[i % NPHASES], -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 5, c->samples);
        if (c->allocated >= 0)
            sqlite3_bind_int64(st, 6, (int64_t)c->allocated);
        else
            sqlite3_bind_null(st, 6);
        if (c->reserved >= 0)
            sqlite3_bind_int64(st, 7, (int64_t)c->reserved);
        else
            sqlite3_bind_null(st, 7);
        xr_bind_opt(st, 8, c->allocated >= 0 ? c->peak_ns : HM_NONE);
        if (sqlite3_step(st) != SQLITE_DONE) {
            sqlite3_reset(st);
            return -1;
        }
        sqlite3_reset(st);
    }
    return 0;
}

/* Starts the group of (rank, device): its phases and empty cells. */
static int begin(struct xr_ctx *x, struct group *g, int rank, int64_t device)
{
    int same_rank = g->rank == rank;

    g->rank = rank;
    g->device = device;
    if (!same_rank) {
        xr_phases_free(&g->phases);
        g->k = rank >= 0 && rank < x->nranks && x->ranks[rank].present ? &x->ranks[rank] : NULL;
        if (g->k && xr_phases_of(x, g->k, &g->phases))
            return HM_ENOMEM;
        if (g->k)   /* the phases read the rank's view: 26 MB stayed resident at 1,024 ranks */
            xr_rank_touched(x, g->k);
        free(g->cells);
        g->ncells = ((g->k ? g->k->steps.n : 0) + 1) * NPHASES;
        if (!(g->cells = malloc(g->ncells * sizeof *g->cells)))
            return HM_ENOMEM;
    }
    for (size_t i = 0; i < g->ncells; i++)
        g->cells[i] = (struct cell){0, -1, -1, 0};
    g->last = NULL;
    g->level_alloc = g->level_reserved = -1;
    return 0;
}

int xr_memory_peaks(struct xr_ctx *x, struct hm_err *err)
{
    sqlite3_stmt *q = NULL, *ins = NULL;
    struct group g = {.rank = -1};
    int rc = xr_prepare(x, hm_sql_xrank_memory_samples, &q, err), s = SQLITE_DONE, any = 0;

    if (rc == 0)
        rc = xr_prepare(x, hm_sql_xrank_insert_memory, &ins, err);
    if (rc == 0)
        HM_COLUMNS_CHECK(q, sample_names);
    while (rc == 0 && (s = sqlite3_step(q)) == SQLITE_ROW) {
        int rank = (int)sqlite3_column_int64(q, MS_RANK);
        int64_t device = sqlite3_column_int64(q, MS_DEVICE), t = sqlite3_column_int64(q, MS_TS);
        double v = sqlite3_column_double(q, MS_VALUE);
        struct cell *c;
        long si;
        int kind;
        int64_t phase_start = INT64_MIN;

        if (!any || rank != g.rank || device != g.device) {
            if (any && flush(ins, &g))
                rc = xr_sql_fail(x, err, "storing memory peaks");
            else if (begin(x, &g, rank, device))
                rc = hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");
            any = 1;
            if (rc)
                break;
        }
        si = step_at(g.k, t);
        kind = g.k ? xr_phase_find(&g.phases, t, &phase_start) : XR_PH_OTHER;
        c = &g.cells[(size_t)(si + 1) * NPHASES + (size_t)kind];
        /* What was in use when the phase began counts for it: the last
         * sample before, unless this one is at the phase's start (the
         * hooks sample there; between their sparse samples memory may have
         * been freed, which an allocator trace would have shown). */
        if (c != g.last && g.last && t != phase_start) {
            if (g.level_alloc > c->allocated) {
                c->allocated = g.level_alloc;
                c->peak_ns = t;
            }
            c->reserved = g.level_reserved > c->reserved ? g.level_reserved : c->reserved;
        }
        g.last = c;
        c->samples++;
        if (sqlite3_column_int64(q, MS_RESERVED)) {
            c->reserved = v > c->reserved ? v : c->reserved;
            g.level_reserved = v;
        } else {
            if (v > c->allocated) {
                c->allocated = v;
                c->peak_ns = t;
            }
            g.level_alloc = v;
        }
    }
    if (rc == 0 && s != SQLITE_DONE)
        rc = xr_sql_fail(x, err, "reading the memory samples");
    if (rc == 0 && any && flush(ins, &g))
        rc = xr_sql_fail(x, err, "storing memory peaks");
    xr_phases_free(&g.phases);
    free(g.cells);
    sqlite3_finalize(q);
    sqlite3_finalize(ins);
    return rc;
}

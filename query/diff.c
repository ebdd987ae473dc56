/* Comparing two merged runs: the numbers of `report` (steps, temporal,
 * overlap, idle, kernels, stragglers) are built on both files by the same
 * builders, reduced to one value per rank and metric, and NEW is judged
 * against BASE. Rendering lives in diff_render.c.
 *
 * Runs of different length compare because run totals are divided by each
 * rank's analysed ProfilerSteps; runs of different rank counts compare
 * because overall values are means over each run's own ranks (per-rank rows
 * cover the ranks both have). The gate is the overall mean step time, or,
 * when neither run has steps, the GPU time window. A pair where only one
 * run has steps cannot be gated: the document says so (comparable false). */
#include "diff.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

enum diff_metric {
    M_STEP_TIME, M_GPU_BUSY, M_EXPOSED_COMM, M_GPU_WINDOW, M_COMPUTE, M_NON_COMPUTE, M_IDLE,
    M_IDLE_PCT, M_COMPUTE_PCT, M_COMM, M_OVERLAP_PCT, M_HOST_WAIT, M_KERNEL_WAIT, M_OTHER_WAIT,
    M_LATE_FRACTION, M_BLAME, M_WAIT, N_METRICS
};

/* How a metric is reduced and when it can be compared. */
enum diff_kind {
    K_STEP,   /* a mean over analysed steps: only when both runs have steps */
    K_TOTAL,  /* a run total: per analysed step when both runs have steps, as is when neither has */
    K_RATIO,  /* a percentage or fraction: always comparable */
};

static const struct metric_def {
    const char *step_name;   /* name when both runs have steps; NULL: not shown then */
    const char *total_name;  /* name when neither has; NULL: not shown then */
    enum diff_kind kind;
    int better;              /* -1: lower is better, +1: higher is better */
    bool overall;            /* has an overall row (a mean over ranks that means something) */
} metric_defs[N_METRICS] = {
    [M_STEP_TIME] = {"step_time_mean_us", NULL, K_STEP, -1, true},
    [M_GPU_BUSY] = {"gpu_busy_us_per_step", NULL, K_STEP, -1, true},
    [M_EXPOSED_COMM] = {"exposed_comm_us_per_step", NULL, K_STEP, -1, true},
    [M_GPU_WINDOW] = {NULL, "gpu_window_us", K_TOTAL, -1, true},
    [M_COMPUTE] = {"compute_us_per_step", "compute_us", K_TOTAL, -1, true},
    [M_NON_COMPUTE] = {"non_compute_us_per_step", "non_compute_us", K_TOTAL, -1, true},
    [M_IDLE] = {"idle_us_per_step", "idle_us", K_TOTAL, -1, true},
    [M_IDLE_PCT] = {"idle_pct", "idle_pct", K_RATIO, -1, true},
    [M_COMPUTE_PCT] = {"compute_pct", "compute_pct", K_RATIO, +1, true},
    [M_COMM] = {"comm_us_per_step", "comm_us", K_TOTAL, -1, true},
    [M_OVERLAP_PCT] = {"overlap_pct", "overlap_pct", K_RATIO, +1, true},
    [M_HOST_WAIT] = {"host_wait_us_per_step", "host_wait_us", K_TOTAL, -1, true},
    [M_KERNEL_WAIT] = {"kernel_wait_us_per_step", "kernel_wait_us", K_TOTAL, -1, true},
    [M_OTHER_WAIT] = {"other_wait_us_per_step", "other_wait_us", K_TOTAL, -1, true},
    [M_LATE_FRACTION] = {"late_fraction", "late_fraction", K_RATIO, -1, false},
    [M_BLAME] = {"blame_us_per_step", "blame_us", K_TOTAL, -1, true},
    [M_WAIT] = {"wait_us_per_step", "wait_us", K_TOTAL, -1, true},
};

/* One rank's values: sums while loading, then reduced by run_reduce. */
struct rank_vals {
    int rank;
    int nsteps;              /* analysed ProfilerSteps */
    double v[N_METRICS];
    int cnt[N_METRICS];      /* values summed into v; 0: none */
};

struct run {
    const char *name;        /* borrowed from the options */
    struct rank_vals *r;     /* owned, sorted by rank */
    int n;
    cJSON *kernel_types;     /* owned: detached from the kernels document */
    cJSON *straggler;        /* owned: the verdict's rank or null */
    char *status;            /* owned: meta.run_status, or NULL */
    int step_ranks;          /* ranks with at least one analysed step */
    long steps;              /* analysed steps over all ranks */
};

enum diff_mode {
    MODE_STEPS,   /* both runs have steps */
    MODE_TOTALS,  /* neither has */
    MODE_RATIOS,  /* one has: only ratios compare */
};

struct diff_ctx {
    const struct qry_diff_opts *o;
    struct run base, new;
    enum diff_mode mode;
    cJSON *metrics, *notes;         /* owned until diff_document moves them into doc */
    cJSON *doc;                     /* owned until qry_diff_build hands it to the caller */
};

/* ---- loading one run ---- */

static double num(const cJSON *row, const char *key, bool *ok)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(row, key);
    *ok = cJSON_IsNumber(v);
    return *ok ? v->valuedouble : 0;
}

static int by_rank(const void *a, const void *b)
{
    const struct rank_vals *x = a, *y = b;
    return (x->rank > y->rank) - (x->rank < y->rank);
}

static struct rank_vals *rank_find(struct run *run, const cJSON *row)
{
    bool ok;
    struct rank_vals key = {.rank = (int)num(row, "rank", &ok)};
    return ok && run->n ? bsearch(&key, run->r, (size_t)run->n, sizeof key, by_rank) : NULL;
}

/* Adds row[key] (when a number) to metric m of the row's rank. */
static void put(struct run *run, const cJSON *row, enum diff_metric m, const char *key)
{
    struct rank_vals *rv = rank_find(run, row);
    bool ok;
    double v = num(row, key, &ok);

    if (rv && ok) {
        rv->v[m] += v;
        rv->cnt[m]++;
    }
}

static cJSON *member(const cJSON *doc, const char *key)
{
    return cJSON_GetObjectItemCaseSensitive(doc, key);
}

/* The run's ranks (the summary's ranks table: every rank in the file; its
 * scalar "ranks" member, the count, comes first) and its status. */
static int load_summary(struct run *run, cJSON *doc, int all_steps)
{
    const cJSON *ranks = NULL, *row, *st = member(doc, "run_status");
    bool ok;

    (void)all_steps;
    cJSON_ArrayForEach(row, doc)
        if (cJSON_IsArray(row) && !strcmp(row->string, "ranks"))
            ranks = row;
    run->r = calloc((size_t)cJSON_GetArraySize(ranks) + 1, sizeof *run->r);
    if (!run->r)
        return HM_ENOMEM;
    cJSON_ArrayForEach(row, ranks) {
        int rank = (int)num(row, "rank", &ok);
        if (ok)
            run->r[run->n++].rank = rank;
    }
    qsort(run->r, (size_t)run->n, sizeof *run->r, by_rank);
    if (cJSON_IsString(st) && !(run->status = strdup(st->valuestring)))
        return HM_ENOMEM;
    return 0;
}

/* Whether the step row is analysed: HTA's rule drops the last step. */
static bool step_analysed(const cJSON *row, int all_steps)
{
    bool ok;
    return all_steps || num(row, "dropped", &ok) != 1;
}

static int cmp_step(const cJSON *a, const cJSON *b)
{
    bool ok;
    double ra = num(a, "rank", &ok), rb = num(b, "rank", &ok);
    double sa = num(a, "step", &ok), sb = num(b, "step", &ok);
    return ra != rb ? (ra < rb ? -1 : 1) : (sa > sb) - (sa < sb);
}

/* Step time and GPU busy time from steps; exposed communication from the
 * breakdown, for the same analysed steps (both lists are sorted by rank,
 * step, so one walk pairs them). */
static int load_steps(struct run *run, cJSON *doc, int all_steps)
{
    const cJSON *steps = member(doc, "steps"), *s = steps ? steps->child : NULL, *b;
    struct rank_vals *rv;

    for (const cJSON *row = s; row; row = row->next) {
        if (!step_analysed(row, all_steps) || !(rv = rank_find(run, row)))
            continue;
        put(run, row, M_STEP_TIME, "dur_us");
        put(run, row, M_GPU_BUSY, "gpu_busy_us");
        rv->nsteps++;
        run->steps++;
    }
    cJSON_ArrayForEach(b, member(doc, "breakdown")) {
        while (s && cmp_step(s, b) < 0)
            s = s->next;
        if (s && cmp_step(s, b) == 0 && step_analysed(s, all_steps) && (rv = rank_find(run, b))) {
            bool ok;
            double ms = num(b, "exposed_comm_ms", &ok);
            if (ok) {
                rv->v[M_EXPOSED_COMM] += ms * 1000;
                rv->cnt[M_EXPOSED_COMM]++;
            }
        }
    }
    for (int i = 0; i < run->n; i++)
        run->step_ranks += run->r[i].nsteps > 0;
    return 0;
}

static int load_temporal(struct run *run, cJSON *doc, int all_steps)
{
    const cJSON *row;

    (void)all_steps;
    cJSON_ArrayForEach(row, member(doc, "ranks")) {
        put(run, row, M_GPU_WINDOW, "kernel_us");
        put(run, row, M_COMPUTE, "compute_us");
        put(run, row, M_NON_COMPUTE, "non_compute_us");
        put(run, row, M_IDLE, "idle_us");
        put(run, row, M_IDLE_PCT, "idle_pct");
        put(run, row, M_COMPUTE_PCT, "compute_pct");
    }
    return 0;
}

static int load_overlap(struct run *run, cJSON *doc, int all_steps)
{
    const cJSON *row;

    (void)all_steps;
    cJSON_ArrayForEach(row, member(doc, "ranks")) {
        put(run, row, M_COMM, "comm_us");
        put(run, row, M_OVERLAP_PCT, "overlap_pct");
    }
    return 0;
}

/* Idle time by cause, summed over each rank's streams. */
static int load_idle(struct run *run, cJSON *doc, int all_steps)
{
    const cJSON *row;

    (void)all_steps;
    cJSON_ArrayForEach(row, member(doc, "streams")) {
        put(run, row, M_HOST_WAIT, "host_wait_us");
        put(run, row, M_KERNEL_WAIT, "kernel_wait_us");
        put(run, row, M_OTHER_WAIT, "other_us");
    }
    return 0;
}

static int load_kernels(struct run *run, cJSON *doc, int all_steps)
{
    (void)all_steps;
    run->kernel_types = cJSON_DetachItemFromObjectCaseSensitive(doc, "kernel_types");
    return run->kernel_types ? 0 : HM_ENOMEM;
}

static int load_stragglers(struct run *run, cJSON *doc, int all_steps)
{
    const cJSON *row;

    (void)all_steps;
    cJSON_ArrayForEach(row, member(doc, "ranks")) {
        put(run, row, M_LATE_FRACTION, "late_fraction");
        put(run, row, M_BLAME, "blame_us");
        put(run, row, M_WAIT, "wait_us");
    }
    run->straggler = cJSON_DetachItemFromObjectCaseSensitive(doc, "straggler");
    return run->straggler ? 0 : HM_ENOMEM;
}

/* The report topics a diff reads, and what keeps their numbers. */
static const struct {
    const char *topic;
    int (*load)(struct run *run, cJSON *doc, int all_steps);
} topic_loaders[] = {
    {"summary", load_summary}, {"steps", load_steps},       {"temporal", load_temporal},
    {"overlap", load_overlap}, {"idle", load_idle},          {"kernels", load_kernels},
    {"stragglers", load_stragglers},
};

/* Builds each report topic on db and keeps the numbers the diff needs. */
static int run_load(sqlite3 *db, const struct qry_diff_opts *o, struct run *run, struct hm_err *err)
{
    struct qry_report_opts ro = {.all_steps = o->all_steps, .top_kernels = 1};
    int rc = 0;

    for (size_t t = 0; t < sizeof topic_loaders / sizeof *topic_loaders && rc == 0; t++) {
        cJSON *doc = NULL;
        ro.topic = topic_loaders[t].topic;
        rc = qry_report_build(db, &ro, &doc, err);
        if (rc != 0) {
            if (!err->file[0])
                hm_err_prefix(err, "%s", run->name);
            break;
        }
        rc = topic_loaders[t].load(run, doc, o->all_steps);
        cJSON_Delete(doc);
        if (rc == HM_ENOMEM)
            hm_err_set(err, rc, run->name, -1, "out of memory");
    }
    return rc;
}

static void run_free(struct run *run)
{
    free(run->r);
    free(run->status);
    cJSON_Delete(run->kernel_types);
    cJSON_Delete(run->straggler);
}

/* Turns sums into the compared values: step means, and run totals per
 * analysed step in MODE_STEPS. A value that cannot be normalised is gone. */
static void run_reduce(struct run *run, enum diff_mode mode)
{
    for (int i = 0; i < run->n; i++) {
        struct rank_vals *rv = &run->r[i];
        for (int m = 0; m < N_METRICS; m++) {
            if (!rv->cnt[m])
                continue;
            if (metric_defs[m].kind == K_STEP)
                rv->v[m] /= rv->cnt[m];
            else if (metric_defs[m].kind == K_TOTAL && mode == MODE_STEPS && rv->nsteps)
                rv->v[m] /= rv->nsteps;
            else if (metric_defs[m].kind == K_TOTAL && mode == MODE_STEPS)
                rv->cnt[m] = 0;
        }
    }
}

/* The mean of metric m over the run's ranks that have it; false if none. */
static bool run_mean(const struct run *run, int m, double *out)
{
    double sum = 0;
    int n = 0;

    for (int i = 0; i < run->n; i++)
        if (run->r[i].cnt[m]) {
            sum += run->r[i].v[m];
            n++;
        }
    *out = n ? sum / n : 0;
    return n > 0;
}

/* ---- comparing ---- */

static const char *metric_name(enum diff_mode mode, int m)
{
    const struct metric_def *d = &metric_defs[m];
    if (mode == MODE_RATIOS)
        return d->kind == K_RATIO ? d->step_name : NULL;
    return mode == MODE_STEPS ? d->step_name : d->total_name;
}

static double round_to(double v, double unit)
{
    return round(v / unit) * unit;
}

static void add_value(cJSON *row, const char *key, bool has, double v, double unit)
{
    if (has)
        cJSON_AddNumberToObject(row, key, round_to(v, unit));
    else
        cJSON_AddNullToObject(row, key);
}

/* Appends one metric row; rank < 0 for the overall row. Returns the row
 * (owned by ctx->metrics), NULL when out of memory. */
static cJSON *add_row(struct diff_ctx *c, const char *name, int rank, int better, bool hb, double b,
                      bool hn, double n)
{
    cJSON *row = cJSON_CreateObject();
    bool hp = hb && hn && b != 0;
    double pct = hp ? 100 * (n - b) / fabs(b) : 0;
    bool moved = hp && n != b && fabs(pct) >= c->o->threshold_pct;

    if (!row || !cJSON_AddItemToArray(c->metrics, row)) {
        cJSON_Delete(row);
        return NULL;
    }
    cJSON_AddStringToObject(row, "metric", name);
    if (rank >= 0)
        cJSON_AddNumberToObject(row, "rank", rank);
    else
        cJSON_AddNullToObject(row, "rank");
    add_value(row, "base", hb, b, 1e-3);
    add_value(row, "new", hn, n, 1e-3);
    add_value(row, "delta", hb && hn, n - b, 1e-3);
    add_value(row, "pct", hp, pct, 1e-2);
    cJSON_AddStringToObject(row, "better", better < 0 ? "lower" : "higher");
    cJSON_AddBoolToObject(row, "worse", moved && (n - b) * better < 0);
    cJSON_AddBoolToObject(row, "improved", moved && (n - b) * better > 0);
    return row;
}

/* The overall rows: each run's mean over its own ranks. */
static int add_overall(struct diff_ctx *c)
{
    for (int m = 0; m < N_METRICS; m++) {
        const char *name = metric_name(c->mode, m);
        double b, n;
        bool hb, hn;
        if (!name || !metric_defs[m].overall)
            continue;
        hb = run_mean(&c->base, m, &b);
        hn = run_mean(&c->new, m, &n);
        if ((hb || hn) && !add_row(c, name, -1, metric_defs[m].better, hb, b, hn, n))
            return HM_ENOMEM;
    }
    return 0;
}

/* The per-rank rows, for the ranks both runs have. */
static int add_per_rank(struct diff_ctx *c)
{
    for (int i = 0; i < c->base.n; i++) {
        const struct rank_vals *b = &c->base.r[i];
        const struct rank_vals *n = bsearch(b, c->new.r, (size_t)c->new.n, sizeof *b, by_rank);
        for (int m = 0; n && m < N_METRICS; m++) {
            const char *name = metric_name(c->mode, m);
            if (name && (b->cnt[m] || n->cnt[m]) &&
                !add_row(c, name, b->rank, metric_defs[m].better, b->cnt[m] > 0, b->v[m], n->cnt[m] > 0,
                         n->v[m]))
                return HM_ENOMEM;
        }
    }
    return 0;
}

/* The denominator that makes a run's kernel-type time (report sums it over
 * ranks) a per rank value, per analysed step when both runs have steps. */
static double kernel_scale(enum diff_mode mode, const struct run *run)
{
    int gpu_ranks = 0;

    if (mode == MODE_STEPS)
        return (double)run->steps;
    for (int i = 0; i < run->n; i++)
        gpu_ranks += run->r[i].cnt[M_GPU_WINDOW] > 0;
    return gpu_ranks;
}

/* sum_us of one kernel type, 0 when the run has none of it. */
static double kernel_type_us(const cJSON *types, const char *label, bool *found)
{
    const cJSON *row;
    bool ok;

    *found = false;
    cJSON_ArrayForEach(row, types) {
        const cJSON *k = member(row, "kernel_type");
        if (cJSON_IsString(k) && !strcmp(k->valuestring, label)) {
            *found = true;
            return num(row, "sum_us", &ok);
        }
    }
    return 0;
}

/* HTA's kernel-type breakdown ("COMPUTATION", "COMPUTATION overlapping
 * COMMUNICATION", ...) as time per rank (and step): BASE's types, then
 * those only NEW has. A type one run lacks counts as 0 there. */
static int add_kernel_types(struct diff_ctx *c)
{
    const cJSON *lists[2] = {c->base.kernel_types, c->new.kernel_types}, *row;
    double sb = kernel_scale(c->mode, &c->base), sn = kernel_scale(c->mode, &c->new), b, n;
    char name[300];
    bool found;

    if (c->mode == MODE_RATIOS || sb <= 0 || sn <= 0)
        return 0;
    for (int l = 0; l < 2; l++) {
        cJSON_ArrayForEach(row, lists[l]) {
            const cJSON *k = member(row, "kernel_type");
            if (!cJSON_IsString(k))
                continue;
            b = kernel_type_us(lists[0], k->valuestring, &found);
            if (l == 1 && found)
                continue;   /* already compared from BASE's list */
            n = kernel_type_us(lists[1], k->valuestring, &found);
            snprintf(name, sizeof name, "kernel_us%s[%s]", c->mode == MODE_STEPS ? "_per_step" : "",
                     k->valuestring);
            if (!add_row(c, name, -1, -1, true, b / sb, true, n / sn))
                return HM_ENOMEM;
        }
    }
    return 0;
}

/* The straggler verdict of each run (a rank or none). NEW gaining a
 * straggler, or a different one, is worse; losing it is better. */
static int add_straggler(struct diff_ctx *c)
{
    const cJSON *b = c->base.straggler, *n = c->new.straggler;
    cJSON *row = cJSON_CreateObject();
    bool hb = cJSON_IsNumber(b), hn = cJSON_IsNumber(n);

    if (!row || !cJSON_AddItemToArray(c->metrics, row)) {
        cJSON_Delete(row);
        return HM_ENOMEM;
    }
    cJSON_AddStringToObject(row, "metric", "straggler");
    cJSON_AddNullToObject(row, "rank");
    add_value(row, "base", hb, hb ? b->valuedouble : 0, 1);
    add_value(row, "new", hn, hn ? n->valuedouble : 0, 1);
    cJSON_AddNullToObject(row, "delta");
    cJSON_AddNullToObject(row, "pct");
    cJSON_AddNullToObject(row, "better");
    cJSON_AddBoolToObject(row, "worse", hn && (!hb || b->valuedouble != n->valuedouble));
    cJSON_AddBoolToObject(row, "improved", hb && !hn);
    return 0;
}

/* ---- notes and verdict ---- */

static bool run_has_rank(const struct run *run, const struct rank_vals *rv)
{
    return run->n && bsearch(rv, run->r, (size_t)run->n, sizeof *rv, by_rank);
}

/* Formats the ranks of a that b lacks (all of a's when b is NULL) as
 * "0-3,7" into buf; returns how many there are. */
static int rank_list(const struct run *a, const struct run *b, char *buf, size_t len)
{
    size_t at = 0;
    int count = 0;

    buf[0] = '\0';
    for (int i = 0, j; i < a->n; i = j + 1) {
        j = i;
        if (b && run_has_rank(b, &a->r[i]))
            continue;
        while (j + 1 < a->n && a->r[j + 1].rank == a->r[j].rank + 1 && !(b && run_has_rank(b, &a->r[j + 1])))
            j++;
        count += j - i + 1;
        if (at < len)
            at += (size_t)snprintf(buf + at, len - at, i == j ? "%s%d" : "%s%d-%d", at ? "," : "",
                                   a->r[i].rank, a->r[j].rank);
    }
    return count;
}

static void note(struct diff_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(struct diff_ctx *c, const char *fmt, ...)
{
    char text[1024];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    cJSON_AddItemToArray(c->notes, cJSON_CreateString(text));
}

/* Says which ranks the rows cover when the runs' ranks differ. */
static void note_ranks(struct diff_ctx *c)
{
    char ob[256], on[256];
    int only_b = rank_list(&c->base, &c->new, ob, sizeof ob);
    int only_n = rank_list(&c->new, &c->base, on, sizeof on);
    int common = c->base.n - only_b;

    if (!only_b && !only_n)
        return;
    if (common == 0)
        note(c, "BASE has %d ranks (%s) and NEW %d (%s), none in common: only overall values (means over "
             "each run's own ranks) are compared", c->base.n, ob, c->new.n, on);
    else
        note(c, "BASE has %d ranks and NEW %d: overall values are means over each run's own ranks; per-rank "
             "rows cover the ranks both have, %d of them (only in BASE: %s; only in NEW: %s)", c->base.n,
             c->new.n, common, only_b ? ob : "none", only_n ? on : "none");
}

/* "5" or "3-5": analysed steps per rank among the ranks that have any. */
static const char *steps_per_rank(const struct run *run, char *buf, size_t len)
{
    int lo = 0, hi = 0;

    for (int i = 0; i < run->n; i++) {
        int s = run->r[i].nsteps;
        if (s && (!lo || s < lo))
            lo = s;
        if (s > hi)
            hi = s;
    }
    snprintf(buf, len, lo == hi ? "%d" : "%d-%d", lo, hi);
    return buf;
}

/* How the values were made comparable, and what may make them less so. */
static void add_notes(struct diff_ctx *c)
{
    const struct run *runs[2] = {&c->base, &c->new};
    static const char *const label[2] = {"BASE", "NEW"};
    char sb[32], sn[32];

    note_ranks(c);
    if (c->mode == MODE_STEPS)
        note(c, "run totals are divided by each rank's analysed ProfilerSteps (BASE: %s per rank, NEW: %s)%s",
             steps_per_rank(&c->base, sb, sizeof sb), steps_per_rank(&c->new, sn, sizeof sn),
             c->o->all_steps ? "" : "; HTA's rule leaves out each rank's last step (--all-steps keeps it)");
    else if (c->mode == MODE_TOTALS)
        note(c, "neither run has ProfilerStep ranges: run totals are compared as they are, which assumes both "
             "runs did the same work; the gate is the GPU time window (first to last GPU event, mean over "
             "ranks)");
    else
        note(c, "%s has ProfilerStep ranges and %s has none: step time and run totals do not compare, only "
             "ratios (idle %%, compute %%, overlap %%, late fraction); profile both runs with a "
             "torch.profiler schedule, which marks ProfilerStep#N", c->base.steps ? "BASE" : "NEW",
             c->base.steps ? "NEW" : "BASE");
    for (int r = 0; r < 2; r++) {
        if (c->mode == MODE_STEPS && runs[r]->step_ranks < runs[r]->n)
            note(c, "%s: %d of %d ranks have no analysed ProfilerStep and are left out of the per-step values",
                 label[r], runs[r]->n - runs[r]->step_ranks, runs[r]->n);
        if (runs[r]->status && strcmp(runs[r]->status, "complete") != 0)
            note(c, "%s's run status is '%s': its numbers may miss events", label[r], runs[r]->status);
    }
}

static const cJSON *find_overall(const cJSON *metrics, const char *name)
{
    const cJSON *row;

    cJSON_ArrayForEach(row, metrics)
        if (!strcmp(member(row, "metric")->valuestring, name) && cJSON_IsNull(member(row, "rank")))
            return row;
    return NULL;
}

/* Judges the gate metric; writes the verdict sentence and returns whether
 * the pair could be judged at all. */
static bool judge(struct diff_ctx *c, bool *regressed, char *text, size_t len)
{
    const char *what = c->mode == MODE_STEPS ? "mean step time" : "GPU time window";
    const cJSON *g = find_overall(c->metrics, c->mode == MODE_STEPS ? "step_time_mean_us" : "gpu_window_us");
    double b, n, pct, th = c->o->threshold_pct;
    bool hb, hn;

    *regressed = false;
    if (c->mode == MODE_RATIOS) {
        snprintf(text, len, "cannot compare: %s has ProfilerStep ranges but %s has none, so step times "
                 "do not compare", c->base.steps ? "BASE" : "NEW", c->base.steps ? "NEW" : "BASE");
        return false;
    }
    b = num(g, "base", &hb);
    n = num(g, "new", &hn);
    if (!hb || !hn || b <= 0) {
        snprintf(text, len, "cannot compare: %s has neither ProfilerStep ranges nor GPU events, so there is "
                 "no step time or GPU time window", hb && b > 0 ? "NEW" : "BASE");
        return false;
    }
    pct = 100 * (n - b) / b;
    *regressed = n > b && pct >= th;
    if (n == b)
        snprintf(text, len, "no regression: NEW's %s equals BASE's (%.1f us)", what, b);
    else
        snprintf(text, len, "%s: NEW's %s is %.1f%% %s than BASE's (NEW %.1f us, BASE %.1f us), %s the %g%% "
                 "threshold", *regressed ? "regression" : "no regression", what, fabs(pct),
                 n > b ? "longer" : "shorter", n, b, *regressed ? "at or above" : "under", th);
    return true;
}

/* BASE's or NEW's facts: file, ranks, steps per rank, status, straggler. */
static cJSON *run_facts(const struct run *run)
{
    cJSON *f = cJSON_CreateObject();
    char buf[32];

    if (!f)
        return NULL;
    cJSON_AddStringToObject(f, "file", run->name);
    cJSON_AddNumberToObject(f, "ranks", run->n);
    cJSON_AddNumberToObject(f, "steps", (double)run->steps);
    if (run->steps)
        cJSON_AddStringToObject(f, "steps_per_rank", steps_per_rank(run, buf, sizeof buf));
    else
        cJSON_AddNullToObject(f, "steps_per_rank");
    if (run->status)
        cJSON_AddStringToObject(f, "run_status", run->status);
    else
        cJSON_AddNullToObject(f, "run_status");
    cJSON_AddItemToObject(f, "straggler", cJSON_Duplicate(run->straggler, true));
    return f;
}

/* Assembles the document from the compared rows (ctx->metrics, ->notes:
 * handed over to it). */
static int diff_document(struct diff_ctx *c)
{
    char verdict[512];
    bool regressed, comparable = judge(c, &regressed, verdict, sizeof verdict);
    cJSON *doc = cJSON_CreateObject();

    if (!doc)
        return HM_ENOMEM;
    cJSON_AddNumberToObject(doc, "threshold_pct", c->o->threshold_pct);
    cJSON_AddBoolToObject(doc, "comparable", comparable);
    cJSON_AddBoolToObject(doc, "regressed", regressed);
    if (comparable)
        cJSON_AddStringToObject(doc, "gate", c->mode == MODE_STEPS ? "step_time_mean_us" : "gpu_window_us");
    else
        cJSON_AddNullToObject(doc, "gate");
    cJSON_AddStringToObject(doc, "verdict", verdict);
    cJSON_AddItemToObject(doc, "base", run_facts(&c->base));
    cJSON_AddItemToObject(doc, "new", run_facts(&c->new));
    cJSON_AddItemToObject(doc, "metrics", c->metrics);
    cJSON_AddItemToObject(doc, "notes", c->notes);
    c->metrics = c->notes = NULL;
    c->doc = doc;
    return 0;
}

static int diff_compare(struct diff_ctx *c)
{
    bool sb = c->base.steps > 0, sn = c->new.steps > 0;
    int rc;

    c->mode = sb && sn ? MODE_STEPS : !sb && !sn ? MODE_TOTALS : MODE_RATIOS;
    run_reduce(&c->base, c->mode);
    run_reduce(&c->new, c->mode);
    c->metrics = cJSON_CreateArray();
    c->notes = cJSON_CreateArray();
    if (!c->metrics || !c->notes)
        return HM_ENOMEM;
    rc = add_overall(c);
    if (rc == 0)
        rc = add_kernel_types(c);
    if (rc == 0)
        rc = add_straggler(c);
    if (rc == 0)
        rc = add_per_rank(c);
    if (rc == 0)
        add_notes(c);
    return rc == 0 ? diff_document(c) : rc;
}

int qry_diff_build(sqlite3 *base, sqlite3 *new, const struct qry_diff_opts *o, cJSON **out,
                   struct hm_err *err)
{
    struct diff_ctx c = {.o = o};
    int rc;

    if (!(o->threshold_pct >= 0 && o->threshold_pct < 1e6))
        return hm_err_set(err, HM_EINVAL, NULL, -1, "threshold must be a percentage >= 0, not %g",
                          o->threshold_pct);
    c.base.name = o->base_name ? o->base_name : "BASE";
    c.new.name = o->new_name ? o->new_name : "NEW";
    rc = run_load(base, o, &c.base, err);
    if (rc == 0)
        rc = run_load(new, o, &c.new, err);
    if (rc == 0 && (rc = diff_compare(&c)) != 0)
        hm_err_set(err, rc, NULL, -1, "diff: out of memory");
    run_free(&c.base);
    run_free(&c.new);
    cJSON_Delete(c.metrics);
    cJSON_Delete(c.notes);
    if (rc == 0)
        *out = c.doc;
    return rc;
}

bool qry_diff_comparable(const cJSON *doc)
{
    return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(doc, "comparable"));
}

bool qry_diff_regressed(const cJSON *doc)
{
    return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(doc, "regressed"));
}

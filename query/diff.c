/* Comparing two merged runs: the numbers of `report` (steps, temporal,
 * overlap, idle, kernels, stragglers) are built on both files by the same
 * builders, reduced to one value per rank and metric, and NEW is judged
 * against BASE. The numbers' reduction and judgement are
 * analysis/run_compare.c's; this file loads them from the report documents
 * and writes the comparison as a document. Rendering lives in
 * diff_render.c.
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

#include "analysis/run_compare.h"

struct run {
    struct an_cmp_run k;     /* the numbers (analysis/run_compare.h) */
    const char *name;        /* borrowed from the options */
    cJSON *kernel_types;     /* owned: detached from the kernels document */
    cJSON *straggler;        /* owned: the verdict's rank or null */
    char *status;            /* owned: meta.run_status, or NULL */
    cJSON *dims;             /* owned: {dim: exposed communication us, summed over analysed rank-steps} */
    int rank_steps;          /* analysed (rank, step) pairs with a breakdown */
};

struct diff_ctx {
    const struct qry_diff_opts *o;
    struct run base, new;
    enum an_cmp_mode mode;
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

/* Adds row[key] (when a number) to metric m of the row's rank. */
static void put(struct run *run, const cJSON *row, enum an_cmp_metric m, const char *key)
{
    bool okr, ok;
    int rank = (int)num(row, "rank", &okr);
    double v = num(row, key, &ok);

    if (okr && ok)
        an_cmp_put(&run->k, rank, m, v);
}

/* The row's rank in run, or NULL. */
static struct an_cmp_rank *rank_find(struct run *run, const cJSON *row)
{
    bool ok;
    int rank = (int)num(row, "rank", &ok);
    return ok ? an_cmp_find(&run->k, rank) : NULL;
}

static cJSON *member(const cJSON *doc, const char *key)
{
    return cJSON_GetObjectItemCaseSensitive(doc, key);
}

/* The run's ranks (the summary's ranks table: every rank in the file) and
 * its status. */
static int load_summary(struct run *run, cJSON *doc, int all_steps)
{
    const cJSON *ranks = member(doc, "ranks"), *row, *st = member(doc, "run_status");
    int *list = calloc((size_t)cJSON_GetArraySize(ranks) + 1, sizeof *list), n = 0, rc;
    bool ok;

    (void)all_steps;
    if (!list)
        return HM_ENOMEM;
    cJSON_ArrayForEach(row, ranks) {
        int rank = (int)num(row, "rank", &ok);
        if (ok)
            list[n++] = rank;
    }
    rc = an_cmp_run_init(&run->k, list, n);
    free(list);
    if (rc == 0 && cJSON_IsString(st) && !(run->status = strdup(st->valuestring)))
        rc = HM_ENOMEM;
    return rc;
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

/* Exposed communication by parallelism dimension (comm_by_pg rows, the
 * group's name where it has no dimension), over the analysed steps. */
static int load_dims(struct run *run, cJSON *doc, int all_steps)
{
    const cJSON *steps = member(doc, "steps"), *s = steps ? steps->child : NULL, *g;

    if (!run->dims && !(run->dims = cJSON_CreateObject()))
        return HM_ENOMEM;
    cJSON_ArrayForEach(g, member(doc, "comm_by_pg")) {
        const cJSON *dim = member(g, "dim"), *pg = member(g, "pg");
        const char *key = cJSON_IsString(dim) ? dim->valuestring : cJSON_IsString(pg) ? pg->valuestring : "?";
        cJSON *sum;
        bool ok;
        double ms = num(g, "exposed_ms", &ok);
        while (s && cmp_step(s, g) < 0)
            s = s->next;
        if (!ok || !s || cmp_step(s, g) != 0 || !step_analysed(s, all_steps) || !rank_find(run, g))
            continue;
        if (!(sum = cJSON_GetObjectItemCaseSensitive(run->dims, key)) &&
            !(sum = cJSON_AddNumberToObject(run->dims, key, 0)))
            return HM_ENOMEM;
        cJSON_SetNumberValue(sum, sum->valuedouble + ms * 1000);
    }
    return 0;
}

/* Step time and GPU busy time from steps; exposed communication from the
 * breakdown, for the same analysed steps (both lists are sorted by rank,
 * step, so one walk pairs them). */
static int load_steps(struct run *run, cJSON *doc, int all_steps)
{
    const cJSON *steps = member(doc, "steps"), *s = steps ? steps->child : NULL, *b;
    struct an_cmp_rank *rv;

    for (const cJSON *row = s; row; row = row->next) {
        if (!step_analysed(row, all_steps) || !rank_find(run, row))
            continue;
        put(run, row, AN_M_STEP_TIME, "dur_us");
        put(run, row, AN_M_GPU_BUSY, "gpu_busy_us");
        an_cmp_add_step(&run->k, rank_find(run, row)->rank);
    }
    cJSON_ArrayForEach(b, member(doc, "breakdown")) {
        while (s && cmp_step(s, b) < 0)
            s = s->next;
        if (s && cmp_step(s, b) == 0 && step_analysed(s, all_steps) && (rv = rank_find(run, b))) {
            bool ok;
            double ms = num(b, "exposed_comm_ms", &ok);
            if (ok) {
                rv->v[AN_M_EXPOSED_COMM] += ms * 1000;
                rv->cnt[AN_M_EXPOSED_COMM]++;
                run->rank_steps++;
            }
        }
    }
    an_cmp_count_steps(&run->k);
    return load_dims(run, doc, all_steps);
}

static int load_temporal(struct run *run, cJSON *doc, int all_steps)
{
    const cJSON *row;

    (void)all_steps;
    cJSON_ArrayForEach(row, member(doc, "ranks")) {
        put(run, row, AN_M_GPU_WINDOW, "kernel_us");
        put(run, row, AN_M_COMPUTE, "compute_us");
        put(run, row, AN_M_NON_COMPUTE, "non_compute_us");
        put(run, row, AN_M_IDLE, "idle_us");
        put(run, row, AN_M_IDLE_PCT, "idle_pct");
        put(run, row, AN_M_COMPUTE_PCT, "compute_pct");
    }
    return 0;
}

static int load_overlap(struct run *run, cJSON *doc, int all_steps)
{
    const cJSON *row;

    (void)all_steps;
    cJSON_ArrayForEach(row, member(doc, "ranks")) {
        put(run, row, AN_M_COMM, "comm_us");
        put(run, row, AN_M_OVERLAP_PCT, "overlap_pct");
    }
    return 0;
}

/* Idle time by cause, summed over each rank's streams. */
static int load_idle(struct run *run, cJSON *doc, int all_steps)
{
    const cJSON *row;

    (void)all_steps;
    cJSON_ArrayForEach(row, member(doc, "streams")) {
        put(run, row, AN_M_HOST_WAIT, "host_wait_us");
        put(run, row, AN_M_KERNEL_WAIT, "kernel_wait_us");
        put(run, row, AN_M_OTHER_WAIT, "other_us");
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
        put(run, row, AN_M_LATE_FRACTION, "late_fraction");
        put(run, row, AN_M_BLAME, "blame_us");
        put(run, row, AN_M_WAIT, "wait_us");
    }
    run->straggler = cJSON_DetachItemFromObjectCaseSensitive(doc, "straggler");
    return run->straggler ? 0 : HM_ENOMEM;
}

/* Each step's peak of allocated GPU memory per rank (report memory's
 * steps, device >= 0, sorted by rank, device, step; a rank's GPUs summed),
 * in MiB, counted once per (rank, step): on the rank's first GPU. */
static int load_memory(struct run *run, cJSON *doc, int all_steps)
{
    const cJSON *row;
    double rank_at = -1, first_gpu = -1;

    (void)all_steps;
    cJSON_ArrayForEach(row, member(doc, "steps")) {
        bool ok_rank, ok_dev, ok_step, ok_peak;
        double rank = num(row, "rank", &ok_rank), device = num(row, "device", &ok_dev);
        double peak = num(row, "peak_allocated_bytes", &ok_peak);
        struct an_cmp_rank *rv;

        (void)num(row, "step", &ok_step);
        if (!ok_rank || !ok_dev || device < 0 || !ok_step || !ok_peak || !(rv = rank_find(run, row)))
            continue;
        if (rank != rank_at) {
            rank_at = rank;
            first_gpu = device;
        }
        rv->v[AN_M_GPU_PEAK_MEMORY] += peak / 1048576.0;
        rv->cnt[AN_M_GPU_PEAK_MEMORY] += device == first_gpu;
    }
    return 0;
}

/* The report topics a diff reads, and what keeps their numbers. */
static const struct {
    const char *topic;
    int (*load)(struct run *run, cJSON *doc, int all_steps);
} topic_loaders[] = {
    {"summary", load_summary}, {"steps", load_steps},       {"temporal", load_temporal},
    {"overlap", load_overlap}, {"idle", load_idle},          {"kernels", load_kernels},
    {"stragglers", load_stragglers}, {"memory", load_memory},
};

/* Builds each report topic on db and keeps the numbers the diff needs. */
static int run_load(sqlite3 *db, const struct qry_diff_opts *o, struct run *run, struct hm_err *err)
{
    struct qry_report_opts ro = {.all_steps = o->all_steps, .top_kernels = 1, .all_ranks = 1};
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
    an_cmp_run_free(&run->k);
    free(run->status);
    cJSON_Delete(run->kernel_types);
    cJSON_Delete(run->straggler);
    cJSON_Delete(run->dims);
}

/* ---- comparing ---- */

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
    struct an_cmp_delta d = an_cmp_judge(hb, b, hn, n, better, c->o->threshold_pct);

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
    add_value(row, "pct", d.has_pct, d.pct, 1e-2);
    cJSON_AddStringToObject(row, "better", better < 0 ? "lower" : "higher");
    cJSON_AddBoolToObject(row, "worse", d.worse);
    cJSON_AddBoolToObject(row, "improved", d.improved);
    return row;
}

/* The overall rows: each run's mean over its own ranks. */
static int add_overall(struct diff_ctx *c)
{
    for (int m = 0; m < AN_N_METRICS; m++) {
        const char *name = an_cmp_metric_name(c->mode, m);
        double b, n;
        bool hb, hn;
        if (!name || !an_cmp_metrics[m].overall)
            continue;
        hb = an_cmp_mean(&c->base.k, m, &b);
        hn = an_cmp_mean(&c->new.k, m, &n);
        if ((hb || hn) && !add_row(c, name, -1, an_cmp_metrics[m].better, hb, b, hn, n))
            return HM_ENOMEM;
    }
    return 0;
}

/* Overall rows of exposed communication per step by parallelism dimension
 * (exposed_comm_<dim>_us_per_step), for every dimension either run has: a run with
 * a breakdown and none of a dimension's communication counts 0 for it. */
static int add_dims(struct diff_ctx *c)
{
    const struct run *runs[2] = {&c->base, &c->new};

    for (int i = 0; i < 2; i++) {
        const cJSON *d;
        cJSON_ArrayForEach(d, runs[i]->dims) {
            char name[96];
            const cJSON *in[2];
            if (i == 1 && cJSON_GetObjectItemCaseSensitive(c->base.dims, d->string))
                continue;   /* done with base's */
            for (int k = 0; k < 2; k++)
                in[k] = cJSON_GetObjectItemCaseSensitive(runs[k]->dims, d->string);
            snprintf(name, sizeof name, "exposed_comm_%.60s_us_per_step", d->string);
            if (!add_row(c, name, -1, -1, c->base.rank_steps > 0,
                         in[0] && c->base.rank_steps ? in[0]->valuedouble / c->base.rank_steps : 0,
                         c->new.rank_steps > 0, in[1] && c->new.rank_steps ? in[1]->valuedouble / c->new.rank_steps : 0))
                return HM_ENOMEM;
        }
    }
    return 0;
}

/* The per-rank rows, for the ranks both runs have. */
static int add_per_rank(struct diff_ctx *c)
{
    for (int i = 0; i < c->base.k.n; i++) {
        const struct an_cmp_rank *b = &c->base.k.r[i];
        const struct an_cmp_rank *n = an_cmp_find(&c->new.k, b->rank);
        for (int m = 0; n && m < AN_N_METRICS; m++) {
            const char *name = an_cmp_metric_name(c->mode, m);
            if (name && (b->cnt[m] || n->cnt[m]) &&
                !add_row(c, name, b->rank, an_cmp_metrics[m].better, b->cnt[m] > 0, b->v[m], n->cnt[m] > 0,
                         n->v[m]))
                return HM_ENOMEM;
        }
    }
    return 0;
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
    double sb = an_cmp_kernel_scale(c->mode, &c->base.k), sn = an_cmp_kernel_scale(c->mode, &c->new.k), b, n;
    char name[300];
    bool found;

    if (c->mode == AN_MODE_RATIOS || sb <= 0 || sn <= 0)
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
            snprintf(name, sizeof name, "kernel_us%s[%s]", c->mode == AN_MODE_STEPS ? "_per_step" : "",
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

static bool run_has_rank(const struct run *run, const struct an_cmp_rank *rv)
{
    return an_cmp_find(&run->k, rv->rank) != NULL;
}

/* Formats the ranks of a that b lacks (all of a's when b is NULL) as
 * "0-3,7" into buf; returns how many there are. */
static int rank_list(const struct run *a, const struct run *b, char *buf, size_t len)
{
    size_t at = 0;
    int count = 0;

    buf[0] = '\0';
    for (int i = 0, j; i < a->k.n; i = j + 1) {
        j = i;
        if (b && run_has_rank(b, &a->k.r[i]))
            continue;
        while (j + 1 < a->k.n && a->k.r[j + 1].rank == a->k.r[j].rank + 1 && !(b && run_has_rank(b, &a->k.r[j + 1])))
            j++;
        count += j - i + 1;
        if (at < len)
            at += (size_t)snprintf(buf + at, len - at, i == j ? "%s%d" : "%s%d-%d", at ? "," : "",
                                   a->k.r[i].rank, a->k.r[j].rank);
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
    int common = c->base.k.n - only_b;

    if (!only_b && !only_n)
        return;
    if (common == 0)
        note(c, "BASE has %d ranks (%s) and NEW %d (%s), none in common: only overall values (means over "
             "each run's own ranks) are compared", c->base.k.n, ob, c->new.k.n, on);
    else
        note(c, "BASE has %d ranks and NEW %d: overall values are means over each run's own ranks; per-rank "
             "rows cover the ranks both have, %d of them (only in BASE: %s; only in NEW: %s)", c->base.k.n,
             c->new.k.n, common, only_b ? ob : "none", only_n ? on : "none");
}

/* "5" or "3-5": analysed steps per rank among the ranks that have any. */
static const char *steps_per_rank(const struct run *run, char *buf, size_t len)
{
    int lo = 0, hi = 0;

    for (int i = 0; i < run->k.n; i++) {
        int s = run->k.r[i].nsteps;
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
    if (c->mode == AN_MODE_STEPS)
        note(c, "run totals are divided by each rank's analysed ProfilerSteps (BASE: %s per rank, NEW: %s)%s",
             steps_per_rank(&c->base, sb, sizeof sb), steps_per_rank(&c->new, sn, sizeof sn),
             c->o->all_steps ? "" : "; HTA's rule leaves out each rank's last step (--all-steps keeps it)");
    else if (c->mode == AN_MODE_TOTALS)
        note(c, "neither run has ProfilerStep ranges: run totals are compared as they are, which assumes both "
             "runs did the same work; the gate is the GPU time window (first to last GPU event, mean over "
             "ranks)");
    else
        note(c, "%s has ProfilerStep ranges and %s has none: step time and run totals do not compare, only "
             "ratios (idle %%, compute %%, overlap %%, late fraction); profile both runs with a "
             "torch.profiler schedule, which marks ProfilerStep#N", c->base.k.steps ? "BASE" : "NEW",
             c->base.k.steps ? "NEW" : "BASE");
    for (int r = 0; r < 2; r++) {
        if (c->mode == AN_MODE_STEPS && runs[r]->k.step_ranks < runs[r]->k.n)
            note(c, "%s: %d of %d ranks have no analysed ProfilerStep and are left out of the per-step values",
                 label[r], runs[r]->k.n - runs[r]->k.step_ranks, runs[r]->k.n);
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
    const char *what = c->mode == AN_MODE_STEPS ? "mean step time" : "GPU time window";
    const cJSON *g = find_overall(c->metrics, c->mode == AN_MODE_STEPS ? "step_time_mean_us" : "gpu_window_us");
    double b, n, pct, th = c->o->threshold_pct;
    bool hb, hn;

    *regressed = false;
    if (c->mode == AN_MODE_RATIOS) {
        snprintf(text, len, "cannot compare: %s has ProfilerStep ranges but %s has none, so step times "
                 "do not compare", c->base.k.steps ? "BASE" : "NEW", c->base.k.steps ? "NEW" : "BASE");
        return false;
    }
    b = num(g, "base", &hb);
    n = num(g, "new", &hn);
    if (!hb || !hn || b <= 0) {
        snprintf(text, len, "cannot compare: %s has neither ProfilerStep ranges nor GPU events, so there is "
                 "no step time or GPU time window", hb && b > 0 ? "NEW" : "BASE");
        return false;
    }
    *regressed = an_cmp_regressed(b, n, th, &pct);
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
    cJSON_AddNumberToObject(f, "ranks", run->k.n);
    cJSON_AddNumberToObject(f, "steps", (double)run->k.steps);
    if (run->k.steps)
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
        cJSON_AddStringToObject(doc, "gate", c->mode == AN_MODE_STEPS ? "step_time_mean_us" : "gpu_window_us");
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
    int rc;

    c->mode = an_cmp_mode_of(&c->base.k, &c->new.k);
    an_cmp_reduce(&c->base.k, c->mode);
    an_cmp_reduce(&c->new.k, c->mode);
    c->metrics = cJSON_CreateArray();
    c->notes = cJSON_CreateArray();
    if (!c->metrics || !c->notes)
        return HM_ENOMEM;
    rc = add_overall(c);
    if (rc == 0 && c->mode == AN_MODE_STEPS)
        rc = add_dims(c);
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

/* HTA-compatible analyses of one rank.
 *
 * The pipeline mirrors HTA's (docs/ANALYSES.md section 2) step by step, so
 * that default numbers equal HTA's to the microsecond:
 *   1. units   - each event's [start, end) in HTA's time units: when the
 *                trace has fractional ts, HTA rounds start up and end down
 *                to whole us (ceil(ts), floor(ts+dur) in double); otherwise
 *                times are exact and we work in ns.
 *   2. split   - GPU rows are (stream >= 0 and correlation >= 0) or named
 *                "Event Sync"/"Context Sync"; everything else is CPU.
 *   3. filter  - the last-step rule: CPU rows starting before the last
 *                ProfilerStep starts; GPU rows whose correlation matches a
 *                kept CPU row (once per match, as HTA's join does).
 *   4. metrics - on rows with a stream (G): temporal, overlap, kernel-type
 *                sweep, per-kernel stats; on kernel/memcpy/memset rows:
 *                idle-time breakdown per stream.
 * Step 0 stamps each slice's ProfilerStep iteration (ns precision).
 * Live capture that paused CUPTI leaves "htamerge/cupti recording" samples:
 * the paused time between GPU ops is then neither idle nor in the span, as
 * nothing was recorded there (Kineto traces have none: HTA's numbers). */
#include "hta.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hta_int.h"
#include "step_source.h"


const char *an_kclass_name(enum an_kclass k)
{
    switch (k) {
    case AN_KCLASS_COMM: return "COMMUNICATION";
    case AN_KCLASS_MEMORY: return "MEMORY";
    case AN_KCLASS_COMP: return "COMPUTATION";
    default: return "UNKNOWN";
    }
}

/* The unqualified name inside an Itanium-mangled one ("_Z39ncclDevKernel_...",
 * "_ZN4ncclDev..."), which CUPTI reports where Kineto's traces carry the
 * demangled "ncclDevKernel_..."; other names as they are. */
static const char *unmangled_start(const char *name)
{
    const char *p = name + 2;

    if (strncmp(name, "_Z", 2) != 0)
        return name;
    if (*p == 'N')
        p++;
    while (*p >= '0' && *p <= '9')
        p++;
    return p;
}

enum an_kclass an_kclass_of(const char *name)
{
    name = unmangled_start(name);
    if (!strncmp(name, "nccl", 4) || !strncmp(name, "hccl", 4) || !strncmp(name, "hip", 3) ||
        strstr(name, "ncclKernel") || strstr(name, "gloo:"))
        return AN_KCLASS_COMM;
    if (strstr(name, "Memcpy") || strstr(name, "Memset") || !strncmp(name, "dma", 3))
        return AN_KCLASS_MEMORY;
    return AN_KCLASS_COMP;
}

/* numpy's round(x, d): rint(x * 10^d) / 10^d, half to even. */
double an_round(double x, int decimals)
{
    double p = decimals == 1 ? 10.0 : 100.0;
    return rint(x * p) / p;
}

/* ---- step 1: units ---------------------------------------------------- */

static void to_units(const struct hm_slice *s, int fractional, int64_t *start, int64_t *end)
{
    if (!fractional) {
        *start = s->ts;
        *end = s->ts + s->dur;
        return;
    }
    /* The double HTA parsed from the decimal text: whole part exact, then
     * one rounding for the fraction, as strtod would give. */
    double ts = (double)(s->ts / 1000) + (double)(s->ts % 1000) / 1000.0;
    double dur = (double)(s->dur / 1000) + (double)(s->dur % 1000) / 1000.0;
    *start = (int64_t)ceil(ts);
    *end = (int64_t)floor(ts + dur);
}

/* ---- pauses of live capture ----------------------------------------------- */

/* Live capture that paused CUPTI (cupti-range, --cupti-window) marks each
 * change with this counter: 0 = paused from ts on, 1 = recording again. */
#define AN_RECORDING_COUNTER "htamerge/cupti recording"

static int cmp_counter_ts(const void *a, const void *b)
{
    const struct hm_counter *x = a, *y = b;
    if (x->ts != y->ts)
        return x->ts < y->ts ? -1 : 1;
    return x->value < y->value ? -1 : x->value > y->value;
}

/* The batch's recording samples, sorted by time; a 0 sorts before a 1 at
 * the same ts, so that the 1 does not end the pause it starts with (the
 * SQL's next 1 is strictly later). */
static int recording_samples(const struct hm_batch *b, struct hm_counter **out, size_t *nout)
{
    hm_strid yes = UINT32_MAX, no = UINT32_MAX;
    size_t n = 0;

    *out = NULL;
    *nout = 0;
    for (size_t i = 0; i < b->counters.n; i++) {
        hm_strid name = b->counters.v[i].name;
        if (name == no)
            continue;
        if (name != yes && strcmp(hm_batch_str(b, name), AN_RECORDING_COUNTER) != 0) {
            no = name; /* memory counters come in long runs of one name */
            continue;
        }
        yes = name;
        if (!*out && !(*out = malloc((b->counters.n - i) * sizeof **out)))
            return HM_ENOMEM;
        (*out)[n++] = b->counters.v[i];
    }
    if (n)
        qsort(*out, n, sizeof **out, cmp_counter_ts);
    *nout = n;
    return 0;
}

/* Appends the pause [p0, p1) ns in units, rounded inward like an event;
 * p1 == INT64_MAX is a pause that lasted to the end of the run. */
static void add_pause(struct an_ctx *c, int64_t p0, int64_t p1)
{
    struct hm_slice tmp = {.ts = p0, .dur = p1 == INT64_MAX ? 0 : p1 - p0};
    int64_t start, end;

    to_units(&tmp, c->fractional, &start, &end);
    if (p1 == INT64_MAX)
        end = INT64_MAX;
    if (end > start)
        c->paused[c->npaused++] = (struct an_interval){start, end};
}

/* c->paused from the batch's recording samples: as report_cupti_pauses.sql
 * defines a pause, from a sample at 0 to the next one at 1 after it. */
static int paused_intervals(const struct hm_batch *b, struct an_ctx *c)
{
    struct hm_counter *v;
    size_t n;
    int64_t p0 = 0;
    int paused = 0, rc = recording_samples(b, &v, &n);

    if (rc || !n)
        return rc;
    c->paused = malloc(n * sizeof *c->paused);
    if (!c->paused) {
        free(v);
        return HM_ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        if (v[i].value == 0 && !paused) {
            paused = 1;
            p0 = v[i].ts;
        } else if (v[i].value == 1 && paused && v[i].ts > p0) {
            paused = 0;
            add_pause(c, p0, v[i].ts);
        }
    }
    if (paused)
        add_pause(c, p0, INT64_MAX);
    free(v);
    return 0;
}

/* ---- step 0: iterations ------------------------------------------------ */

static int parse_step_number(const char *name, int64_t *n)
{
    const char *p;
    if (strncmp(name, "ProfilerStep", 12) != 0)
        return 0;
    p = name + 12;
    while (*p == ' ' || *p == '\t')
        p++;
    if (*p++ != '#')
        return 0;
    while (*p == ' ' || *p == '\t')
        p++;
    if (*p < '0' || *p > '9')
        return 0;
    *n = strtoll(p, NULL, 10);
    return 1;
}

static int cmp_step_ts(const void *a, const void *b)
{
    const struct hm_step *x = a, *y = b;
    return x->ts < y->ts ? -1 : x->ts > y->ts;
}

static int cmp_corr(const void *a, const void *b)
{
    const struct an_corr *x = a, *y = b;
    if (x->corr != y->corr)
        return x->corr < y->corr ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* Position in v of the last entry with this correlation, or -1. */
int64_t an_corr_pos(const struct an_corr *v, size_t n, int64_t corr)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (v[mid].corr <= corr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo > 0 && v[lo - 1].corr == corr ? (int64_t)lo - 1 : -1;
}

/* CPU step of a timestamp: the last step (in start order) containing it. */
static int32_t step_of(const struct hm_step *steps, size_t n, int64_t ts)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (steps[mid].ts <= ts)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (size_t i = lo; i-- > 0;) {
        if (ts < steps[i].ts + steps[i].dur)
            return (int32_t)steps[i].number;
        if (i + 1 < lo && steps[i].ts + steps[i].dur <= steps[lo - 1].ts)
            break; /* steps do not nest; nothing earlier can contain ts */
    }
    return HM_NONE;
}

static int assign_iterations(struct hm_batch *b, struct an_ctx *c)
{
    struct hm_step *steps = NULL;
    size_t ns = b->steps.n;

    if (ns) {
        steps = malloc(ns * sizeof *steps);
        if (!steps)
            return HM_ENOMEM;
        memcpy(steps, b->steps.v, ns * sizeof *steps);
        qsort(steps, ns, sizeof *steps, cmp_step_ts);
    }
    for (size_t i = 0; i < b->slices.n; i++) {
        struct hm_slice *s = &b->slices.v[i];
        s->iteration = c->is_gpu[i] || !ns ? HM_NONE : step_of(steps, ns, s->ts);
    }
    for (size_t i = 0; i < b->slices.n; i++) {
        struct hm_slice *s = &b->slices.v[i];
        if (c->is_gpu[i] && s->correlation >= 0) {
            int64_t p = an_corr_pos(c->cpu_corr, c->ncpu_corr, s->correlation);
            s->iteration = p >= 0 ? b->slices.v[c->cpu_corr[p].idx].iteration : HM_NONE;
        }
    }
    free(steps);
    return 0;
}

/* ---- step 2: split ----------------------------------------------------- */

static int64_t hta_stream(const struct hm_batch *b, const struct hm_slice *s)
{
    return (s->flags & HM_SLICE_F_STREAM_ARG) ? b->tracks.v[s->track].tid : -1;
}

static int classify(struct hm_batch *b, struct an_ctx *c)
{
    size_t n = b->slices.n;

    c->is_gpu = calloc(n ? n : 1, 1);
    c->cpu_corr = malloc((n ? n : 1) * sizeof *c->cpu_corr);
    if (!c->is_gpu || !c->cpu_corr)
        return HM_ENOMEM;
    c->ncpu_corr = 0;
    for (size_t i = 0; i < n; i++) {
        const struct hm_slice *s = &b->slices.v[i];
        const char *name = hm_batch_str(b, s->name);
        int gpu = (hta_stream(b, s) >= 0 && s->correlation >= 0) ||
                  !strcmp(name, "Event Sync") || !strcmp(name, "Context Sync");
        c->is_gpu[i] = (uint8_t)gpu;
        if (!gpu && s->correlation >= 0 && s->cat != HM_CAT_TRACE) {
            c->cpu_corr[c->ncpu_corr].corr = s->correlation;
            c->cpu_corr[c->ncpu_corr++].idx = i;
        }
    }
    qsort(c->cpu_corr, c->ncpu_corr, sizeof *c->cpu_corr, cmp_corr);
    return 0;
}

/* ---- step 3: filter ------------------------------------------------------ */

/* Kernel class of a name id, computed once per distinct name. */
static uint8_t kclass_cached(struct an_ctx *c, const struct hm_batch *b, hm_strid name)
{
    if (name < c->nkclass) {
        if (c->kclass[name] == 0xff)
            c->kclass[name] = (uint8_t)an_kclass_of(hm_batch_str(b, name));
        return c->kclass[name];
    }
    return (uint8_t)an_kclass_of(hm_batch_str(b, name));
}

static int push_row(struct an_ctx *c, const struct hm_batch *b, size_t i, int64_t start, int64_t end,
                    int64_t rt_start)
{
    return an_push_row(c, &c->rows.v, &c->rows.n, &c->rows.cap, b, i, start, end, rt_start);
}

int an_push_row(struct an_ctx *c, struct an_row **v, size_t *n, size_t *cap, const struct hm_batch *b,
                size_t i, int64_t start, int64_t end, int64_t rt_start)
{
    const struct hm_slice *s = &b->slices.v[i];
    struct an_row *r;

    if (hm_vec_reserve((void **)v, cap, *n + 1, sizeof **v))
        return HM_ENOMEM;
    r = &(*v)[(*n)++];

    if (!r)
        return HM_ENOMEM;
    r->start = start;
    r->end = end;
    r->stream = hta_stream(b, s);
    r->slice = (uint32_t)i;
    r->name = s->name;
    r->rt_start = rt_start;
    r->has_rt = rt_start != INT64_MIN;
    r->kclass = kclass_cached(c, b, s->name);
    r->idle_kind = s->cat == HM_CAT_KERNEL || s->cat == HM_CAT_GPU_MEMCPY || s->cat == HM_CAT_GPU_MEMSET;
    return 0;
}

/* Kept CPU correlations, sorted, for the GPU join. */
static int kept_cpu_corrs(struct an_ctx *c, const uint8_t *keep_cpu, struct an_corr **out, size_t *nout)
{
    struct an_corr *v = malloc((c->ncpu_corr ? c->ncpu_corr : 1) * sizeof *v);
    size_t n = 0;
    if (!v)
        return HM_ENOMEM;
    for (size_t k = 0; k < c->ncpu_corr; k++)
        if (keep_cpu[c->cpu_corr[k].idx])
            v[n++] = c->cpu_corr[k];
    *out = v;
    *nout = n;
    return 0;
}

/* A trace file holds what its profiler recorded (a schedule's wait and
 * warm-up steps are not in it), so HTA's last-step rule is all the window
 * it needs, whatever the steps' source. A live capture holds the whole
 * run, start-up before the first step and teardown after the last: there
 * CPU rows (and the GPU work they launched) count only from the first
 * step's start, and without the last-step rule until the last step's end.
 * Its steps, when not ProfilerSteps, begin with the warm-up (the first
 * iteration builds caches, autotunes, compiles: 20 s against 50 ms for
 * nanoGPT under torch.compile), so with 3 steps or more and the HTA rule
 * the window starts at the second. Otherwise [INT64_MIN, INT64_MAX). */
static void step_window(const struct hm_batch *b, struct an_ctx *c, const struct an_options *opt,
                        int64_t *last)
{
    int64_t s0, e0, second = INT64_MAX;
    int profiler = an_steps_source(b) == HM_STEP_PROFILER;

    c->first_start = INT64_MIN;
    c->skip_first = 0;
    *last = INT64_MAX;
    if (!b->steps.n || !(b->info.flags & HM_INFO_F_LIVE))
        return;
    c->first_start = INT64_MAX;
    *last = INT64_MIN;
    for (size_t k = 0; k < b->steps.n; k++) {
        struct hm_slice tmp = {.ts = b->steps.v[k].ts, .dur = b->steps.v[k].dur};
        to_units(&tmp, c->fractional, &s0, &e0);
        if (s0 < c->first_start) {
            second = c->first_start;
            c->first_start = s0;
        } else if (s0 < second) {
            second = s0;
        }
        *last = e0 > *last ? e0 : *last;
    }
    if (!profiler && !opt->all_steps && b->steps.n >= 3) {
        c->first_start = second;
        c->skip_first = 1;
    }
}

/* Applies the last-step rule and builds c->rows (all kept rows). */
static int filter_rows(struct hm_batch *b, const struct an_options *opt, struct an_ctx *c)
{
    size_t n = b->slices.n, nkept;
    uint8_t *keep = calloc(n ? n : 1, 1);
    struct an_corr *kept = NULL;
    int64_t last_start = INT64_MAX, last_end, s0, e0;
    int distinct = 0, rc;   /* distinct step numbers, counted up to 2 */

    if (!keep)
        return HM_ENOMEM;
    /* Two distinct ProfilerStep numbers decide whether the rule applies at
     * all (a live run has tens of thousands of steps: no pairwise search). */
    for (size_t k = 0; k < b->steps.n && distinct < 2; k++)
        distinct = k == 0 ? 1 : b->steps.v[k].number != b->steps.v[0].number ? 2 : distinct;
    c->drop_last = !opt->all_steps && distinct >= 2;
    if (c->drop_last && an_steps_source(b) != HM_STEP_PROFILER) {
        /* Steps of another source: the same rule, at the last step's start. */
        last_start = INT64_MIN;
        for (size_t k = 0; k < b->steps.n; k++) {
            struct hm_slice tmp = {.ts = b->steps.v[k].ts, .dur = b->steps.v[k].dur};
            to_units(&tmp, c->fractional, &s0, &e0);
            last_start = s0 > last_start ? s0 : last_start;
        }
    } else if (c->drop_last) {
        int64_t step_no;
        last_start = INT64_MIN;
        for (size_t i = 0; i < n; i++) {
            if (c->is_gpu[i] || !parse_step_number(hm_batch_str(b, b->slices.v[i].name), &step_no))
                continue;
            to_units(&b->slices.v[i], c->fractional, &s0, &e0);
            if (s0 > last_start)
                last_start = s0;
        }
    }
    c->last_start = last_start;
    step_window(b, c, opt, &last_end);
    for (size_t i = 0; i < n; i++) {
        if (c->is_gpu[i] || b->slices.v[i].cat == HM_CAT_TRACE)
            continue;
        to_units(&b->slices.v[i], c->fractional, &s0, &e0);
        keep[i] = (!c->drop_last || s0 < last_start) && s0 >= c->first_start && s0 < last_end;
    }
    rc = kept_cpu_corrs(c, keep, &kept, &nkept);
    for (size_t i = 0; i < n && rc == 0; i++) {
        const struct hm_slice *s = &b->slices.v[i];
        int64_t rt = INT64_MIN, ps, pe;
        size_t mult = 1;
        if (s->cat == HM_CAT_TRACE || (!c->is_gpu[i] && !keep[i]))
            continue;
        if (c->is_gpu[i]) {
            int64_t p = s->correlation >= 0 ? an_corr_pos(kept, nkept, s->correlation) : -1;
            if (s->correlation >= 0) {
                mult = 0;
                for (int64_t q = p; q >= 0 && kept[q].corr == s->correlation; q--)
                    mult++;
            }
            if (p >= 0) {
                to_units(&b->slices.v[kept[p].idx], c->fractional, &ps, &pe);
                rt = ps;
            }
        }
        to_units(s, c->fractional, &s0, &e0);
        for (size_t m = 0; m < mult && rc == 0; m++)
            rc = push_row(c, b, i, s0, e0, rt);
    }
    free(keep);
    free(kept);
    return rc;
}

/* ---- driver ------------------------------------------------------------- */

const char *an_label_name(int mask)
{
    static const char *const names[8] = {
        "",
        "COMPUTATION",
        "COMMUNICATION",
        "COMPUTATION overlapping COMMUNICATION",
        "MEMORY",
        "COMPUTATION overlapping MEMORY",
        "COMMUNICATION overlapping MEMORY",
        "COMPUTATION overlapping COMMUNICATION overlapping MEMORY",
    };
    return mask > 0 && mask < 8 ? names[mask] : "";
}

/* Every row with a stream, before filtering: per-step figures use them so
 * that a dropped last step still shows its numbers. */
static int all_rows(struct hm_batch *b, struct an_ctx *c)
{
    int64_t s0, e0;
    int rc = 0;

    for (size_t i = 0; i < b->slices.n && rc == 0; i++) {
        if (b->slices.v[i].cat == HM_CAT_TRACE || hta_stream(b, &b->slices.v[i]) == -1)
            continue;
        to_units(&b->slices.v[i], c->fractional, &s0, &e0);
        rc = an_push_row(c, &c->all.v, &c->all.n, &c->all.cap, b, i, s0, e0, INT64_MIN);
    }
    c->step_start = malloc((b->steps.n ? b->steps.n : 1) * sizeof *c->step_start);
    if (!c->step_start)
        return HM_ENOMEM;
    for (size_t k = 0; k < b->steps.n; k++) {
        struct hm_slice tmp = {.ts = b->steps.v[k].ts, .dur = b->steps.v[k].dur};
        to_units(&tmp, c->fractional, &c->step_start[k], &e0);
    }
    return rc;
}

/* Runs the analyses for several option sets; what does not depend on the
 * options (classification, iterations, unfiltered rows) is done once. */
int an_hta_run_modes(struct hm_batch *b, const struct an_options *opts, int nopts,
                     struct an_rank_result *out, struct hm_err *err)
{
    struct an_ctx c = {0};
    int rc, k = 0;

    for (int i = 0; i < nopts; i++) {
        memset(&out[i], 0, sizeof out[i]);
        out[i].rank = b->info.rank;
    }
    c.fractional = (b->info.flags & HM_INFO_F_FRACTIONAL_TS) != 0;
    c.nkclass = hm_strtab_count(b->strings);
    c.kclass = malloc(c.nkclass ? c.nkclass : 1);
    rc = c.kclass ? 0 : HM_ENOMEM;
    if (rc == 0) {
        memset(c.kclass, 0xff, c.nkclass);
        rc = classify(b, &c);
    }
    if (rc == 0)
        rc = an_steps_resolve(b, &c);
    if (rc == 0)
        rc = assign_iterations(b, &c);
    if (rc == 0)
        rc = all_rows(b, &c);
    if (rc == 0)
        rc = paused_intervals(b, &c);
    for (; k < nopts && rc == 0; k++) {
        c.rows.n = 0;
        rc = filter_rows(b, &opts[k], &c);
        if (rc == 0)
            rc = an_metrics(&c, b, &out[k]);
    }
    free(c.kclass);
    free(c.is_gpu);
    free(c.cpu_corr);
    free(c.step_start);
    free(c.paused);
    HM_VEC_FREE(c.rows);
    HM_VEC_FREE(c.all);
    if (rc != 0) {
        for (int i = 0; i < nopts; i++)
            an_rank_result_clear(&out[i]);
        return hm_err_set(err, rc, NULL, -1, "analysis of rank %d: %s", b->info.rank, hm_err_name(rc));
    }
    return 0;
}

int an_hta_run(struct hm_batch *b, const struct an_options *opt, struct an_rank_result *out,
               struct hm_err *err)
{
    return an_hta_run_modes(b, opt, 1, out, err);
}

void an_rank_result_clear(struct an_rank_result *r)
{
    for (size_t i = 0; i < r->kernels.n; i++)
        free(r->kernels.v[i].name);
    HM_VEC_FREE(r->kernels);
    HM_VEC_FREE(r->idle);
    HM_VEC_FREE(r->steps);
}

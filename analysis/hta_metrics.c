/* The HTA metrics over the kept rows of one rank: temporal breakdown,
 * communication/computation overlap, the kernel-type sweep, per-kernel
 * statistics, idle-time breakdown and per-step figures. Rows come from
 * hta.c's filter; this file only measures. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hta.h"
#include "hta_int.h"

static int cmp_row_start(const void *a, const void *b)
{
    const struct an_row *x = *(const struct an_row *const *)a, *y = *(const struct an_row *const *)b;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    return x->slice < y->slice ? -1 : x->slice > y->slice;
}

int an_merge(const struct an_row *const *rows, size_t n, struct an_interval **out, size_t *nout)
{
    const struct an_row **v = malloc((n ? n : 1) * sizeof *v);
    struct an_interval *iv = malloc((n ? n : 1) * sizeof *iv);
    int64_t run_max = INT64_MIN;
    size_t k = 0;

    if (!v || !iv) {
        free(v);
        free(iv);
        return HM_ENOMEM;
    }
    memcpy(v, rows, n * sizeof *v);
    qsort(v, n, sizeof *v, cmp_row_start);
    for (size_t i = 0; i < n; i++) {
        if (k == 0 || v[i]->start > run_max) {
            iv[k].start = v[i]->start;
            iv[k++].end = v[i]->end;
        } else if (v[i]->end > iv[k - 1].end) {
            iv[k - 1].end = v[i]->end;
        }
        if (v[i]->end > run_max)
            run_max = v[i]->end;
    }
    free(v);
    *out = iv;
    *nout = k;
    return 0;
}

int64_t an_intervals_len(const struct an_interval *v, size_t n)
{
    int64_t s = 0;
    for (size_t i = 0; i < n; i++)
        s += v[i].end - v[i].start;
    return s;
}

int64_t an_paused_within(const struct an_ctx *c, int64_t start, int64_t end)
{
    size_t lo = 0, hi = c->npaused;
    int64_t s = 0;

    while (lo < hi) { /* the first pause ending after start */
        size_t mid = (lo + hi) / 2;
        if (c->paused[mid].end <= start)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (size_t i = lo; i < c->npaused && c->paused[i].start < end; i++) {
        int64_t a = c->paused[i].start > start ? c->paused[i].start : start;
        int64_t b = c->paused[i].end < end ? c->paused[i].end : end;
        s += b - a;
    }
    return s;
}

/* ---- sweep over labelled interval sets ---------------------------------- */

struct edge {
    int64_t t;
    int delta;
};

static int cmp_edge(const void *a, const void *b)
{
    const struct edge *x = a, *y = b;
    return x->t < y->t ? -1 : x->t > y->t;
}

/* Adds, for each running-sum value r in 1..7, the time spent at r into
 * by_sum[r]. Each set i contributes +weight[i] at starts and -weight[i] at
 * ends, as in HTA's overlap and kernel-type computations. */
static int sweep(struct an_interval *const *sets, const size_t *nsets, const int *weight, int k,
                 int64_t by_sum[8])
{
    size_t m = 0, j = 0;
    struct edge *e;
    int r = 0;

    for (int i = 0; i < k; i++)
        m += 2 * nsets[i];
    e = malloc((m ? m : 1) * sizeof *e);
    if (!e)
        return HM_ENOMEM;
    for (int i = 0; i < k; i++)
        for (size_t q = 0; q < nsets[i]; q++) {
            e[j++] = (struct edge){sets[i][q].start, weight[i]};
            e[j++] = (struct edge){sets[i][q].end, -weight[i]};
        }
    qsort(e, m, sizeof *e, cmp_edge);
    for (size_t q = 0; q + 1 < m; q++) {
        r += e[q].delta;
        if (r > 0 && r < 8)
            by_sum[r] += e[q + 1].t - e[q].t;
    }
    free(e);
    return 0;
}

/* ---- per-rank metrics ---------------------------------------------------- */

struct gsets {
    struct an_interval *all, *cls[AN_KCLASS__COUNT];
    size_t nall, ncls[AN_KCLASS__COUNT];
};

static int64_t to_us(const struct an_ctx *c, int64_t units)
{
    if (c->fractional)
        return units;
    return units >= 0 ? (units + 500) / 1000 : -((-units + 500) / 1000);
}

static double pct(int64_t part, int64_t whole)
{
    return an_round(100.0 * ((double)part / (double)whole), 2);
}

/* G: rows with a stream; merged overall and per kernel class. */
static int build_sets(struct an_ctx *c, struct gsets *g)
{
    const struct an_row **v = malloc((c->rows.n ? c->rows.n : 1) * sizeof *v);
    size_t n = 0;
    int rc;

    if (!v)
        return HM_ENOMEM;
    for (size_t i = 0; i < c->rows.n; i++)
        if (c->rows.v[i].stream != -1)
            v[n++] = &c->rows.v[i];
    rc = an_merge(v, n, &g->all, &g->nall);
    for (int k = 0; k < AN_KCLASS__COUNT && rc == 0; k++) {
        size_t m = 0;
        for (size_t i = 0; i < c->rows.n; i++)
            if (c->rows.v[i].stream != -1 && c->rows.v[i].kclass == k)
                v[m++] = &c->rows.v[i];
        rc = an_merge(v, m, &g->cls[k], &g->ncls[k]);
    }
    free(v);
    return rc;
}

static void free_sets(struct gsets *g)
{
    free(g->all);
    for (int k = 0; k < AN_KCLASS__COUNT; k++)
        free(g->cls[k]);
}

/* Paused time between the busy intervals: CUPTI recorded nothing there,
 * so it is neither busy nor idle and leaves the span. */
static int64_t paused_gaps(const struct an_ctx *c, const struct gsets *g)
{
    int64_t s = 0;
    for (size_t i = 0; c->npaused && i + 1 < g->nall; i++)
        s += an_paused_within(c, g->all[i].end, g->all[i + 1].start);
    return s;
}

static void temporal(struct an_ctx *c, const struct gsets *g, struct an_rank_result *r)
{
    struct an_temporal *t = &r->temporal;
    int64_t kt, busy, comp;

    r->has_gpu = g->nall > 0;
    if (!g->nall)
        return;
    kt = g->all[g->nall - 1].end - g->all[0].start - paused_gaps(c, g);
    busy = an_intervals_len(g->all, g->nall);
    comp = an_intervals_len(g->cls[AN_KCLASS_COMP], g->ncls[AN_KCLASS_COMP]);
    t->kernel_us = to_us(c, kt);
    t->idle_us = to_us(c, kt - busy);
    t->compute_us = to_us(c, comp);
    t->non_compute_us = to_us(c, kt - comp - (kt - busy));
    t->idle_pct = kt ? pct(kt - busy, kt) : NAN;
    t->compute_pct = kt ? pct(comp, kt) : NAN;
    t->non_compute_pct = kt ? pct(kt - comp - (kt - busy), kt) : NAN;
}

static int overlap_and_types(struct an_ctx *c, struct gsets *g, struct an_rank_result *r)
{
    /* HTA's overlap: COMM weighs 1, COMP 2; time at 3 is both. */
    struct an_interval *ov_sets[2] = {g->cls[AN_KCLASS_COMM], g->cls[AN_KCLASS_COMP]};
    size_t ov_n[2] = {g->ncls[AN_KCLASS_COMM], g->ncls[AN_KCLASS_COMP]};
    int ov_w[2] = {1, 2};
    /* Kernel-type sweep: COMPUTATION 1, COMMUNICATION 2, MEMORY 4. */
    struct an_interval *ty_sets[3] = {g->cls[AN_KCLASS_COMP], g->cls[AN_KCLASS_COMM],
                                      g->cls[AN_KCLASS_MEMORY]};
    size_t ty_n[3] = {g->ncls[AN_KCLASS_COMP], g->ncls[AN_KCLASS_COMM], g->ncls[AN_KCLASS_MEMORY]};
    int ty_w[3] = {1, 2, 4};
    int64_t by[8] = {0}, comm;
    int rc;

    rc = sweep(ov_sets, ov_n, ov_w, 2, by);
    if (rc)
        return rc;
    comm = an_intervals_len(g->cls[AN_KCLASS_COMM], g->ncls[AN_KCLASS_COMM]);
    r->overlap.comm_us = to_us(c, comm);
    r->overlap.overlap_us = to_us(c, by[3]);
    r->overlap.overlap_pct = comm ? an_round(100.0 * ((double)by[3] / (double)comm), 2) : NAN;
    memset(by, 0, sizeof by);
    rc = sweep(ty_sets, ty_n, ty_w, 3, by);
    for (int m = 0; m < 8; m++)
        r->label_us[m] = to_us(c, by[m]);
    for (int k = 0; k < AN_KCLASS__COUNT; k++)
        r->kclass_us[k] = to_us(c, an_intervals_len(g->cls[k], g->ncls[k]));
    r->comp_overlap_comm_us = r->label_us[AN_LABEL_COMP | AN_LABEL_COMM];
    return rc;
}

/* ---- idle-time breakdown -------------------------------------------------- */

static int cmp_stream_start(const void *a, const void *b)
{
    const struct an_row *x = *(const struct an_row *const *)a, *y = *(const struct an_row *const *)b;
    if (x->stream != y->stream)
        return x->stream < y->stream ? -1 : 1;
    return cmp_row_start(a, b);
}

static int idle(struct an_ctx *c, struct an_rank_result *r)
{
    const struct an_row **v = malloc((c->rows.n ? c->rows.n : 1) * sizeof *v);
    int64_t gap_limit = c->fractional ? 30 : 30000; /* HTA's consecutive_kernel_delay, 30 us */
    struct an_idle *cur = NULL;
    size_t n = 0;

    if (!v)
        return HM_ENOMEM;
    for (size_t i = 0; i < c->rows.n; i++)
        if (c->rows.v[i].stream != -1 && c->rows.v[i].idle_kind)
            v[n++] = &c->rows.v[i];
    qsort(v, n, sizeof *v, cmp_stream_start);
    for (size_t i = 0; i < n; i++) {
        if (i == 0 || v[i]->stream != v[i - 1]->stream) {
            cur = HM_VEC_PUSH(r->idle);
            if (!cur) {
                free(v);
                return HM_ENOMEM;
            }
            cur->stream = v[i]->stream;
            continue; /* a stream's first op has no gap */
        }
        int64_t prev_end = v[i - 1]->end, gap = v[i]->start - prev_end;
        if (gap > 0)
            gap -= an_paused_within(c, prev_end, v[i]->start); /* not recorded: not idle */
        if (v[i]->has_rt && v[i]->rt_start > prev_end)
            cur->host_wait_us += gap;
        else if (gap < gap_limit)
            cur->kernel_wait_us += gap;
        else
            cur->other_us += gap;
    }
    for (size_t i = 0; i < r->idle.n; i++) {
        struct an_idle *d = &r->idle.v[i];
        d->host_wait_us = to_us(c, d->host_wait_us);
        d->kernel_wait_us = to_us(c, d->kernel_wait_us);
        d->other_us = to_us(c, d->other_us);
    }
    free(v);
    return 0;
}

/* ---- per-kernel statistics ------------------------------------------------ */

static int cmp_row_name(const void *a, const void *b)
{
    const struct an_row *x = *(const struct an_row *const *)a, *y = *(const struct an_row *const *)b;
    return x->name < y->name ? -1 : x->name > y->name;
}

static int cmp_kernel_sum(const void *a, const void *b)
{
    const struct an_kernel *x = a, *y = b;
    if (x->sum_us != y->sum_us)
        return x->sum_us > y->sum_us ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* One kernel name's group v[0..n). */
static int kernel_group(struct an_ctx *c, const struct hm_batch *b, const struct an_row *const *v,
                        size_t n, struct an_rank_result *r)
{
    struct an_kernel *k = HM_VEC_PUSH(r->kernels);
    double scale = c->fractional ? 1.0 : 1000.0, mean, ss = 0;
    int64_t sum = 0, mn = INT64_MAX, mx = INT64_MIN;

    if (!k)
        return HM_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        int64_t d = v[i]->end - v[i]->start;
        sum += d;
        mn = d < mn ? d : mn;
        mx = d > mx ? d : mx;
    }
    mean = (double)sum / (double)n;
    for (size_t i = 0; i < n; i++) {
        double d = (double)(v[i]->end - v[i]->start) - mean;
        ss += d * d;
    }
    k->name = strdup(hm_batch_str(b, b->slices.v[v[0]->slice].name));
    if (!k->name)
        return HM_ENOMEM;
    k->kclass = v[0]->kclass;
    k->count = (int64_t)n;
    k->sum_us = to_us(c, sum);
    k->min_us = to_us(c, mn);
    k->max_us = to_us(c, mx);
    k->mean_us = mean / scale;
    k->std_us = n > 1 ? sqrt(ss / (double)(n - 1)) / scale : 0.0;
    return 0;
}

static int kernels(struct an_ctx *c, const struct hm_batch *b, struct an_rank_result *r)
{
    const struct an_row **v = malloc((c->rows.n ? c->rows.n : 1) * sizeof *v);
    size_t n = 0, i, j;
    int rc = 0;

    if (!v)
        return HM_ENOMEM;
    for (i = 0; i < c->rows.n; i++)
        if (c->rows.v[i].stream != -1)
            v[n++] = &c->rows.v[i];
    qsort(v, n, sizeof *v, cmp_row_name);
    for (i = 0; i < n && rc == 0; i = j) {
        for (j = i + 1; j < n && v[j]->name == v[i]->name; j++)
            ;
        rc = kernel_group(c, b, v + i, j - i, r);
    }
    free(v);
    if (rc == 0 && r->kernels.n)
        qsort(r->kernels.v, r->kernels.n, sizeof *r->kernels.v, cmp_kernel_sum);
    return rc;
}

/* ---- per-step figures ------------------------------------------------------ */

static int one_step(struct an_ctx *c, const struct hm_batch *b, const struct hm_step *st,
                    struct an_rank_result *r)
{
    const struct an_row **v = malloc((c->all.n ? c->all.n : 1) * sizeof *v);
    struct an_step *o = HM_VEC_PUSH(r->steps);
    struct an_interval *iv = NULL;
    size_t n = 0, niv = 0;
    int rc;

    if (!v || !o) {
        free(v);
        return HM_ENOMEM;
    }
    for (size_t i = 0; i < c->all.n; i++)
        if (b->slices.v[c->all.v[i].slice].iteration == st->number) {
            v[n++] = &c->all.v[i];
            o->kernel_count += b->slices.v[c->all.v[i].slice].cat == HM_CAT_KERNEL;
        }
    rc = an_merge(v, n, &iv, &niv);
    o->number = st->number;
    o->ts_ns = st->ts;
    o->dur_ns = st->dur;
    o->gpu_busy_us = to_us(c, an_intervals_len(iv, niv));
    o->source = st->source;
    o->dropped = (c->drop_last &&
                  (st->source != HM_STEP_PROFILER || (st->slice < b->slices.n && !c->is_gpu[st->slice])) &&
                  c->step_start[st - b->steps.v] >= c->last_start) ||
                 (c->skip_first && c->step_start[st - b->steps.v] < c->first_start);
    free(iv);
    free(v);
    return rc;
}

static int cmp_step_number(const void *a, const void *b)
{
    const struct an_step *x = a, *y = b;
    return x->number < y->number ? -1 : x->number > y->number;
}

static int steps(struct an_ctx *c, const struct hm_batch *b, struct an_rank_result *r)
{
    int rc = 0;
    for (size_t i = 0; i < b->steps.n && rc == 0; i++)
        rc = one_step(c, b, &b->steps.v[i], r);
    if (rc == 0 && r->steps.n)
        qsort(r->steps.v, r->steps.n, sizeof *r->steps.v, cmp_step_number);
    return rc;
}

int an_metrics(struct an_ctx *c, const struct hm_batch *b, struct an_rank_result *r)
{
    struct gsets g = {0};
    int rc = build_sets(c, &g);

    if (rc == 0) {
        temporal(c, &g, r);
        rc = overlap_and_types(c, &g, r);
    }
    if (rc == 0)
        rc = idle(c, r);
    if (rc == 0)
        rc = kernels(c, b, r);
    if (rc == 0)
        rc = steps(c, b, r);
    free_sets(&g);
    return rc;
}

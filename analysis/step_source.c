/* Step sources in priority order, and inferred steps (step_source.h). */
#include "step_source.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "hta_int.h"
#include "step_infer.h"

int an_steps_source(const struct hm_batch *b)
{
    return b->steps.n ? b->steps.v[0].source : -1;
}

/* Keeps only the steps of the best source present. */
static void keep_best_source(struct hm_batch *b)
{
    int best = HM_STEP__COUNT;
    size_t k = 0;

    for (size_t i = 0; i < b->steps.n; i++)
        if (b->steps.v[i].source < best)
            best = b->steps.v[i].source;
    for (size_t i = 0; i < b->steps.n; i++)
        if (b->steps.v[i].source == best)
            b->steps.v[k++] = b->steps.v[i];
    b->steps.n = k;
}

static int is_annotation(const struct hm_batch *b, const struct an_ctx *c, size_t i)
{
    const struct hm_slice *s = &b->slices.v[i];
    return !c->is_gpu[i] && (s->cat == HM_CAT_NVTX || s->cat == HM_CAT_USER_ANNOTATION) &&
           s->track < b->tracks.n && b->tracks.v[s->track].kind == HM_TRACK_CPU_THREAD;
}

struct cand {
    int64_t ts, dur, number; /* number: trailing number, or INT64_MIN */
    uint32_t slice, track;
    uint32_t key;            /* step-like base name, index into step_names */
};

static int cmp_cand(const void *a, const void *b)
{
    const struct cand *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    if (x->track != y->track)
        return x->track < y->track ? -1 : 1;
    if (x->ts != y->ts)
        return x->ts < y->ts ? -1 : 1;
    return x->slice < y->slice ? -1 : x->slice > y->slice;
}

static int cmp_cand_ts(const void *a, const void *b)
{
    const struct cand *x = a, *y = b;
    if (x->ts != y->ts)
        return x->ts < y->ts ? -1 : 1;
    return x->slice < y->slice ? -1 : x->slice > y->slice;
}

static int push_step(struct hm_batch *b, int64_t number, int64_t ts, int64_t dur, uint32_t slice, int source)
{
    struct hm_step *st = HM_VEC_PUSH(b->steps);
    if (!st)
        return HM_ENOMEM;
    st->number = number;
    st->ts = ts;
    st->dur = dur > 0 ? dur : 0;
    st->slice = slice;
    st->source = (uint8_t)source;
    return 0;
}

/* ---- hooks ---------------------------------------------------------------- */

static int find_hooks(struct hm_batch *b, const struct an_ctx *c)
{
    struct cand *v = NULL;
    size_t n = 0, cap = 0;
    int rc = 0;

    for (size_t i = 0; i < b->slices.n; i++) {
        const struct hm_slice *s = &b->slices.v[i];
        const char *args;
        if (!is_annotation(b, c, i) || !s->args || strcmp(hm_batch_str(b, s->name), "step") != 0)
            continue;
        args = hm_batch_str(b, s->args);
        if (!args || !strstr(args, "\"domain\":\"htamerge\""))
            continue;
        if (hm_vec_reserve((void **)&v, &cap, n + 1, sizeof *v)) {
            free(v);
            return HM_ENOMEM;
        }
        v[n++] = (struct cand){s->ts, s->dur, INT64_MIN, (uint32_t)i, 0, 0};
    }
    /* Order of occurrence over the rank: by start, whatever the thread. */
    if (n)
        qsort(v, n, sizeof *v, cmp_cand_ts);
    for (size_t i = 0; i < n && rc == 0; i++)
        rc = push_step(b, (int64_t)i + 1, v[i].ts, v[i].dur, v[i].slice, HM_STEP_HOOKS);
    free(v);
    return rc;
}

/* ---- user NVTX / annotations ------------------------------------------------ */

static const char *const step_names[] = {
    "step", "train_step", "training_step", "trainstep", "train step", "iteration", "iter",
    "train_iter", "train_iteration", "profilerstep", "global_step",
};

/* The step-like base of a name (index + 1 into step_names), or 0; *num
 * gets its trailing number or INT64_MIN. */
static uint32_t step_like(const char *name, int64_t *num)
{
    char low[40];
    size_t n = strlen(name), k;

    *num = INT64_MIN;
    if (n == 0 || n >= sizeof low)
        return 0;
    for (k = 0; k < n; k++)
        low[k] = (char)tolower((unsigned char)name[k]);
    low[n] = 0;
    k = n;
    while (k > 0 && isdigit((unsigned char)low[k - 1]))
        k--;
    if (k < n && n - k < 18) {
        *num = strtoll(low + k, NULL, 10);
        while (k > 0 && strchr(" #_:-", low[k - 1]))
            k--;
    }
    low[k] = 0;
    for (size_t i = 0; i < sizeof step_names / sizeof *step_names; i++)
        if (!strcmp(low, step_names[i]))
            return (uint32_t)i + 1;
    return 0;
}

static int find_nvtx(struct hm_batch *b, const struct an_ctx *c)
{
    struct cand *v = NULL;
    size_t n = 0, cap = 0, best_i = 0, best_n = 0;
    int64_t best_total = -1;
    uint32_t *key_of = NULL; /* per name id: step-like base + 1, 0 not, UINT32_MAX unknown */
    uint32_t nkeys = hm_strtab_count(b->strings);
    int rc = 0;

    key_of = malloc((nkeys ? nkeys : 1) * sizeof *key_of);
    if (!key_of)
        return HM_ENOMEM;
    memset(key_of, 0xff, (nkeys ? nkeys : 1) * sizeof *key_of);
    for (size_t i = 0; i < b->slices.n; i++) {
        const struct hm_slice *s = &b->slices.v[i];
        int64_t num;
        uint32_t key;
        if (!is_annotation(b, c, i) || !s->name)
            continue;
        if (s->name < nkeys && key_of[s->name] == 0)
            continue;
        key = step_like(hm_batch_str(b, s->name), &num);
        if (s->name < nkeys && (key == 0 || num == INT64_MIN))
            key_of[s->name] = key; /* names with a number are each seen once anyway */
        if (!key)
            continue;
        if (hm_vec_reserve((void **)&v, &cap, n + 1, sizeof *v)) {
            rc = HM_ENOMEM;
            break;
        }
        v[n++] = (struct cand){s->ts, s->dur, num, (uint32_t)i, s->track, key};
    }
    free(key_of);
    if (rc || n == 0) {
        free(v);
        return rc;
    }
    qsort(v, n, sizeof *v, cmp_cand);
    /* Groups of (name, thread) ranges one after the other. */
    for (size_t i = 0, j; i < n; i = j) {
        int64_t total = 0, prev_end = INT64_MIN;
        int seq = 1;
        for (j = i; j < n && v[j].key == v[i].key && v[j].track == v[i].track; j++) {
            seq &= v[j].ts >= prev_end;
            prev_end = v[j].ts + v[j].dur;
            total += v[j].dur;
        }
        if (j - i >= 2 && seq && total > best_total) {
            best_total = total;
            best_i = i;
            best_n = j - i;
        }
    }
    if (best_n) {
        int numbered = 1;
        for (size_t k = 0; k < best_n; k++)
            numbered &= v[best_i + k].number != INT64_MIN &&
                        (k == 0 || v[best_i + k].number > v[best_i + k - 1].number);
        for (size_t k = 0; k < best_n && rc == 0; k++) {
            const struct cand *x = &v[best_i + k];
            rc = push_step(b, numbered ? x->number : (int64_t)k + 1, x->ts, x->dur, x->slice, HM_STEP_NVTX);
        }
    }
    free(v);
    return rc;
}

/* ---- inferred ------------------------------------------------------------- */

/* Fewer repetitions than this are no evidence of a loop. */
#define AN_INFER_MIN_STEPS 3

struct ev {
    int64_t ts, end; /* CPU time of the event (launch call of a GPU op) and its end */
    uint64_t sym;
    size_t order;    /* tie-break: batch order */
};

static int cmp_ev(const void *a, const void *b)
{
    const struct ev *x = a, *y = b;
    if (x->ts != y->ts)
        return x->ts < y->ts ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

/* CPU time of slice i: its own, or its launch call's for a GPU op. */
static int64_t cpu_time(const struct hm_batch *b, const struct an_ctx *c, size_t i, int *launched)
{
    const struct hm_slice *s = &b->slices.v[i];
    *launched = 0;
    if (c->is_gpu[i] && s->correlation >= 0) {
        int64_t p = an_corr_pos(c->cpu_corr, c->ncpu_corr, s->correlation);
        if (p >= 0) {
            *launched = 1;
            return b->slices.v[c->cpu_corr[p].idx].ts;
        }
    }
    return s->ts;
}

static uint64_t text_hash(const struct hm_batch *b, hm_strid id)
{
    const char *t = id ? hm_batch_str(b, id) : NULL;
    return t ? hm_hash_bytes(t, strlen(t)) : 0;
}

/* Cuts the stream v[0..n) (sorted) into steps, if periodic. */
static int steps_from_stream(struct hm_batch *b, struct ev *v, size_t n, size_t min_block)
{
    uint64_t *sym = malloc((n ? n : 1) * sizeof *sym);
    int64_t *ts = malloc((n ? n : 1) * sizeof *ts), *end = malloc((n ? n : 1) * sizeof *end);
    struct an_period per = {0};
    int rc = sym && ts && end ? 0 : HM_ENOMEM;

    for (size_t i = 0; i < n && rc == 0; i++) {
        sym[i] = v[i].sym;
        ts[i] = v[i].ts;
        end[i] = v[i].end;
    }
    if (rc == 0)
        rc = an_infer_period(sym, ts, end, n, &per);
    if (per.block < min_block || per.ncuts < AN_INFER_MIN_STEPS)
        an_period_free(&per);
    for (size_t k = 0; k < per.ncuts && rc == 0; k++) {
        size_t a = per.cuts[k], e = k + 1 < per.ncuts ? per.cuts[k + 1] : a + per.block;
        int64_t t1 = 0;
        if (k + 1 < per.ncuts) {
            t1 = v[e].ts;
        } else {
            for (size_t i = a; i < e && i < n; i++)
                t1 = i == a || v[i].end > t1 ? v[i].end : t1;
        }
        rc = push_step(b, (int64_t)k + 1, v[a].ts, t1 - v[a].ts, HM_STEP_NO_SLICE, HM_STEP_INFERRED);
    }
    an_period_free(&per);
    free(sym);
    free(ts);
    free(end);
    return rc;
}

enum stream_kind { STREAM_COLLECTIVES, STREAM_ANNOTATIONS, STREAM_KERNELS };

static int gather(const struct hm_batch *b, const struct an_ctx *c, enum stream_kind kind, struct ev **out,
                  size_t *nout)
{
    struct ev *v = NULL;
    size_t n = 0, cap = 0;
    int cpu_coll = 0;

    if (kind == STREAM_COLLECTIVES)
        for (size_t k = 0; k < b->collectives.n && !cpu_coll; k++)
            cpu_coll = !c->is_gpu[b->collectives.v[k].slice];
    for (size_t k = 0, lim = kind == STREAM_COLLECTIVES ? b->collectives.n : b->slices.n; k < lim; k++) {
        size_t i = kind == STREAM_COLLECTIVES ? b->collectives.v[k].slice : k;
        const struct hm_slice *s = &b->slices.v[i];
        uint64_t sym;
        int launched;
        if (kind == STREAM_COLLECTIVES) {
            const struct hm_collective *cl = &b->collectives.v[k];
            if (cpu_coll == (int)c->is_gpu[i])
                continue; /* one row per call: the CPU ones where there are */
            sym = text_hash(b, cl->op) * 31 + (uint64_t)cl->in_nelems;
        } else if (kind == STREAM_ANNOTATIONS) {
            if (!is_annotation(b, c, i))
                continue;
            sym = s->name;
        } else {
            if (!c->is_gpu[i] || s->cat != HM_CAT_KERNEL)
                continue;
            sym = s->name;
        }
        if (hm_vec_reserve((void **)&v, &cap, n + 1, sizeof *v)) {
            free(v);
            return HM_ENOMEM;
        }
        v[n].ts = cpu_time(b, c, i, &launched);
        v[n].end = launched ? v[n].ts : s->ts + s->dur;
        if (launched) { /* the launch call's end */
            int64_t p = an_corr_pos(c->cpu_corr, c->ncpu_corr, s->correlation);
            const struct hm_slice *l = &b->slices.v[c->cpu_corr[p].idx];
            v[n].end = l->ts + l->dur;
        }
        v[n].sym = sym;
        v[n++].order = i;
    }
    if (n)
        qsort(v, n, sizeof *v, cmp_ev);
    *out = v;
    *nout = n;
    return 0;
}

static int infer(struct hm_batch *b, const struct an_ctx *c)
{
    static const enum stream_kind order[] = {STREAM_COLLECTIVES, STREAM_ANNOTATIONS, STREAM_KERNELS};
    int rc = 0;

    for (size_t k = 0; k < sizeof order / sizeof *order && rc == 0 && b->steps.n == 0; k++) {
        struct ev *v = NULL;
        size_t n = 0;
        rc = gather(b, c, order[k], &v, &n);
        /* One event per step is a loop only for collectives (one
         * allreduce per step); a kernel or range repeated alone is not. */
        if (rc == 0 && n >= AN_INFER_MIN_STEPS)
            rc = steps_from_stream(b, v, n, order[k] == STREAM_COLLECTIVES ? 1 : 2);
        free(v);
    }
    return rc;
}

int an_steps_resolve(struct hm_batch *b, const struct an_ctx *c)
{
    int rc;

    if (b->steps.n) {
        keep_best_source(b);
        return 0;
    }
    rc = find_hooks(b, c);
    if (rc == 0 && b->steps.n == 0)
        rc = find_nvtx(b, c);
    if (rc == 0 && b->steps.n == 0)
        rc = infer(b, c);
    return rc;
}

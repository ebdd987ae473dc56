/* The capture plan in shared memory: a seqlock around the plan (one writer,
 * the collector; readers in the training process, which must never block),
 * and single-writer progress fields. */
#include "capture_plan.h"

#include <stdatomic.h>
#include <string.h>

enum { PLAN_WORDS = sizeof(struct hm_capture_plan) / 8, MEASURED_WORDS = sizeof(struct hm_capture_measured) / 8 };

struct area {
    _Atomic uint64_t gen;                 /* odd while the plan is being written */
    _Atomic int64_t plan[PLAN_WORDS];     /* word copies: no torn 8-byte values */
    _Atomic int64_t step_now, step_ns, steps_seen;
    _Atomic int64_t cupti_records, cupti_attached_ns, cupti_switches, cupti_switch_ns;
    _Atomic uint64_t ab_gen;              /* seqlock of the words below (one writer: the hooks) */
    _Atomic int64_t ab[MEASURED_WORDS];
};
_Static_assert(sizeof(struct hm_capture_plan) % 8 == 0, "plan is 8-byte words");
_Static_assert(sizeof(struct hm_capture_measured) % 8 == 0, "measurements are 8-byte words");
_Static_assert(sizeof(struct area) <= HM_CAPTURE_AREA_BYTES, "area fits");

/* A seqlock over n words: one writer; readers never block the writer and
 * retry while it is mid-way (a few stores, never a wait). */
static void seq_write(_Atomic uint64_t *gen, _Atomic int64_t *dst, const int64_t *src, size_t n)
{
    uint64_t g = atomic_load_explicit(gen, memory_order_relaxed);

    atomic_store_explicit(gen, g + 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    for (size_t i = 0; i < n; i++)
        atomic_store_explicit(&dst[i], src[i], memory_order_relaxed);
    atomic_store_explicit(gen, g + 2, memory_order_release);
}

static uint64_t seq_read(const _Atomic uint64_t *gen, const _Atomic int64_t *src, int64_t *dst, size_t n)
{
    for (;;) {
        uint64_t g0 = atomic_load_explicit(gen, memory_order_acquire);
        if (g0 & 1)
            continue;
        for (size_t i = 0; i < n; i++)
            dst[i] = atomic_load_explicit(&src[i], memory_order_relaxed);
        atomic_thread_fence(memory_order_acquire);
        if (atomic_load_explicit(gen, memory_order_relaxed) == g0)
            return g0;
    }
}

void hm_capture_plan_put(void *area, const struct hm_capture_plan *p)
{
    struct area *a = area;
    int64_t w[PLAN_WORDS];

    memcpy(w, p, sizeof w);
    seq_write(&a->gen, a->plan, w, PLAN_WORDS);
}

uint64_t hm_capture_plan_gen(const void *area)
{
    const struct area *a = area;
    return atomic_load_explicit(&a->gen, memory_order_acquire);
}

const volatile uint64_t *hm_capture_plan_gen_word(const void *area)
{
    const struct area *a = area;
    return (const volatile uint64_t *)&a->gen;
}

uint64_t hm_capture_plan_get(const void *area, struct hm_capture_plan *p)
{
    const struct area *a = area;
    int64_t w[PLAN_WORDS];
    uint64_t g = seq_read(&a->gen, a->plan, w, PLAN_WORDS);

    memcpy(p, w, sizeof w);
    return g;
}

void hm_capture_progress_step(void *area, int64_t step_now, int64_t step_ns)
{
    struct area *a = area;
    atomic_store_explicit(&a->step_ns, step_ns, memory_order_relaxed);
    atomic_fetch_add_explicit(&a->steps_seen, 1, memory_order_relaxed);
    atomic_store_explicit(&a->step_now, step_now + 1, memory_order_release);   /* 0: none yet */
}

void hm_capture_progress_cupti(void *area, int64_t records, int64_t attached_ns)
{
    struct area *a = area;
    atomic_store_explicit(&a->cupti_records, records, memory_order_relaxed);
    atomic_store_explicit(&a->cupti_attached_ns, attached_ns, memory_order_relaxed);
}

void hm_capture_progress_switch(void *area, int64_t ns)
{
    struct area *a = area;
    atomic_fetch_add_explicit(&a->cupti_switch_ns, ns, memory_order_relaxed);
    atomic_fetch_add_explicit(&a->cupti_switches, 1, memory_order_relaxed);
}

void hm_capture_progress_measured(void *area, const struct hm_capture_measured *m)
{
    struct area *a = area;
    int64_t v[MEASURED_WORDS];

    memcpy(v, m, sizeof v);
    seq_write(&a->ab_gen, a->ab, v, MEASURED_WORDS);
}

void hm_capture_progress_get(const void *area, struct hm_capture_progress *pr)
{
    const struct area *a = area;
    pr->step_now = atomic_load_explicit(&a->step_now, memory_order_acquire) - 1;
    pr->step_ns = atomic_load_explicit(&a->step_ns, memory_order_relaxed);
    pr->steps_seen = atomic_load_explicit(&a->steps_seen, memory_order_relaxed);
    pr->cupti_records = atomic_load_explicit(&a->cupti_records, memory_order_relaxed);
    pr->cupti_attached_ns = atomic_load_explicit(&a->cupti_attached_ns, memory_order_relaxed);
    pr->cupti_switches = atomic_load_explicit(&a->cupti_switches, memory_order_relaxed);
    pr->cupti_switch_ns = atomic_load_explicit(&a->cupti_switch_ns, memory_order_relaxed);
    int64_t v[MEASURED_WORDS];   /* the measurements belong together */
    seq_read(&a->ab_gen, a->ab, v, MEASURED_WORDS);
    memcpy(&pr->measured, v, sizeof pr->measured);
}

static int requested_step(const struct hm_capture_plan *p, int64_t s)
{
    return p->req_id > 0 && p->req_steps > 0 && s >= p->req_from_step && s - p->req_from_step < p->req_steps;
}

int hm_capture_plan_all(const struct hm_capture_plan *p)
{
    return p->mode == HM_CAPTURE_ALL ||
           (p->mode == HM_CAPTURE_STEPS && p->on_steps > 0 && p->on_steps >= p->period_steps);
}

static int in_windows(int64_t base, int64_t on, int64_t period, int64_t s)
{
    return on > 0 && period > 0 && s >= base && (s - base) % period < on;
}

int hm_capture_step(const struct hm_capture_plan *p, int64_t s)
{
    int f = requested_step(p, s) ? HM_CAPTURE_F_REQUEST : 0;

    switch (p->mode) {
    case HM_CAPTURE_STEPS:
        if (s >= p->base_step ? in_windows(p->base_step, p->on_steps, p->period_steps, s)
                              : in_windows(p->prev_base_step, p->prev_on_steps, p->prev_period_steps, s))
            f |= HM_CAPTURE_F_WINDOW;
        return f;
    case HM_CAPTURE_TIME:
        return f;   /* time windows are the injection library's to keep */
    default:
        return f | HM_CAPTURE_F_WINDOW;
    }
}

/* The first window edge (a window's first step, or the step after its
 * last) after s, of windows of on steps every period from base; none:
 * INT64_MAX. */
static int64_t next_edge(int64_t base, int64_t on, int64_t period, int64_t s)
{
    if (on <= 0 || period <= 0)
        return INT64_MAX;
    if (s < base)
        return base;
    int64_t start = base + (s - base) / period * period;
    return s < start + on && on < period ? start + on : start + period;
}

static int64_t min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

/* The answer of hm_capture_step can change only at an edge of a window, of
 * the request, or at base_step, where the schedule changes: the first of
 * those after step (an edge where nothing changes only costs a caller one
 * more question). */
int64_t hm_capture_next_change(const struct hm_capture_plan *p, int64_t step, int64_t limit)
{
    int64_t next = step + limit;

    if (p->req_id > 0 && p->req_steps > 0 && step < p->req_from_step + p->req_steps)
        next = min64(next, step < p->req_from_step ? p->req_from_step : p->req_from_step + p->req_steps);
    if (p->mode == HM_CAPTURE_STEPS) {
        if (step < p->base_step)
            next = min64(next, min64(p->base_step,
                                     next_edge(p->prev_base_step, p->prev_on_steps, p->prev_period_steps, step)));
        else
            next = min64(next, next_edge(p->base_step, p->on_steps, p->period_steps, step));
    }
    return next > step ? next : step + 1;
}

int hm_capture_time(const struct hm_capture_plan *p, int64_t t)
{
    int f = p->req_id > 0 && p->req_t1_ns > p->req_t0_ns && t >= p->req_t0_ns && t < p->req_t1_ns
                ? HM_CAPTURE_F_REQUEST : 0;

    if (p->mode == HM_CAPTURE_TIME) {
        int64_t ms = (t - p->epoch_ns) / 1000000;
        if (p->period_ms > 0 && t >= p->epoch_ns && ms % p->period_ms < p->on_ms)
            f |= HM_CAPTURE_F_WINDOW;
        return f;
    }
    return f | HM_CAPTURE_F_WINDOW;
}

/* The clock test hook: parsing and application. */
#include "clockhook.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <time.h>

#include "err.h"

static int64_t real_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* HTAMERGE_CLOCK_JUMP_NS / _AFTER_MS: a step of the clock at a moment. */
static int load_jump(struct hm_clockhook *h)
{
    const char *jump = getenv("HTAMERGE_CLOCK_JUMP_NS"), *after = getenv("HTAMERGE_CLOCK_JUMP_AFTER_MS");
    long long after_ms = 1000;
    char *end;

    if (!jump || !*jump)
        return 0;
    errno = 0;
    h->jump_ns = strtoll(jump, &end, 10);
    if (errno || *end)
        return HM_EINVAL;
    if (after && *after) {
        after_ms = strtoll(after, &end, 10);
        if (errno || *end || after_ms < 0 || after_ms > 86400000LL)
            return HM_EINVAL;
    }
    h->jump_at_ns = h->ref_ns + after_ms * 1000000;
    h->active = 1;
    return 0;
}

int hm_clockhook_load(struct hm_clockhook *h)
{
    const char *skew = getenv("HTAMERGE_CLOCK_SKEW_NS"), *drift = getenv("HTAMERGE_CLOCK_DRIFT_PPM");
    char *end;

    h->active = 0;
    h->skew_ns = 0;
    h->drift_ppm = 0;
    h->jump_ns = h->jump_at_ns = 0;
    h->ref_ns = real_now();
    if (skew && *skew) {
        errno = 0;
        h->skew_ns = strtoll(skew, &end, 10);
        if (errno || *end)
            return HM_EINVAL;
        h->active = 1;
    }
    if (drift && *drift) {
        h->drift_ppm = strtod(drift, &end);
        if (*end || !isfinite(h->drift_ppm) || fabs(h->drift_ppm) > 1e5)
            return HM_EINVAL;
        h->active = 1;
    }
    return load_jump(h);
}

int64_t hm_clockhook_apply(const struct hm_clockhook *h, int64_t t)
{
    if (!h || !h->active)
        return t;
    return t + h->skew_ns + (int64_t)llround(h->drift_ppm * 1e-6 * (double)(t - h->ref_ns)) +
           (h->jump_ns && t >= h->jump_at_ns ? h->jump_ns : 0);
}

int64_t hm_clock_now(const struct hm_clockhook *h)
{
    return hm_clockhook_apply(h, real_now());
}

void hm_clockhook_apply_batch(const struct hm_clockhook *h, struct hm_batch *b)
{
    int64_t base = b->info.base_time_ns;

    if (!h || !h->active || base == HM_NONE)
        return;
    for (size_t i = 0; i < b->slices.n; i++) {
        int64_t t = base + b->slices.v[i].ts;
        int64_t end = t + b->slices.v[i].dur;
        b->slices.v[i].ts = hm_clockhook_apply(h, t) - base;
        b->slices.v[i].dur = hm_clockhook_apply(h, end) - base - b->slices.v[i].ts;
    }
    for (size_t i = 0; i < b->counters.n; i++)
        b->counters.v[i].ts = hm_clockhook_apply(h, base + b->counters.v[i].ts) - base;
    for (size_t i = 0; i < b->steps.n; i++) {
        struct hm_step *s = &b->steps.v[i];
        int64_t end = base + s->ts + s->dur;
        s->ts = hm_clockhook_apply(h, base + s->ts) - base;
        s->dur = hm_clockhook_apply(h, end) - base - s->ts;
    }
}

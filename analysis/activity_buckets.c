/* A rank's activity in equal time buckets (activity_buckets.h). */
#include "analysis/activity_buckets.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/vec.h"

int an_intervals_push(struct an_intervals *l, int64_t a, int64_t b)
{
    if (b <= a)
        return 0;
    if (hm_vec_reserve((void **)&l->v, &l->cap, l->n + 1, sizeof *l->v))
        return -1;
    l->v[l->n++] = (struct an_interval){a, b};
    return 0;
}

int64_t an_activity_bucket_ns(int64_t lo, int64_t hi)
{
    int64_t span = hi > lo ? hi - lo : 1;
    int64_t w = (span + AN_ACTIVITY_BUCKETS - 1) / AN_ACTIVITY_BUCKETS;

    return w > 0 ? w : 1;
}

static int cmp_start(const void *x, const void *y)
{
    const struct an_interval *a = x, *b = y;
    return a->a < b->a ? -1 : a->a > b->a;
}

/* Adds [a, b) (clipped to the buckets) to the covered ns of each bucket. */
static void add_cover(double *acc, int n, int64_t origin, int64_t w, int64_t a, int64_t b)
{
    int64_t end = origin + (int64_t)n * w;

    a = a > origin ? a : origin;
    b = b < end ? b : end;
    while (a < b) {
        int64_t k = (a - origin) / w, bend = origin + (k + 1) * w;
        int64_t seg = (b < bend ? b : bend) - a;
        acc[k] += (double)seg;
        a += seg;
    }
}

void an_activity_cover(uint8_t *out, int n, int64_t origin, int64_t w, struct an_interval *v, size_t nv)
{
    double *acc = calloc((size_t)(n > 0 ? n : 1), sizeof *acc);
    int64_t ua = 0, ub = INT64_MIN;

    memset(out, 0, (size_t)(n > 0 ? n : 0));
    if (!acc || n <= 0 || w <= 0) {
        free(acc);
        return;
    }
    if (nv > 1)
        qsort(v, nv, sizeof *v, cmp_start);
    for (size_t i = 0; i < nv; i++) {   /* the union: overlapping streams count once */
        if (v[i].b <= v[i].a)
            continue;
        if (ub != INT64_MIN && v[i].a <= ub) {
            ub = v[i].b > ub ? v[i].b : ub;
            continue;
        }
        if (ub != INT64_MIN)
            add_cover(acc, n, origin, w, ua, ub);
        ua = v[i].a, ub = v[i].b;
    }
    if (ub != INT64_MIN)
        add_cover(acc, n, origin, w, ua, ub);
    for (int k = 0; k < n; k++) {
        double f = acc[k] / (double)w;
        out[k] = (uint8_t)lround(255.0 * (f < 0 ? 0 : f > 1 ? 1 : f));
    }
    free(acc);
}

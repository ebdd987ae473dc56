/* Clock model from ping-pong rounds: best-sample selection and piecewise
 * linear interpolation of the offset. */
#include "clock.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "common/record.h"

int mrg_clock_add_round(struct mrg_clock_model *m, const struct mrg_clock_sample *s, size_t n)
{
    const struct mrg_clock_sample *best = NULL;
    struct mrg_clock_round r;
    size_t i;

    for (i = 0; i < n; i++)
        if (s[i].t2 >= s[i].t0 && (!best || s[i].t2 - s[i].t0 < best->t2 - best->t0))
            best = &s[i];
    if (!best)
        return HM_EINVAL;
    r.peer_ns = best->t1;
    r.rtt_ns = best->t2 - best->t0;
    /* Midpoint without overflow; never through double (epoch ns). */
    r.offset_ns = best->t0 + r.rtt_ns / 2 - best->t1;
    if (m->n == m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 8;
        struct mrg_clock_round *v = realloc(m->rounds, cap * sizeof *v);
        if (!v)
            return HM_ENOMEM;
        m->rounds = v;
        m->cap = cap;
    }
    for (i = m->n; i > 0 && m->rounds[i - 1].peer_ns > r.peer_ns; i--)
        m->rounds[i] = m->rounds[i - 1];
    m->rounds[i] = r;
    m->n++;
    return 0;
}

/* Offset on the segment through rounds a and b, at t. */
static int64_t on_segment(const struct mrg_clock_round *a, const struct mrg_clock_round *b, int64_t t)
{
    double span = (double)(b->peer_ns - a->peer_ns);
    if (span <= 0)
        return a->offset_ns;
    return a->offset_ns +
           (int64_t)llround((double)(b->offset_ns - a->offset_ns) * ((double)(t - a->peer_ns) / span));
}

int64_t mrg_clock_offset_at(const struct mrg_clock_model *m, int64_t t)
{
    size_t lo = 0, hi;

    if (m->n == 0)
        return 0;
    if (m->n == 1)
        return m->rounds[0].offset_ns;
    /* Last round at or before t, clamped so a segment always exists. */
    hi = m->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (m->rounds[mid].peer_ns <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        lo = 1;
    if (lo >= m->n)
        lo = m->n - 1;
    return on_segment(&m->rounds[lo - 1], &m->rounds[lo], t);
}

void mrg_clock_summary(const struct mrg_clock_model *m, int64_t *offset_ns, double *drift_ppm,
                       int64_t *ref_ns, int64_t *uncertainty_ns)
{
    const struct mrg_clock_round *a, *b;
    int64_t worst = 0;

    if (m->n == 0) {
        *offset_ns = 0;
        *drift_ppm = 0;
        *ref_ns = 0;
        *uncertainty_ns = HM_NONE;
        return;
    }
    a = &m->rounds[0];
    b = &m->rounds[m->n - 1];
    for (size_t i = 0; i < m->n; i++)
        if (m->rounds[i].rtt_ns > worst)
            worst = m->rounds[i].rtt_ns;
    *offset_ns = a->offset_ns;
    *ref_ns = a->peer_ns;
    *drift_ppm = b->peer_ns > a->peer_ns
                     ? (double)(b->offset_ns - a->offset_ns) / (double)(b->peer_ns - a->peer_ns) * 1e6
                     : 0.0;
    *uncertainty_ns = (worst + 1) / 2;
}

int64_t mrg_clock_step(const struct mrg_clock_model *m, int64_t *at_peer_ns)
{
    int64_t best = 0;

    for (size_t i = 1; i < m->n; i++) {
        const struct mrg_clock_round *a = &m->rounds[i - 1], *b = &m->rounds[i];
        int64_t d = b->offset_ns - a->offset_ns, mag = d < 0 ? -d : d;
        int64_t slack = (b->peer_ns - a->peer_ns) / 1000000 * MRG_CLOCK_MAX_DRIFT_PPM +
                        (a->rtt_ns + b->rtt_ns) / 2;
        if (mag - slack >= MRG_CLOCK_MIN_STEP_NS && mag > (best < 0 ? -best : best)) {
            best = d;
            *at_peer_ns = b->peer_ns;
        }
    }
    return best;
}

void mrg_clock_free(struct mrg_clock_model *m)
{
    free(m->rounds);
    memset(m, 0, sizeof *m);
}

/* Clock model from ping-pong rounds: best-sample selection, piecewise
 * linear interpolation of the offset, and the repair of one clock step. */
#include "clock.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "common/record.h"
#include "common/vec.h"

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
    if (hm_vec_reserve((void **)&m->rounds, &m->cap, m->n + 1, sizeof *m->rounds))
        return HM_ENOMEM;
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

/* Offset on the piecewise-linear model through rounds r[0, n) at t. */
static int64_t offset_on(const struct mrg_clock_round *r, size_t n, int64_t t)
{
    size_t lo = 0, hi;

    if (n == 0)
        return 0;
    if (n == 1)
        return r[0].offset_ns;
    /* Last round at or before t, clamped so a segment always exists. */
    hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (r[mid].peer_ns <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        lo = 1;
    if (lo >= n)
        lo = n - 1;
    return on_segment(&r[lo - 1], &r[lo], t);
}

static int64_t offset_before(const struct mrg_clock_model *m, int64_t t)
{
    return offset_on(m->rounds, m->split, t);
}

static int64_t offset_after(const struct mrg_clock_model *m, int64_t t)
{
    return offset_on(m->rounds + m->split, m->n - m->split, t);
}

static int pin_cmp(const void *pa, const void *pb)
{
    const struct mrg_clock_pin *a = pa, *b = pb;
    if (a->row != b->row)
        return a->row < b->row ? -1 : 1;
    return (a->peer_ns > b->peer_ns) - (a->peer_ns < b->peer_ns);
}

/* Index of the first pin of (row, t), or npins. */
static size_t find_pin(const struct mrg_clock_model *m, int64_t row, int64_t t)
{
    struct mrg_clock_pin key = {row, t, 0, -1};
    size_t lo = 0, hi = m->npins;

    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (pin_cmp(&m->pins[mid], &key) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < m->npins && pin_cmp(&m->pins[lo], &key) == 0 ? lo : m->npins;
}

/* The pin of row's raw t: 1 after, 0 before the step, -1 none, -2 pins
 * that disagree (the same ns read on both sides). */
static int pinned_exactly(const struct mrg_clock_model *m, int64_t row, int64_t t)
{
    struct mrg_clock_pin key = {row, t, 0, -1};
    size_t lo = find_pin(m, row, t);
    int side;

    if (lo == m->npins)
        return -1;
    side = m->pins[lo].after;
    for (size_t i = lo + 1; i < m->npins && pin_cmp(&m->pins[i], &key) == 0; i++)
        if (m->pins[i].after != side)
            return -2;
    return side;
}

/* The row's own pin, else that of any row that read the same ns (an
 * interval that ends where a placed one starts): as pinned_exactly. */
static int pinned(const struct mrg_clock_model *m, int64_t row, int64_t t)
{
    int side = row >= 0 ? pinned_exactly(m, row, t) : -1;
    return side >= 0 ? side : pinned_exactly(m, -1, t);
}

/* Whether raw t was read after the step. A pinned time says so itself.
 * Otherwise each piece is valid when it may put t on its side of the
 * step's moment (before its latest, after its earliest possible value); a
 * clock stepped back reads the moments around the step twice, so both may
 * be, and a clock stepped ahead never reads the gap, so neither may be:
 * then the piece that puts t nearer the middle of those values is taken. */
static int is_after(const struct mrg_clock_model *m, int64_t row, int64_t t)
{
    int64_t moment = m->step_lo_ns + (m->step_hi_ns - m->step_lo_ns) / 2;
    int64_t before = t + offset_before(m, t), after = t + offset_after(m, t);
    int before_ok = before < m->step_hi_ns, after_ok = after >= m->step_lo_ns, pin = pinned(m, row, t);

    if (pin >= 0)
        return pin;
    if (before_ok != after_ok)
        return after_ok;
    return after - moment < moment - before;
}

int64_t mrg_clock_offset_of(const struct mrg_clock_model *m, int64_t row, int64_t t)
{
    if (m->split == 0)
        return offset_on(m->rounds, m->n, t);
    return is_after(m, row, t) ? offset_after(m, t) : offset_before(m, t);
}

int64_t mrg_clock_offset_at(const struct mrg_clock_model *m, int64_t t)
{
    return mrg_clock_offset_of(m, -1, t);
}

/* The side of the first start after row's own in its sequence that was
 * read at raw end; -1 if none. */
static int next_start_side(const struct mrg_clock_model *m, int64_t row, int64_t start, int64_t end)
{
    size_t own = row >= 0 ? find_pin(m, row, start) : m->npins;
    int64_t order, best = INT64_MAX;
    int side = -1;

    if (own == m->npins || m->pins[own].order < 0)
        return -1;
    order = m->pins[own].order;
    for (size_t i = find_pin(m, -1, end); i < m->npins && m->pins[i].row == -1 && m->pins[i].peer_ns == end; i++) {
        int64_t o = m->pins[i].order;
        if (o > order && o >> 32 == order >> 32 && o < best) {
            best = o;
            side = m->pins[i].after;
        }
    }
    return side;
}

int64_t mrg_clock_end_offset_of(const struct mrg_clock_model *m, int64_t row, int64_t start, int64_t end,
                                int64_t *clamped)
{
    int64_t aligned_start, off;
    int pin;

    if (m->split == 0)
        return offset_on(m->rounds, m->n, end);
    aligned_start = start + mrg_clock_offset_of(m, row, start);
    /* On the start's side unless pinned (after a step back): an interval
     * rarely spans the step, and the moment alone would put half of the
     * ends read twice on the wrong side. Pinned: by the next start of its sequence read at
     * the same ns (intervals end to end; before its own row's pins, as an
     * interval may end at the very ns it started); by its own row (a
     * collective's exit); by every row that read that ns, or if they
     * disagree, the later reading. */
    pin = next_start_side(m, row, start, end);
    if (pin < 0)
        pin = pinned_exactly(m, row, end);
    if (pin < 0)
        pin = pinned_exactly(m, -1, end);
    if (pin == -2)
        pin = 1;
    else if (pin < 0 && m->step_ns > 0)
        pin = is_after(m, -1, end); /* a step ahead reads nothing twice */
    else if (pin < 0)
        pin = is_after(m, row, start);
    off = pin ? offset_after(m, end) : offset_before(m, end);
    /* Started before the step, ended after it: the raw end was read on the
     * later clock. */
    if (end + off < aligned_start)
        off = offset_after(m, end);
    if (end + off < aligned_start) {
        ++*clamped;
        off = aligned_start - end;
    }
    return off;
}

/* Offset change per peer ns over rounds r[0, n), as (change, span). */
static void piece_drift(const struct mrg_clock_round *r, size_t n, double *change, double *span)
{
    if (n < 2 || r[n - 1].peer_ns <= r[0].peer_ns)
        return;
    *change += (double)(r[n - 1].offset_ns - r[0].offset_ns);
    *span += (double)(r[n - 1].peer_ns - r[0].peer_ns);
}

void mrg_clock_summary(const struct mrg_clock_model *m, int64_t *offset_ns, double *drift_ppm,
                       int64_t *ref_ns, int64_t *uncertainty_ns)
{
    int64_t worst = 0;
    double change = 0, span = 0;

    if (m->n == 0) {
        *offset_ns = 0;
        *drift_ppm = 0;
        *ref_ns = 0;
        *uncertainty_ns = HM_NONE;
        return;
    }
    for (size_t i = 0; i < m->n; i++)
        if (m->rounds[i].rtt_ns > worst)
            worst = m->rounds[i].rtt_ns;
    *offset_ns = m->rounds[0].offset_ns;
    *ref_ns = m->rounds[0].peer_ns;
    /* With a step, the rate of each piece weighted by its length: the
     * step itself is no drift. */
    if (m->split) {
        piece_drift(m->rounds, m->split, &change, &span);
        piece_drift(m->rounds + m->split, m->n - m->split, &change, &span);
    } else {
        piece_drift(m->rounds, m->n, &change, &span);
    }
    *drift_ppm = span > 0 ? change / span * 1e6 : 0.0;
    *uncertainty_ns = (worst + 1) / 2;
}

/* The step between rounds i - 1 and i beyond drift and uncertainty, or 0. */
static int64_t step_between(const struct mrg_clock_model *m, size_t i)
{
    const struct mrg_clock_round *a = &m->rounds[i - 1], *b = &m->rounds[i];
    int64_t d = b->offset_ns - a->offset_ns, mag = d < 0 ? -d : d;
    int64_t slack = (b->peer_ns - a->peer_ns) / 1000000 * MRG_CLOCK_MAX_DRIFT_PPM + (a->rtt_ns + b->rtt_ns) / 2;

    return mag - slack >= MRG_CLOCK_MIN_STEP_NS ? d : 0;
}

/* Index of the round after the largest step (0: none); *count: how many. */
static size_t largest_step(const struct mrg_clock_model *m, int *count)
{
    size_t at = 0;
    int64_t best = 0;

    *count = 0;
    for (size_t i = 1; i < m->n; i++) {
        int64_t d = step_between(m, i), mag = d < 0 ? -d : d;
        if (d)
            ++*count;
        if (mag > best) {
            best = mag;
            at = i;
        }
    }
    return at;
}

int64_t mrg_clock_step(const struct mrg_clock_model *m, int64_t *at_peer_ns)
{
    int count;
    size_t i = largest_step(m, &count);

    if (i == 0)
        return 0;
    *at_peer_ns = m->rounds[i].peer_ns;
    return step_between(m, i);
}

int mrg_clock_split(struct mrg_clock_model *m)
{
    int count;
    size_t i = largest_step(m, &count);
    const struct mrg_clock_round *a, *b;

    if (i == 0)
        return 0;
    a = &m->rounds[i - 1];
    b = &m->rounds[i];
    m->split = i;
    /* The offset grows by what the peer's reading lost. */
    m->step_ns = -(b->offset_ns - a->offset_ns);
    m->step_lo_ns = a->peer_ns + a->offset_ns;
    m->step_hi_ns = b->peer_ns + b->offset_ns;
    return count;
}

int mrg_clock_place(struct mrg_clock_model *m, int64_t row, int64_t enter_ns, int64_t exit_ns,
                    int64_t ref_exit_ns)
{
    int64_t before = exit_ns + offset_before(m, exit_ns), after = exit_ns + offset_after(m, exit_ns);
    int64_t dist_before = before > ref_exit_ns ? before - ref_exit_ns : ref_exit_ns - before;
    int64_t dist_after = after > ref_exit_ns ? after - ref_exit_ns : ref_exit_ns - after;
    int side = dist_after < dist_before;

    if (m->split == 0)
        return 0;
    /* Only where the step leaves the side in doubt: elsewhere the rounds
     * say more than one collective does. */
    if (exit_ns + offset_after(m, exit_ns) < m->step_lo_ns || enter_ns + offset_before(m, enter_ns) > m->step_hi_ns)
        return 0;
    if (side) {
        int64_t t = enter_ns + offset_after(m, enter_ns);
        if (t < m->step_hi_ns && t >= m->step_lo_ns)
            m->step_hi_ns = t;
    } else if (before > m->step_lo_ns && before <= m->step_hi_ns) {
        m->step_lo_ns = before;
    }
    if (mrg_clock_pin(m, row, enter_ns, side) || mrg_clock_pin(m, row, exit_ns, side) ||
        (row >= 0 && (mrg_clock_pin(m, -1, enter_ns, side) || mrg_clock_pin(m, -1, exit_ns, side))))
        return HM_ENOMEM;
    return 0;
}

/* Appends a pin; the caller keeps the array sorted. */
static int append_pin(struct mrg_clock_model *m, int64_t row, int64_t t, int after, int64_t order)
{
    if (hm_vec_reserve((void **)&m->pins, &m->pins_cap, m->npins + 1, sizeof *m->pins))
        return HM_ENOMEM;
    m->pins[m->npins++] = (struct mrg_clock_pin){row, t, after, order};
    return 0;
}

int mrg_clock_pin(struct mrg_clock_model *m, int64_t row, int64_t t, int after)
{
    struct mrg_clock_pin p = {row, t, after, -1};
    size_t i;

    if (append_pin(m, row, t, after, -1))
        return HM_ENOMEM;
    for (i = m->npins - 1; i > 0 && pin_cmp(&m->pins[i - 1], &p) > 0; i--)
        m->pins[i] = m->pins[i - 1];
    m->pins[i] = p;
    return 0;
}

/* Whether raw t may have been read on either side of the step: each piece
 * puts it on its own side of what is known of the step's moment. */
static int in_doubt(const struct mrg_clock_model *m, int64_t t)
{
    return t + offset_before(m, t) < m->step_hi_ns && t + offset_after(m, t) >= m->step_lo_ns;
}

int mrg_clock_place_sequence(struct mrg_clock_model *m, const int64_t *row, const int64_t *start, size_t n)
{
    size_t at = 0;
    int64_t back = 0;

    if (m->split == 0 || m->step_ns >= 0)
        return 0;
    /* A step forward leaves a gap, which idle time also does: only a step
     * back is told by the sequence. */
    for (size_t i = 1; i < n; i++)
        if (start[i] - start[i - 1] < back) {
            back = start[i] - start[i - 1];
            at = i;
        }
    if (at == 0 || back > m->step_ns / 2)
        return 0;
    /* Where the rounds alone are sure of a side, the sequence must agree,
     * or it is no witness (a sequence number that does not follow time). */
    for (size_t i = 0; i < n; i++)
        if (!in_doubt(m, start[i]) && (start[i] + offset_before(m, start[i]) >= m->step_hi_ns) != (i >= at))
            return 0;
    /* Every start is pinned, those the rounds place too: an end read at
     * the same ns as the next start of its sequence is known by it.
     * Position in the sequence, the sequence in the high bits. */
    m->runs++;
    for (size_t i = 0; i < n; i++) {
        int64_t order = (m->runs << 32) | (int64_t)i;
        if (append_pin(m, row[i], start[i], i >= at, order) ||
            (row[i] >= 0 && append_pin(m, -1, start[i], i >= at, order)))
            return HM_ENOMEM;
    }
    qsort(m->pins, m->npins, sizeof *m->pins, pin_cmp);
    return 0;
}

void mrg_clock_free(struct mrg_clock_model *m)
{
    free(m->rounds);
    free(m->pins);
    memset(m, 0, sizeof *m);
}

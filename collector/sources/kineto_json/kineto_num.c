/* Exact decimal conversion of JSON number text to scaled int64.
 * Kineto writes times in microseconds, as integers or with 3 decimals;
 * epoch-sized values need 61 bits in nanoseconds, more than a double holds
 * exactly, so the text is converted digit by digit and never through a
 * double. Does not parse floats for display; counters use strtod. */
#include "kineto_json_int.h"

#include <stdbool.h>
#include <string.h>

#define MAX_DIGITS 40   /* digits kept; later ones only break exact ties */

struct decimal {
    char dig[MAX_DIGITS]; /* significant digits, no leading zeros */
    int nd;
    int exp10;            /* value = dig (as an integer) * 10^exp10 */
    bool neg;
};

/* Splits JSON number text into sign, digits and exponent. Returns -1 when
 * s is not a JSON number. */
static int decimal_scan(const char *s, size_t n, struct decimal *d)
{
    size_t i = 0;
    int dropped = 0, expv = 0, eneg = 0;

    d->nd = 0;
    d->neg = (i < n && s[i] == '-');
    i += d->neg;
    if (i >= n || s[i] < '0' || s[i] > '9')
        return -1;
    for (; i < n && s[i] >= '0' && s[i] <= '9'; i++) {
        if (d->nd == 0 && s[i] == '0')
            continue;
        if (d->nd < MAX_DIGITS)
            d->dig[d->nd++] = s[i];
        else
            dropped++;
    }
    d->exp10 = dropped;
    if (i < n && s[i] == '.') {
        if (++i >= n || s[i] < '0' || s[i] > '9')
            return -1;
        for (; i < n && s[i] >= '0' && s[i] <= '9'; i++) {
            if (d->nd == 0 && s[i] == '0') {
                d->exp10--;
                continue;
            }
            if (d->nd < MAX_DIGITS) {
                d->dig[d->nd++] = s[i];
                d->exp10--;
            }
        }
    }
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < n && (s[i] == '+' || s[i] == '-'))
            eneg = s[i++] == '-';
        if (i >= n || s[i] < '0' || s[i] > '9')
            return -1;
        for (; i < n && s[i] >= '0' && s[i] <= '9'; i++)
            if (expv < 100000)
                expv = expv * 10 + (s[i] - '0');
        d->exp10 += eneg ? -expv : expv;
    }
    return i == n ? 0 : -1;
}

/* The common shapes, "123", "-45" and "6789.123", with at most 19 digits
 * once scaled, so a uint64 holds them. Returns 0 or -1 like kj_num_scaled,
 * or 1 to hand other shapes to the general path. */
static int num_fast(const char *s, size_t n, int scale, int64_t *out)
{
    size_t i = 0, start;
    uint64_t v = 0;
    int taken = 0, round = 0;

    if (scale < 0 || scale > 9)
        return 1;
    i = n > 0 && s[0] == '-';
    for (start = i; i < n && (unsigned)(s[i] - '0') < 10; i++)
        v = v * 10 + (unsigned)(s[i] - '0');
    if (i == start || i - start + (size_t)scale > 19)
        return i == start ? -1 : 1;
    if (i < n && s[i] == '.') {
        if (++i >= n || (unsigned)(s[i] - '0') >= 10)
            return -1;
        for (; i < n && (unsigned)(s[i] - '0') < 10; i++) {
            if (taken < scale) {
                v = v * 10 + (unsigned)(s[i] - '0');
                taken++;
            } else if (taken == scale) {
                round = s[i] >= '5';   /* later digits cannot change it */
                taken++;
            }
        }
    }
    if (i != n)
        return 1;   /* an exponent (or junk the general path rejects) */
    for (; taken < scale; taken++)
        v *= 10;
    v += (uint64_t)round;
    if (v > (uint64_t)INT64_MAX)
        return -1;
    *out = s[0] == '-' ? -(int64_t)v : (int64_t)v;
    return 0;
}

int kj_num_scaled(const char *s, size_t n, int scale, int64_t *out)
{
    struct decimal d;
    uint64_t v = 0;
    int keep, i, rc;

    if ((rc = num_fast(s, n, scale, out)) <= 0)
        return rc;
    if (decimal_scan(s, n, &d) != 0)
        return -1;
    if (d.nd == 0) {
        *out = 0;
        return 0;
    }
    d.exp10 += scale;
    keep = d.nd + (d.exp10 < 0 ? d.exp10 : 0);   /* digits left of the point */
    if (d.exp10 > 19 || keep > 19 + 1)
        return -1;
    for (i = 0; i < keep; i++)
        if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, (uint64_t)(d.dig[i] - '0'), &v))
            return -1;
    for (i = 0; i < d.exp10; i++)
        if (__builtin_mul_overflow(v, 10, &v))
            return -1;
    if (keep >= 0 && keep < d.nd && d.dig[keep] >= '5')
        v++;
    if (v > (uint64_t)INT64_MAX)
        return -1;
    *out = d.neg ? -(int64_t)v : (int64_t)v;
    return 0;
}

int64_t kj_tok_int(const struct kj_tok *t, int64_t def)
{
    int64_t v;

    if (t->type != KJ_NUM && t->type != KJ_STR)
        return def;
    if (kj_num_scaled(t->p, t->n, 0, &v) != 0)
        return def;
    return v;
}

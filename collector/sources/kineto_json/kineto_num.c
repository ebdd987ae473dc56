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

/* ---- Number tokens in the document, eight digits at a time ----
 * A KJ_NUM token points into the loaded document, which KJ_PADDING bytes
 * follow, so words may be read past its end (never before its start).
 * The shape [-]digits[.digits] with at most 15 digits before the point and
 * at most 7 after, scale 0 to 3, takes few branches (numbers of varying
 * lengths made the digit loops mispredict); anything else goes to
 * kj_num_scaled, so the results are the same. */

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
static const uint64_t pow10_u64[20] = {
    1ull, 10ull, 100ull, 1000ull, 10000ull, 100000ull, 1000000ull, 10000000ull,
    100000000ull, 1000000000ull, 10000000000ull, 100000000000ull, 1000000000000ull,
    10000000000000ull, 100000000000000ull, 1000000000000000ull, 10000000000000000ull,
    100000000000000000ull, 1000000000000000000ull, 10000000000000000000ull,
};

static inline uint64_t load8(const char *p)
{
    uint64_t w;

    memcpy(&w, p, 8);
    return w;
}

/* Digits at the start of w (0..8). A byte is flagged when it is not an
 * ASCII digit; carries and borrows only move to later bytes, so the first
 * flagged byte is exact. */
static inline unsigned lead_digits(uint64_t w)
{
    uint64_t m = ((w + 0x4646464646464646ull) | (w - 0x3030303030303030ull)) & 0x8080808080808080ull;

    return m ? (unsigned)__builtin_ctzll(m) >> 3 : 8;
}

/* Value of the first k (0..8) bytes of w, which are digits: the others
 * are replaced by leading '0's, then all eight converted at once. */
static inline uint64_t first_digits(uint64_t w, unsigned k)
{
    unsigned sh = 32 - 4 * k;   /* shifts in two steps: k = 0 shifts by 64 */

    w = ((w << sh) << sh) | ((0x3030303030303030ull >> (4 * k)) >> (4 * k));
    w -= 0x3030303030303030ull;
    w = w * 10 + (w >> 8);
    return ((w & 0x000000FF000000FFull) * 0x000F424000000064ull +
            ((w >> 16) & 0x000000FF000000FFull) * 0x0000271000000001ull) >> 32;
}

static int num_doc(const char *s, size_t n, int scale, int64_t *out)
{
    const char *p = s + (n > 0 && *s == '-'), *q;
    uint64_t w0 = load8(p), w1 = load8(p + 8), v, f;
    unsigned k0 = lead_digits(w0), k1 = k0 < 8 ? 0 : lead_digits(w1), k = k0 + k1, fd, t;

    if (n == 0 || k == 0 || k == 16 || (unsigned)scale > 3)
        return kj_num_scaled(s, n, scale, out);
    v = first_digits(w0, k0) * pow10_u64[k1] + first_digits(w1, k1);
    q = p + k;
    if (*q == '.') {
        f = load8(q + 1);
        fd = lead_digits(f);
        if (fd == 0 || fd == 8)
            return kj_num_scaled(s, n, scale, out);
        t = fd < (unsigned)scale ? fd : (unsigned)scale;
        v = v * pow10_u64[scale] + first_digits(f, t) * pow10_u64[scale - t] +
            (fd > (unsigned)scale && q[1 + scale] >= '5');   /* later digits cannot change it */
        q += 1 + fd;
    } else {
        v *= pow10_u64[scale];
    }
    if (q != s + n)
        return kj_num_scaled(s, n, scale, out);   /* an exponent, junk, or not the token's end */
    *out = *s == '-' ? -(int64_t)v : (int64_t)v;
    return 0;
}
#else
static int num_doc(const char *s, size_t n, int scale, int64_t *out)
{
    return kj_num_scaled(s, n, scale, out);
}
#endif

int kj_tok_num(const struct kj_tok *t, int scale, int64_t *out)
{
    if (t->type == KJ_NUM)
        return num_doc(t->p, t->n, scale, out);
    return kj_num_scaled(t->p, t->n, scale, out);
}

int64_t kj_tok_int(const struct kj_tok *t, int64_t def)
{
    int64_t v;

    if (t->type != KJ_NUM && t->type != KJ_STR)
        return def;
    if (kj_tok_num(t, 0, &v) != 0)
        return def;
    return v;
}

/* JSON text for the Chrome export (export_chrome.c): JSON values written
 * into a query/buf.h buffer, exact numbers, strings escaped for any bytes,
 * and the copy of a stored args object. Nothing here knows the database. */
#include "export_json.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Writes -?a[.fff] with frac_digits digits after the point (0: none).
 * Hand-made because snprintf was a tenth of the export's time. */
static void put_decimal(struct qry_buf *b, bool neg, uint64_t a, int frac_digits)
{
    char t[32], *p = t + sizeof t;
    for (int i = 0; i < frac_digits; i++, a /= 10)
        *--p = (char)('0' + a % 10);
    if (frac_digits)
        *--p = '.';
    do
        *--p = (char)('0' + a % 10);
    while (a /= 10);
    if (neg)
        *--p = '-';
    qry_buf_put(b, p, (size_t)(t + sizeof t - p));
}

void qry_json_i64(struct qry_buf *b, int64_t v)
{
    put_decimal(b, v < 0, v < 0 ? 0 - (uint64_t)v : (uint64_t)v, 0);
}

void qry_json_us(struct qry_buf *b, int64_t ns)
{
    put_decimal(b, ns < 0, ns < 0 ? 0 - (uint64_t)ns : (uint64_t)ns, 3);
}

/* Length of the valid UTF-8 sequence at s (RFC 3629: no overlong forms,
 * no surrogates, nothing above U+10FFFF), or 0 when it is not one. */
static size_t utf8_len(const unsigned char *s, size_t left)
{
    unsigned char c = s[0], lo = 0x80, hi = 0xBF;
    size_t n;

    if (c >= 0xC2 && c <= 0xDF)
        n = 2;
    else if (c >= 0xE0 && c <= 0xEF)
        n = 3, lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
    else if (c >= 0xF0 && c <= 0xF4)
        n = 4, lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
    else
        return 0;
    if (left < n || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < n; i++)
        if ((s[i] & 0xC0) != 0x80)
            return 0;
    return n;
}

/* s[0..len) as a JSON string: quotes, backslashes and control characters
 * escaped, valid UTF-8 kept, each invalid byte replaced by U+FFFD. */
void qry_json_str(struct qry_buf *b, const char *s, size_t len)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0, run = 0;
    char esc[8];

    qry_buf_put(b, "\"", 1);
    while (i < len) {
        unsigned char c = u[i];
        size_t n = c < 0x80 ? 1 : utf8_len(u + i, len - i);
        if (n && c != '"' && c != '\\' && c >= 0x20) {
            i += n;
            continue;
        }
        qry_buf_put(b, s + run, i - run);
        if (!n)
            qry_buf_puts(b, "\\ufffd");
        else if (c == '"' || c == '\\')
            qry_buf_put(b, esc, (size_t)snprintf(esc, sizeof esc, "\\%c", c));
        else if (c == '\n' || c == '\t' || c == '\r')
            qry_buf_puts(b, c == '\n' ? "\\n" : c == '\t' ? "\\t" : "\\r");
        else
            qry_buf_put(b, esc, (size_t)snprintf(esc, sizeof esc, "\\u%04x", c));
        run = ++i;
    }
    qry_buf_put(b, s + run, len - run);
    qry_buf_put(b, "\"", 1);
}

void qry_json_cstr(struct qry_buf *b, const char *s) { qry_json_str(b, s ? s : "", s ? strlen(s) : 0); }

/* ---- copying a stored args object: validated, strings re-escaped ---- */

struct jcur {
    const char *p, *end;
    int depth;
};

static void j_ws(struct jcur *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
        c->p++;
}

static int hexval(const char *p)
{
    int v = 0;
    for (int i = 0; i < 4; i++) {
        char h = p[i];
        v = v * 16 + (h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10
                      : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1000);
    }
    return v < 0 ? -1 : v;
}

static void put_utf8(struct qry_buf *b, unsigned cp)
{
    char o[4];
    if (cp < 0x80)
        o[0] = (char)cp, qry_buf_put(b, o, 1);
    else if (cp < 0x800)
        o[0] = (char)(0xC0 | cp >> 6), o[1] = (char)(0x80 | (cp & 0x3F)), qry_buf_put(b, o, 2);
    else if (cp < 0x10000)
        o[0] = (char)(0xE0 | cp >> 12), o[1] = (char)(0x80 | (cp >> 6 & 0x3F)),
        o[2] = (char)(0x80 | (cp & 0x3F)), qry_buf_put(b, o, 3);
    else
        o[0] = (char)(0xF0 | cp >> 18), o[1] = (char)(0x80 | (cp >> 12 & 0x3F)),
        o[2] = (char)(0x80 | (cp >> 6 & 0x3F)), o[3] = (char)(0x80 | (cp & 0x3F)), qry_buf_put(b, o, 4);
}

/* Decodes the JSON string at c->p into raw bytes (dec is reset first). */
static bool j_string(struct jcur *c, struct qry_buf *dec)
{
    dec->n = 0;
    if (c->p >= c->end || *c->p++ != '"')
        return false;
    while (c->p < c->end && *c->p != '"') {
        const char *e;
        int v, lo;
        if (*c->p != '\\') {
            if ((unsigned char)*c->p < 0x20)
                return false;
            qry_buf_put(dec, c->p++, 1);
            continue;
        }
        if (c->end - c->p < 2)
            return false;
        e = strchr("\"\\/bfnrt", c->p[1]);
        if (e && c->p[1]) {
            qry_buf_put(dec, &"\"\\/\b\f\n\r\t"[e - "\"\\/bfnrt"], 1);
            c->p += 2;
            continue;
        }
        if (c->p[1] != 'u' || c->end - c->p < 6 || (v = hexval(c->p + 2)) < 0)
            return false;
        c->p += 6;
        if (v >= 0xD800 && v <= 0xDBFF && c->end - c->p >= 6 && c->p[0] == '\\' && c->p[1] == 'u' &&
            (lo = hexval(c->p + 2)) >= 0xDC00 && lo <= 0xDFFF) {
            v = 0x10000 + ((v - 0xD800) << 10) + (lo - 0xDC00);
            c->p += 6;
        } else if (v >= 0xD800 && v <= 0xDFFF) {
            v = 0xFFFD;   /* a lone surrogate has no UTF-8 form */
        }
        put_utf8(dec, (unsigned)v);
    }
    if (c->p >= c->end)
        return false;
    c->p++;
    return !dec->oom;
}

/* Copies a JSON number literally after checking its grammar. */
static bool j_number(struct jcur *c, struct qry_buf *out)
{
    const char *s = c->p, *p = s;
    if (p < c->end && *p == '-')
        p++;
    if (p < c->end && *p == '0')
        p++;
    else if (p < c->end && *p >= '1' && *p <= '9')
        while (p < c->end && *p >= '0' && *p <= '9')
            p++;
    else
        return false;
    if (p < c->end && *p == '.') {
        if (++p >= c->end || *p < '0' || *p > '9')
            return false;
        while (p < c->end && *p >= '0' && *p <= '9')
            p++;
    }
    if (p < c->end && (*p == 'e' || *p == 'E')) {
        if (++p < c->end && (*p == '+' || *p == '-'))
            p++;
        if (p >= c->end || *p < '0' || *p > '9')
            return false;
        while (p < c->end && *p >= '0' && *p <= '9')
            p++;
    }
    qry_buf_put(out, s, (size_t)(p - s));
    c->p = p;
    return true;
}

static bool j_value(struct jcur *c, struct qry_buf *out, struct qry_buf *dec);

/* Copies an array or object (c->p at '[' or '{'). */
static bool j_container(struct jcur *c, struct qry_buf *out, struct qry_buf *dec)
{
    char close = *c->p == '[' ? ']' : '}';
    bool first = true;

    if (++c->depth > 64)
        return false;
    qry_buf_put(out, c->p++, 1);
    for (j_ws(c); c->p < c->end && *c->p != close; first = false) {
        if (!first) {
            if (*c->p++ != ',')
                return false;
            qry_buf_put(out, ",", 1);
            j_ws(c);
        }
        if (close == '}') {
            if (!j_string(c, dec))
                return false;
            qry_json_str(out, dec->p, dec->n);
            j_ws(c);
            if (c->p >= c->end || *c->p++ != ':')
                return false;
            qry_buf_put(out, ":", 1);
        }
        if (!j_value(c, out, dec))
            return false;
        j_ws(c);
    }
    if (c->p >= c->end)
        return false;
    qry_buf_put(out, c->p++, 1);
    c->depth--;
    return true;
}

static bool j_literal(struct jcur *c, struct qry_buf *out, const char *lit)
{
    size_t n = strlen(lit);
    if ((size_t)(c->end - c->p) < n || memcmp(c->p, lit, n) != 0)
        return false;
    qry_buf_put(out, lit, n);
    c->p += n;
    return true;
}

static bool j_value(struct jcur *c, struct qry_buf *out, struct qry_buf *dec)
{
    j_ws(c);
    if (c->p >= c->end)
        return false;
    switch (*c->p) {
    case '{':
    case '[': return j_container(c, out, dec);
    case '"':
        if (!j_string(c, dec))
            return false;
        qry_json_str(out, dec->p, dec->n);
        return true;
    case 't': return j_literal(c, out, "true");
    case 'f': return j_literal(c, out, "false");
    case 'n': return j_literal(c, out, "null");
    default: return j_number(c, out);
    }
}

/* Whether key k[0..n) is one of the NULL-terminated names the export
 * wrote itself for this slice: a stored member of the same name is left
 * out so that no object has a key twice (they hold the same value). */
static bool written_key(const char *const *written, const char *k, size_t n)
{
    for (int i = 0; written[i]; i++)
        if (strlen(written[i]) == n && !memcmp(written[i], k, n))
            return true;
    return false;
}

/* Appends the members of the stored args object text to out, each preceded
 * by ','. False (out then holds junk past its old length) when the text is
 * not one JSON object. */
bool qry_json_copy_members(const char *text, size_t len, const char *const *written, struct qry_buf *out,
                           struct qry_buf *dec)
{
    struct jcur c = {text, text + len, 0};
    bool first = true;

    j_ws(&c);
    if (c.p >= c.end || *c.p++ != '{')
        return false;
    for (j_ws(&c); c.p < c.end && *c.p != '}'; j_ws(&c), first = false) {
        size_t keep = out->n;
        bool skip;
        if (!first) {
            if (*c.p++ != ',')
                return false;
            j_ws(&c);
        }
        if (!j_string(&c, dec))
            return false;
        skip = written_key(written, dec->p, dec->n);
        qry_buf_put(out, ",", 1);
        qry_json_str(out, dec->p, dec->n);
        qry_buf_put(out, ":", 1);
        j_ws(&c);
        if (c.p >= c.end || *c.p++ != ':' || !j_value(&c, out, dec))
            return false;
        if (skip)
            out->n = keep;
    }
    if (c.p >= c.end)
        return false;
    c.p++;
    j_ws(&c);
    return c.p == c.end && !out->oom;
}

/* A growing text buffer for JSON output: formatted appends, JSON string
 * escaping, and microsecond values with exactly three decimals written from
 * integer nanoseconds (no floating point, so no rounding). An append that
 * runs out of memory sets oom and drops the text; the caller checks once. */
#include "synth.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool reserve(struct syn_buf *b, size_t more)
{
    size_t cap = b->cap ? b->cap : 4096;
    char *p;

    if (b->oom)
        return false;
    if (b->n + more + 1 <= b->cap)
        return true;
    while (cap < b->n + more + 1)
        cap *= 2;
    p = realloc(b->p, cap);
    if (!p) {
        b->oom = true;
        return false;
    }
    b->p = p;
    b->cap = cap;
    return true;
}

void syn_buf_printf(struct syn_buf *b, const char *fmt, ...)
{
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || !reserve(b, (size_t)n))
        return;
    va_start(ap, fmt);
    vsnprintf(b->p + b->n, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->n += (size_t)n;
}

/* Appends s as a quoted JSON string. */
void syn_buf_json_str(struct syn_buf *b, const char *s)
{
    if (!reserve(b, 2 + 6 * strlen(s)))
        return;
    b->p[b->n++] = '"';
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\') {
            b->p[b->n++] = '\\';
            b->p[b->n++] = (char)ch;
        } else if (ch < 0x20) {
            b->n += (size_t)snprintf(b->p + b->n, 7, "\\u%04x", ch);
        } else {
            b->p[b->n++] = (char)ch;
        }
    }
    b->p[b->n++] = '"';
    b->p[b->n] = '\0';
}

/* Appends ns as microseconds with three decimals: 1234567 -> 1234.567. */
void syn_buf_us(struct syn_buf *b, int64_t ns)
{
    const char *sign = ns < 0 ? "-" : "";
    uint64_t a = ns < 0 ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;

    syn_buf_printf(b, "%s%llu.%03llu", sign, (unsigned long long)(a / 1000),
                   (unsigned long long)(a % 1000));
}

void syn_buf_free(struct syn_buf *b)
{
    free(b->p);
    memset(b, 0, sizeof *b);
}

/* The growing text buffer of query/ (buf.h). */
#include "buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Makes room for extra more bytes plus the NUL; false after setting oom. */
static bool buf_reserve(struct qry_buf *b, size_t extra)
{
    size_t cap = b->cap ? b->cap : 4096;
    char *p;

    if (b->oom)
        return false;
    if (b->n + extra + 1 <= b->cap)
        return true;
    while (cap < b->n + extra + 1)
        cap *= 2;
    p = realloc(b->p, cap);
    if (!p)
        return !(b->oom = true);
    b->p = p;
    b->cap = cap;
    return true;
}

void qry_buf_printf(struct qry_buf *b, const char *fmt, ...)
{
    va_list ap;
    int need;

    va_start(ap, fmt);
    need = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (need < 0 || !buf_reserve(b, (size_t)need))
        return;
    va_start(ap, fmt);
    vsnprintf(b->p + b->n, (size_t)need + 1, fmt, ap);
    va_end(ap);
    b->n += (size_t)need;
}

void qry_buf_put(struct qry_buf *b, const char *s, size_t n)
{
    if (!buf_reserve(b, n))
        return;
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
}

void qry_buf_puts(struct qry_buf *b, const char *s)
{
    qry_buf_put(b, s, strlen(s));
}

void qry_buf_free(struct qry_buf *b)
{
    free(b->p);
    memset(b, 0, sizeof *b);
}

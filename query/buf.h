/* The one growing text buffer of query/: responses built by hand (the
 * timeline writes tens of thousands of numbers, where cJSON's node per
 * number is too slow) and the Chrome export's events (export_json.h
 * writes JSON values into it). */
#ifndef HM_QUERY_BUF_H
#define HM_QUERY_BUF_H

#include <stdbool.h>
#include <stddef.h>

/* Zero-initialised it is empty. After an allocation fails, oom is set and
 * every later append does nothing. */
struct qry_buf {
    char *p;        /* owned (free); NUL-terminated after any append while !oom */
    size_t n, cap;
    bool oom;       /* an append failed: the text is incomplete */
};
void qry_buf_printf(struct qry_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void qry_buf_puts(struct qry_buf *b, const char *s);
void qry_buf_put(struct qry_buf *b, const char *s, size_t n);   /* n bytes of s */
void qry_buf_free(struct qry_buf *b);

#endif

/* JSON text for the Chrome export (private to export_chrome.c and
 * export_json.c): JSON values written into a query/buf.h buffer, exact
 * numbers, strings escaped whatever their bytes, and the validated copy of
 * a stored args object. */
#ifndef HM_QUERY_EXPORT_JSON_H
#define HM_QUERY_EXPORT_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"

void qry_json_i64(struct qry_buf *b, int64_t v);

/* ns as an exact decimal number of microseconds, formatted from integers:
 * 1234567 -> 1234.567, -5 -> -0.005. */
void qry_json_us(struct qry_buf *b, int64_t ns);

/* s[0..len) as a JSON string: quotes, backslashes and control characters
 * (NUL included) escaped, valid UTF-8 kept, each byte that is not part of
 * valid UTF-8 replaced by \ufffd. */
void qry_json_str(struct qry_buf *b, const char *s, size_t len);
void qry_json_cstr(struct qry_buf *b, const char *s);   /* NULL -> "" */

/* Appends the members of the JSON object text[0..len) to out, each as
 * ',"key":value', skipping keys listed in written (NULL-terminated): the
 * caller wrote them already. Strings are decoded and re-escaped, numbers
 * copied as written (no rounding of large integers). dec is scratch space.
 * False when text is not exactly one JSON object (nesting deeper than 64
 * counts as not): out then holds junk past its old length, which the
 * caller cuts off. */
bool qry_json_copy_members(const char *text, size_t len, const char *const *written, struct qry_buf *out,
                           struct qry_buf *dec);

#endif

/* Base64 (RFC 4648, with padding) into a qry_buf: binary answers inside
 * JSON (the heat map's cells) at 4/3 of their size, where a JSON array
 * of numbers costs 2 to 4 bytes a byte. */
#ifndef HM_QUERY_BASE64_H
#define HM_QUERY_BASE64_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"

void qry_base64(struct qry_buf *out, const uint8_t *p, size_t n);

#endif

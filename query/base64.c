/* Base64 into a qry_buf (base64.h). */
#include "base64.h"

void qry_base64(struct qry_buf *out, const uint8_t *p, size_t n)
{
    static const char abc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    char q[4];

    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0) |
                     (i + 2 < n ? p[i + 2] : 0);
        q[0] = abc[v >> 18 & 63];
        q[1] = abc[v >> 12 & 63];
        q[2] = i + 1 < n ? abc[v >> 6 & 63] : '=';
        q[3] = i + 2 < n ? abc[v & 63] : '=';
        qry_buf_put(out, q, 4);
    }
}

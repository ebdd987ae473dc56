/* Where bad JSON went wrong, for error reports. simdjson's first pass says
 * that the text has invalid UTF-8 or a raw control character, not where;
 * and a failed walk does not say whether the text was cut short. These
 * byte-by-byte scans answer that, on the error path only. */
#include "kineto_json_int.h"

#include <stdlib.h>

int64_t kj_diag_bad_utf8(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;

    while (i < n) {
        unsigned c = p[i], need, lo = 0x80, hi = 0xBF;
        if (c < 0x80) {
            i++;
            continue;
        }
        if (c >= 0xC2 && c <= 0xDF) {
            need = 1;
        } else if (c >= 0xE0 && c <= 0xEF) {
            need = 2;
            lo = c == 0xE0 ? 0xA0 : 0x80;   /* no overlong forms */
            hi = c == 0xED ? 0x9F : 0xBF;   /* no surrogates */
        } else if (c >= 0xF0 && c <= 0xF4) {
            need = 3;
            lo = c == 0xF0 ? 0x90 : 0x80;
            hi = c == 0xF4 ? 0x8F : 0xBF;   /* nothing above U+10FFFF */
        } else {
            return (int64_t)i;
        }
        for (unsigned k = 1; k <= need; k++) {
            unsigned d = i + k < n ? p[i + k] : 0;
            if (d < (k == 1 ? lo : 0x80) || d > (k == 1 ? hi : 0xBF))
                return (int64_t)i;
        }
        i += need + 1;
    }
    return -1;
}

int64_t kj_diag_raw_control(const char *p, size_t n)
{
    int in_str = 0;

    for (size_t i = 0; i < n; i++) {
        if (!in_str)
            in_str = p[i] == '"';
        else if (p[i] == '\\')
            i++;
        else if (p[i] == '"')
            in_str = 0;
        else if ((unsigned char)p[i] < 0x20)
            return (int64_t)i;
    }
    return -1;
}

int kj_diag_cut_short(const char *p, size_t n)
{
    char *open = NULL;   /* owned: the brackets not closed yet */
    size_t depth = 0, cap = 0;
    int in_str = 0, ok = 1;

    for (size_t i = 0; i < n && ok; i++) {
        char c = p[i];
        if (in_str) {
            if (c == '\\')
                i++;
            else if (c == '"')
                in_str = 0;
        } else if (c == '"') {
            in_str = 1;
        } else if (c == '{' || c == '[') {
            if (depth == cap) {
                char *g = realloc(open, cap ? cap * 2 : 256);
                if (!g)
                    break;   /* keep what is known: the text is at least this deep */
                open = g;
                cap = cap ? cap * 2 : 256;
            }
            open[depth++] = c;
        } else if (c == '}' || c == ']') {
            ok = depth > 0 && open[depth - 1] == (c == '}' ? '{' : '[');
            depth -= ok;
        }
    }
    free(open);
    return ok && (in_str || depth > 0);
}

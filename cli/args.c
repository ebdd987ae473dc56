/* Command-line value parsers shared by the subcommands. */
#include <stdint.h>
#include <stdlib.h>

#include "cli.h"

int cli_parse_list(const char *s, int64_t **out)
{
    int64_t *v = NULL;
    int n = 0, cap = 0;
    char *end;

    while (*s) {
        long long a = strtoll(s, &end, 10), b;
        if (end == s || a < 0)
            goto bad;
        b = a;
        s = end;
        if (*s == '-') {
            b = strtoll(s + 1, &end, 10);
            if (end == s + 1 || b < a || b - a > 1000000)
                goto bad;
            s = end;
        }
        for (long long x = a; x <= b; x++) {
            if (n == cap) {
                int64_t *nv = realloc(v, (size_t)(cap = cap ? cap * 2 : 16) * sizeof *v);
                if (!nv)
                    goto bad;
                v = nv;
            }
            v[n++] = x;
        }
        if (*s == ',' && s[1])
            s++;
        else if (*s)
            goto bad;
    }
    if (n == 0)
        goto bad;
    *out = v;
    return n;
bad:
    free(v);
    return -1;
}

/* Command-line value parsers shared by the subcommands. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

int cli_parse_int(const char *s, int lo, int hi, int *out)
{
    char *end = NULL;
    long v;

    errno = 0;
    v = s && *s ? strtol(s, &end, 10) : 0;
    if (!s || !*s || *end || errno || v < lo || v > hi)
        return -1;
    *out = (int)v;
    return 0;
}

int cli_parse_format(const char *s, enum qry_format *f)
{
    if (!strcmp(s, "table"))
        *f = QRY_FORMAT_TABLE;
    else if (!strcmp(s, "json"))
        *f = QRY_FORMAT_JSON;
    else if (!strcmp(s, "csv"))
        *f = QRY_FORMAT_CSV;
    else
        return -1;
    return 0;
}

/* auto: colour only for people at a terminal: not in a pipe or file, not
 * when NO_COLOR is set (no-color.org), not on a dumb terminal. */
int cli_parse_color(const char *when)
{
    const char *no = getenv("NO_COLOR"), *term = getenv("TERM");

    if (!strcmp(when, "always"))
        return 1;
    if (!strcmp(when, "never"))
        return 0;
    if (strcmp(when, "auto") != 0)
        return -1;
    return isatty(STDOUT_FILENO) && !(no && *no) && !(term && !strcmp(term, "dumb"));
}

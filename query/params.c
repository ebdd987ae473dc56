/* Request parameters and addresses: strict parsing of what a client sends
 * (numbers, rank lists, paths, tokens) and of --listen. Every function
 * refuses rather than guesses, so the server can answer 400 instead of
 * serving something the client did not ask for. No HTTP here. */
#include "query_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int qry_param_i64(const char *s, int64_t lo, int64_t hi, int64_t *out)
{
    char *end;
    long long v;

    if (!s || !*s || (*s != '-' && (*s < '0' || *s > '9')))
        return -1;
    errno = 0;
    v = strtoll(s, &end, 10);
    if (errno || *end || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

int qry_param_bool(const char *s, bool *out)
{
    static const char *const yes[] = {"1", "true", "yes"}, *const no[] = {"0", "false", "no"};

    for (int i = 0; s && i < 3; i++) {
        if (!strcasecmp(s, yes[i]))
            return *out = true, 0;
        if (!strcasecmp(s, no[i]))
            return *out = false, 0;
    }
    return -1;
}

/* Reads one non-negative rank number at *s, advancing it. */
static int read_rank(const char **s, long *v)
{
    char *end;

    if (**s < '0' || **s > '9')
        return -1;
    errno = 0;
    *v = strtol(*s, &end, 10);
    if (errno || *v > 1 << 20)
        return -1;
    *s = end;
    return 0;
}

int qry_param_ranks(const char *s, int *out, int max)
{
    int n = 0;
    long a, b;

    if (!s || !*s)
        return -1;
    while (*s) {
        if (read_rank(&s, &a))
            return -1;
        b = a;
        if (*s == '-' && (s++, read_rank(&s, &b) || b < a))
            return -1;
        if (b - a >= max - n)
            return -1;
        for (long x = a; x <= b; x++)
            out[n++] = (int)x;
        if (*s == ',' && s[1])
            s++;
        else if (*s)
            return -1;
    }
    return n;
}

bool qry_path_is_safe(const char *path, size_t len)
{
    if (!path || path[0] != '/' || strlen(path) != len)
        return false;   /* a %00 decoded into the middle */
    if (strchr(path, '\\') || strstr(path, "//"))
        return false;
    /* Any ".." segment, wherever it sits; "." segments are refused too. */
    for (const char *p = path; (p = strchr(p, '/')) != NULL; p++) {
        if (p[1] == '.' && (p[2] == '/' || p[2] == '\0'))
            return false;
        if (p[1] == '.' && p[2] == '.' && (p[3] == '/' || p[3] == '\0'))
            return false;
    }
    return true;
}

bool qry_host_is_loopback(const char *host)
{
    struct in_addr a4;
    struct in6_addr a6;

    if (!strcasecmp(host, "localhost"))
        return true;
    if (inet_pton(AF_INET, host, &a4) == 1)
        return (ntohl(a4.s_addr) >> 24) == 127;
    if (inet_pton(AF_INET6, host, &a6) == 1)
        return IN6_IS_ADDR_LOOPBACK(&a6);
    return false;
}

/* Copies n chars of src into host; -1 if they do not fit or are empty. */
static int copy_host(char *host, size_t hostlen, const char *src, size_t n)
{
    if (n == 0 || n >= hostlen)
        return -1;
    memcpy(host, src, n);
    host[n] = '\0';
    return 0;
}

int qry_listen_parse(const char *s, char *host, size_t hostlen, int *port)
{
    const char *colon;
    int64_t p;

    if (!s || !*s)
        return -1;
    if (s[0] == '[') {   /* [v6]:port */
        const char *close = strchr(s, ']');
        if (!close || copy_host(host, hostlen, s + 1, (size_t)(close - s - 1)))
            return -1;
        colon = close[1] == ':' ? close + 1 : NULL;
        if (close[1] && !colon)
            return -1;
    } else {
        colon = strrchr(s, ':');
        if (colon && strchr(s, ':') != colon)
            return -1;   /* a bare v6 address: ask for brackets */
        /* ":PORT" keeps the loopback default, refused like any host that
         * does not fit (it was cut short silently: "127.0" for hostlen 6). */
        if (copy_host(host, hostlen, colon == s ? "127.0.0.1" : s,
                      colon == s ? 9 : colon ? (size_t)(colon - s) : strlen(s)))
            return -1;
    }
    if (colon) {
        if (qry_param_i64(colon + 1, 0, 65535, &p))
            return -1;
        *port = (int)p;
    }
    return 0;
}

bool qry_token_equal(const char *given, const char *want)
{
    size_t gl = given ? strlen(given) : 0, wl = strlen(want);
    unsigned char diff = gl != wl;

    for (size_t i = 0; i < wl; i++)
        diff |= (unsigned char)(want[i] ^ (i < gl ? given[i] : 0));
    return given && diff == 0;
}

char *qry_error_json(const char *msg)
{
    cJSON *doc = cJSON_CreateObject();
    char *text;

    cJSON_AddStringToObject(doc, "error", msg);
    text = cJSON_PrintUnformatted(doc);
    cJSON_Delete(doc);
    return text;
}

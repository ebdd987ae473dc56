/* HTTP request parameters (query/params.c) and the query string split the
 * server does before them (libevent's evhttp_parse_query_str, then the
 * lookups of qry_call_param). The input is one parameter value, tried
 * against every parser; the first two bytes choose bounds and buffer
 * sizes. Each parser is compared with what it promises:
 *   qry_param_i64    accepts exactly /-?[0-9]+/ whose value fits and lies
 *                    in [lo, hi], and gives that value (checked against a
 *                    reference parser written here);
 *   qry_param_bool   accepts exactly the six words, any case;
 *   qry_param_ranks  gives 1..max ranks, each 0..2^20, or -1;
 *   qry_path_is_safe never passes a path with a NUL, "..", ".", "\\" or
 *                    "//" segment, or one not starting with "/";
 *   qry_listen_parse fills host within hostlen and a port in 0..65535. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/queue.h>

#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "fuzz_util.h"
#include "query/query_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const int64_t bounds[] = {INT64_MIN, -(INT64_C(1) << 62), -1000, -1, 0, 1, 10, 1000,
                                 65535, INT64_C(1) << 62, INT64_MAX};
#define NBOUNDS (sizeof bounds / sizeof bounds[0])

/* Reference for qry_param_i64: the whole string is an optional '-' then
 * digits, and the value fits in int64. */
static bool ref_i64(const char *s, int64_t *out)
{
    bool neg = *s == '-';
    uint64_t v = 0, lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;

    s += neg;
    if (!*s)
        return false;
    for (; *s; s++) {
        if (*s < '0' || *s > '9')
            return false;
        if (v > (lim - (uint64_t)(*s - '0')) / 10)
            return false;
        v = v * 10 + (uint64_t)(*s - '0');
    }
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    return true;
}

static void check_i64(const char *s, int64_t lo, int64_t hi)
{
    int64_t got = 12345, want = 0;
    bool ok = qry_param_i64(s, lo, hi, &got) == 0;
    bool ref = ref_i64(s, &want) && want >= lo && want <= hi;

    FUZZ_ASSERT(ok == ref);
    FUZZ_ASSERT(!ok || (got == want && got >= lo && got <= hi));
}

static void check_bool(const char *s)
{
    static const char *const words[] = {"1", "true", "yes", "0", "false", "no"};
    bool v = false, ok = qry_param_bool(s, &v) == 0;
    int idx = -1;

    for (int i = 0; i < 6; i++)
        if (!strcasecmp(s, words[i]))
            idx = i;
    FUZZ_ASSERT(ok == (idx >= 0));
    FUZZ_ASSERT(!ok || v == (idx < 3));
}

static void check_ranks(const char *s, int max)
{
    int *out = malloc(sizeof *out * (size_t)max);   /* exactly max: ASan sees an overrun */
    int n;

    if (!out)
        return;
    n = qry_param_ranks(s, out, max);
    FUZZ_ASSERT(n == -1 || (n >= 1 && n <= max));
    for (int i = 0; i < n; i++)
        FUZZ_ASSERT(out[i] >= 0 && out[i] <= 1 << 20);
    free(out);
}

static bool has_dot_segment(const char *p)
{
    for (; (p = strchr(p, '/')) != NULL; p++)
        if ((p[1] == '.' && (p[2] == '/' || !p[2])) ||
            (p[1] == '.' && p[2] == '.' && (p[3] == '/' || !p[3])))
            return true;
    return false;
}

static void check_path(const char *raw, size_t n)
{
    bool safe = qry_path_is_safe(raw, n);

    if (!safe)
        return;
    FUZZ_ASSERT(raw[0] == '/' && memchr(raw, '\0', n) == NULL);
    FUZZ_ASSERT(!strchr(raw, '\\') && !strstr(raw, "//") && !has_dot_segment(raw));
}

static void check_listen(const char *s, size_t hostlen)
{
    char *host = malloc(hostlen);   /* exactly hostlen: ASan sees an overrun */
    int port = -7;

    if (!host)
        return;
    if (qry_listen_parse(s, host, hostlen, &port) == 0) {
        FUZZ_ASSERT(strlen(host) < hostlen && host[0] != '\0');
        FUZZ_ASSERT(port == -7 || (port >= 0 && port <= 65535));
        (void)qry_host_is_loopback(host);
    }
    free(host);
}

/* The server's split of a query string, then qry_call_param lookups. */
static void check_query(const char *qs)
{
    struct evkeyvalq q;
    struct evkeyval *e;
    struct qry_kv kv[64];
    struct qry_call c = {.path = "/api/timeline", .kv = kv};

    TAILQ_INIT(&q);
    if (evhttp_parse_query_str(qs, &q) == 0) {
        TAILQ_FOREACH(e, &q, next) {
            if (c.nkv == 64)
                break;
            kv[c.nkv++] = (struct qry_kv){e->key, e->value};
        }
        for (int i = 0; i < c.nkv; i++) {
            const char *v = qry_call_param(&c, kv[i].key);
            FUZZ_ASSERT(v != NULL);
            check_i64(v, -(INT64_C(1) << 62), INT64_C(1) << 62);
            check_ranks(v, QRY_MAX_RANKS);
        }
    }
    evhttp_clear_headers(&q);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int64_t lo, hi;
    char *s;
    size_t n;

    if (size < 2 || size > 4096)
        return 0;
    lo = bounds[data[0] % NBOUNDS];
    hi = bounds[data[1] % NBOUNDS];
    n = size - 2;
    s = malloc(n + 1);
    if (!s)
        return 0;
    memcpy(s, data + 2, n);
    s[n] = '\0';
    check_path(s, n);   /* with any NULs the decoder left in */
    check_i64(s, lo, hi);
    check_bool(s);
    check_ranks(s, 1 + (data[0] * 17 + data[1]) % QRY_MAX_RANKS);
    check_listen(s, 1 + data[1] % 300);
    FUZZ_ASSERT(qry_token_equal(s, "s3cr3t-token") == !strcmp(s, "s3cr3t-token"));
    check_query(s);
    free(s);
    return 0;
}

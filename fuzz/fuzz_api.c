/* The JSON API's request handling without HTTP: what server.c does with a
 * request line (URI split, path decode and check, query string split),
 * then qry_api_dispatch over a small real database (fuzz_db.h). This is
 * where the timeline's parameters (t0, t1, px, ranks) and the reports'
 * (ranks, steps, top, all_steps) are parsed and used. The input is a
 * request target ("/api/timeline?t0=0&px=9"); a line break ends it, and
 * what follows is a POST body. Every answer must be a known status with a
 * body that is valid JSON (the timeline writes its JSON by hand), and the
 * database must never fail a well-formed request (no 500). */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

#include <cjson/cJSON.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "fuzz_db.h"
#include "fuzz_util.h"
#include "query/query_int.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_PARAMS 32   /* as server.c's SRV_MAX_PARAMS */

static struct {
    char path[128];
    struct qry_dbh h;   /* owned for the process's life */
} g;                    /* libFuzzer's entry points carry no context */

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    struct hm_err err;

    (void)argc, (void)argv;
    fuzz_db_make(g.path, sizeof g.path);
    hm_err_clear(&err);
    FUZZ_ASSERT(qry_dbh_open(&g.h, g.path, &err) == 0);
    return 0;
}

static void check_answer(const struct qry_call *c)
{
    cJSON *doc;

    FUZZ_ASSERT(c->out != NULL && c->out_len == strlen(c->out));
    if (c->status == 500)
        fprintf(stderr, "500: %s\n", c->out);
    FUZZ_ASSERT(c->status == 200 || c->status == 400 || c->status == 403 || c->status == 404 ||
                c->status == 405);
    doc = cJSON_ParseWithLength(c->out, c->out_len);
    if (!doc)
        fprintf(stderr, "not JSON: %.300s\n", c->out);
    FUZZ_ASSERT(doc != NULL);
    if (c->status != 200)
        FUZZ_ASSERT(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(doc, "error")));
    cJSON_Delete(doc);
}

/* As server.c's on_request, from the parsed URI on. */
static void serve(const char *target, const char *body, size_t body_len)
{
    struct evhttp_uri *uri = evhttp_uri_parse_with_flags(target, 0);
    const char *raw = uri ? evhttp_uri_get_path(uri) : NULL, *qs;
    struct qry_kv kv[MAX_PARAMS];
    struct evkeyvalq q;
    struct evkeyval *e;
    size_t len = 0;
    char *path = raw ? evhttp_uridecode(raw, 0, &len) : NULL;
    struct qry_call c = {.path = path, .kv = kv, .post = body != NULL, .body = body,
                         .body_len = body_len};

    TAILQ_INIT(&q);
    if (!path || !qry_path_is_safe(path, len) || strncmp(path, "/api/", 5))
        goto done;
    qs = evhttp_uri_get_query(uri);
    if (qs && evhttp_parse_query_str(qs, &q) != 0)
        goto done;
    TAILQ_FOREACH(e, &q, next) {
        if (c.nkv == MAX_PARAMS)
            goto done;
        kv[c.nkv++] = (struct qry_kv){e->key, e->value};
    }
    qry_api_dispatch(&g.h, &c);
    check_answer(&c);
    free(c.out);
done:
    evhttp_clear_headers(&q);
    free(path);
    if (uri)
        evhttp_uri_free(uri);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *buf, *nl;

    if (size > 8192)
        return 0;
    buf = malloc(size + 1);
    if (!buf)
        return 0;
    memcpy(buf, data, size);
    buf[size] = '\0';
    nl = memchr(buf, '\n', size);
    if (nl)
        *nl = '\0';
    serve(buf, nl ? nl + 1 : NULL, nl ? size - (size_t)(nl + 1 - buf) : 0);
    free(buf);
    return 0;
}

/* The HTTP side of the query server (API in server.h): listening, limits,
 * who may ask, decoding, caching and sending. A request goes:
 *   method (GET, HEAD, POST) -> path decoded and checked (no "..", no NUL,
 *   no backslash) -> Host header (loopback without token: only loopback
 *   names, against DNS rebinding) -> query string parsed (malformed: 400)
 *   -> /api/: token (if any), file refreshed, cache by (version, URI), else
 *   api.c -> or a web file (static.c: on disk when installed, else embedded).
 * evhttp enforces the header and body size limits (413 for big bodies) and
 * the idle timeout. One thread; each request runs to completion, except
 * POST /api/sql: its statement runs in a forked child (sql_worker.c) and
 * is answered from the event loop when the child is done or killed, so
 * the server keeps answering meanwhile. */
#include "server.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "query_int.h"
#include "sql_worker.h"

#define SRV_MAX_HEADERS 16384        /* bytes of request line and headers */
#define SRV_MAX_BODY 65536           /* bytes of a POST body (SQL text) */
#define SRV_MAX_PARAMS 32
#define SRV_CACHE_SLOTS 64
#define SRV_CACHE_MAX_BODY (8 << 20)    /* bigger answers are not kept */
#define SRV_CACHE_MAX_TOTAL (64 << 20)  /* all kept answers together */

struct cache_ent {
    char *key;          /* owned: the request URI */
    char *body;         /* owned */
    size_t len;
    int64_t version;    /* dbh.version it was computed at */
};

struct srv {
    const struct qry_serve_opts *o;   /* borrowed */
    FILE *log;                        /* borrowed */
    struct qry_dbh dbh;
    char host[256];                   /* bound address as given */
    int port;                         /* bound port (after port 0 was resolved) */
    bool check_host;                  /* loopback and no token: Host must be a loopback name */
    struct event_base *base;          /* owned */
    struct evhttp *http;              /* owned */
    struct event *sig[2];             /* owned: SIGINT, SIGTERM */
    struct qry_sqlw *sqlw;            /* owned: console statements in children */
    struct cache_ent cache[SRV_CACHE_SLOTS];
    size_t cache_next;                /* slot replaced next (round robin) */
    size_t cache_bytes;               /* bodies kept, bytes */
};

static const char *reason(int status)
{
    switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    default: return status < 500 ? "Client Error" : "Internal Server Error";
    }
}

/* Headers on every answer: no sniffing, no framing, no referrers; the
 * page may load only its own scripts and talk only to this server. */
static void add_common_headers(struct evhttp_request *req, const char *ctype)
{
    struct evkeyvalq *h = evhttp_request_get_output_headers(req);

    evhttp_add_header(h, "Content-Type", ctype);
    evhttp_add_header(h, "X-Content-Type-Options", "nosniff");
    evhttp_add_header(h, "X-Frame-Options", "DENY");
    evhttp_add_header(h, "Referrer-Policy", "no-referrer");
    evhttp_add_header(h, "Content-Security-Policy",
                      "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'");
}

static void send_body(struct evhttp_request *req, int status, const char *ctype, const char *body, size_t len,
                      bool no_store)
{
    struct evbuffer *buf = evbuffer_new();

    add_common_headers(req, ctype);
    if (no_store)
        evhttp_add_header(evhttp_request_get_output_headers(req), "Cache-Control", "no-store");
    if (buf)
        evbuffer_add(buf, body, len);
    evhttp_send_reply(req, status, reason(status), buf);
    evbuffer_free(buf);
}

static void send_json(struct evhttp_request *req, int status, const char *json, size_t len)
{
    send_body(req, status, "application/json", json, len, true);
}

static void send_error(struct evhttp_request *req, int status, const char *msg)
{
    char *text = qry_error_json(msg);

    if (status == 401)
        evhttp_add_header(evhttp_request_get_output_headers(req), "WWW-Authenticate", "Bearer");
    send_body(req, status, "application/json", text ? text : "{}", text ? strlen(text) : 2, true);
    free(text);
}

/* The host part of a Host header: "[::1]:8080" -> "::1", "a:80" -> "a". */
static bool host_allowed(const char *hdr)
{
    char name[256];
    const char *end;
    size_t n;

    if (!hdr)
        return true;   /* HTTP/1.0 clients send none; browsers always do */
    if (hdr[0] == '[') {
        end = strchr(hdr, ']');
        hdr++;
    } else {
        end = strchr(hdr, ':');
    }
    n = end ? (size_t)(end - hdr) : strlen(hdr);
    if (n == 0 || n >= sizeof name)
        return false;
    memcpy(name, hdr, n);
    name[n] = '\0';
    return qry_host_is_loopback(name);
}

static bool token_ok(const struct srv *s, struct evhttp_request *req, const struct qry_call *c)
{
    const char *auth = evhttp_find_header(evhttp_request_get_input_headers(req), "Authorization");

    if (!s->o->token)
        return true;
    if (auth && !strncasecmp(auth, "Bearer ", 7))
        return qry_token_equal(auth + 7, s->o->token);
    return qry_token_equal(qry_call_param(c, "token"), s->o->token);
}

/* Parses the query string into kv (pointers into q); -1 when malformed
 * or when it has too many parameters. */
static int parse_params(const struct evhttp_uri *uri, struct evkeyvalq *q, struct qry_kv *kv, int *n)
{
    const char *qs = evhttp_uri_get_query(uri);
    struct evkeyval *e;

    *n = 0;
    TAILQ_INIT(q);
    if (!qs)
        return 0;
    if (evhttp_parse_query_str(qs, q) != 0)
        return -1;
    TAILQ_FOREACH(e, q, next) {
        if (*n == SRV_MAX_PARAMS)
            return -1;
        kv[(*n)++] = (struct qry_kv){e->key, e->value};
    }
    return 0;
}

static const struct cache_ent *cache_get(const struct srv *s, const char *key)
{
    for (size_t i = 0; i < SRV_CACHE_SLOTS; i++) {
        const struct cache_ent *e = &s->cache[i];
        if (e->key && e->version == s->dbh.version && !strcmp(e->key, key))
            return e;
    }
    return NULL;
}

/* Keeps body (taking it) under key; frees it when it is not kept. */
/* Keeps an answer (a whole run's per-step straggler table is ~2 MB on a
 * long run, and costs 0.4 s to build). Round robin; older slots go first
 * while the total would pass SRV_CACHE_MAX_TOTAL. */
static void cache_put(struct srv *s, const char *key, char *body, size_t len)
{
    struct cache_ent *e = &s->cache[s->cache_next++ % SRV_CACHE_SLOTS];
    char *k = len <= SRV_CACHE_MAX_BODY ? strdup(key) : NULL;

    if (!k) {
        free(body);
        return;
    }
    s->cache_bytes -= e->body ? e->len : 0;
    free(e->key);
    free(e->body);
    *e = (struct cache_ent){k, body, len, s->dbh.version};
    s->cache_bytes += len;
    for (size_t i = 1; i < SRV_CACHE_SLOTS && s->cache_bytes > SRV_CACHE_MAX_TOTAL; i++) {
        struct cache_ent *old = &s->cache[(s->cache_next + i - 1) % SRV_CACHE_SLOTS];
        if (old == e || !old->body)
            continue;
        s->cache_bytes -= old->len;
        free(old->key);
        free(old->body);
        *old = (struct cache_ent){0};
    }
}

/* Copies the request body into a NUL-terminated string (owned). */
static char *read_body(struct evhttp_request *req, size_t *len)
{
    struct evbuffer *in = evhttp_request_get_input_buffer(req);
    char *b;

    *len = evbuffer_get_length(in);
    b = malloc(*len + 1);
    if (b) {
        evbuffer_copyout(in, b, *len);
        b[*len] = '\0';
    }
    return b;
}

static void serve_api(struct srv *s, struct evhttp_request *req, struct qry_call *c)
{
    const char *uri = evhttp_request_get_uri(req);
    const struct cache_ent *hit = NULL;
    struct hm_err err;
    char *body = NULL;

    hm_err_clear(&err);
    if (!token_ok(s, req, c)) {
        send_error(req, 401, "a token is required: Authorization: Bearer TOKEN, or ?token=TOKEN");
        return;
    }
    if (qry_dbh_refresh(&s->dbh, &err) != 0) {
        send_error(req, 503, err.msg);
        return;
    }
    if (!c->post && (hit = cache_get(s, uri)) != NULL) {
        send_body(req, 200, "application/json", hit->body, hit->len, true);
        return;
    }
    if (c->post && !(body = read_body(req, &c->body_len))) {
        send_error(req, 500, "out of memory");
        return;
    }
    if (c->post && !strcmp(c->path, "/api/sql")) {   /* answered later (sql_worker.h) */
        qry_sqlw_start(s->sqlw, req, body, c->body_len);
        free(body);
        return;
    }
    c->body = body;
    qry_api_dispatch(&s->dbh, c);
    send_body(req, c->status, "application/json", c->out ? c->out : "{}", c->out ? c->out_len : 2, true);
    if (c->status >= 500)
        fprintf(s->log, "htamerge: serve: %s: %.*s\n", uri, (int)(c->out_len > 300 ? 300 : c->out_len),
                c->out ? c->out : "");
    if (c->status == 200 && c->cacheable)
        cache_put(s, uri, c->out, c->out_len);
    else
        free(c->out);
    free(body);
}

static void serve_static(struct evhttp_request *req, const char *path)
{
    struct qry_asset a;
    struct evbuffer *buf;

    if (evhttp_request_get_command(req) == EVHTTP_REQ_POST) {
        send_error(req, 405, "static files are read with GET");
    } else if (!qry_asset_find(path, &a)) {
        send_error(req, 404, "not found");
    } else {
        add_common_headers(req, a.mime);
        evhttp_add_header(evhttp_request_get_output_headers(req), "Cache-Control", "no-cache");
        buf = evbuffer_new();
        if (buf)   /* a copy: a file read from disk is freed right here */
            evbuffer_add(buf, a.data, a.len);
        qry_asset_release(&a);
        evhttp_send_reply(req, 200, "OK", buf);
        evbuffer_free(buf);
    }
}

static void on_request(struct evhttp_request *req, void *arg)
{
    struct srv *s = arg;
    const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
    const char *raw = uri ? evhttp_uri_get_path(uri) : NULL;
    struct qry_kv kv[SRV_MAX_PARAMS];
    struct evkeyvalq q;
    size_t len = 0;
    char *path = raw ? evhttp_uridecode(raw, 0, &len) : NULL;
    struct qry_call c = {.path = path, .kv = kv, .post = evhttp_request_get_command(req) == EVHTTP_REQ_POST};

    TAILQ_INIT(&q);
    if (!path || !qry_path_is_safe(path, len))
        send_error(req, 400, "bad path");
    else if (s->check_host && !host_allowed(evhttp_find_header(evhttp_request_get_input_headers(req), "Host")))
        send_error(req, 403, "this server answers only to loopback host names");
    else if (parse_params(uri, &q, kv, &c.nkv) != 0)
        send_error(req, 400, "malformed query string");
    else if (!strncmp(path, "/api/", 5))
        serve_api(s, req, &c);
    else
        serve_static(req, path);
    evhttp_clear_headers(&q);
    free(path);
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
    (void)sig, (void)what;
    event_base_loopexit(arg, NULL);
}

/* Binds host:port and learns the port actually bound (port 0). */
static int bind_listen(struct srv *s, struct hm_err *err)
{
    struct evhttp_bound_socket *bs = evhttp_bind_socket_with_handle(s->http, s->host, (ev_uint16_t)s->port);
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;

    if (!bs)
        return hm_err_set(err, HM_EIO, NULL, -1, "cannot listen on %s:%d: %s", s->host, s->port,
                          errno ? strerror(errno) : "address unusable or in use");
    /* Accepted sockets inherit it: without it every answer on a reused
     * connection waited ~40 ms for the client's delayed ACK (Nagle). */
    setsockopt(evhttp_bound_socket_get_fd(bs), IPPROTO_TCP, TCP_NODELAY, &(int){1}, sizeof(int));
    if (getsockname(evhttp_bound_socket_get_fd(bs), (struct sockaddr *)&ss, &sl) == 0)
        s->port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                                 : ((struct sockaddr_in *)&ss)->sin_port);
    return 0;
}

static int setup(struct srv *s, struct hm_err *err)
{
    s->base = event_base_new();
    s->http = s->base ? evhttp_new(s->base) : NULL;
    if (!s->http)
        return hm_err_set(err, HM_ENOMEM, NULL, -1, "cannot start the event loop");
    evhttp_set_max_headers_size(s->http, SRV_MAX_HEADERS);
    evhttp_set_max_body_size(s->http, SRV_MAX_BODY);
    evhttp_set_timeout(s->http, s->o->timeout_s > 0 ? s->o->timeout_s : 30);
    evhttp_set_allowed_methods(s->http, EVHTTP_REQ_GET | EVHTTP_REQ_HEAD | EVHTTP_REQ_POST);
    evhttp_set_gencb(s->http, on_request, s);
    s->sig[0] = evsignal_new(s->base, SIGINT, on_signal, s->base);
    s->sig[1] = evsignal_new(s->base, SIGTERM, on_signal, s->base);
    if (!s->sig[0] || !s->sig[1] || event_add(s->sig[0], NULL) || event_add(s->sig[1], NULL))
        return hm_err_set(err, HM_ENOMEM, NULL, -1, "cannot watch signals");
    if (!(s->sqlw = qry_sqlw_new(s->base, s->o->db_path, send_json, s->log)))
        return hm_err_set(err, HM_ENOMEM, NULL, -1, "cannot set up the SQL console's workers");
    return bind_listen(s, err);
}

static void teardown(struct srv *s)
{
    for (int i = 0; i < 2; i++)
        if (s->sig[i])
            event_free(s->sig[i]);
    qry_sqlw_free(s->sqlw);   /* before evhttp_free: it may hold requests */
    if (s->http)
        evhttp_free(s->http);
    if (s->base)
        event_base_free(s->base);
    for (size_t i = 0; i < SRV_CACHE_SLOTS; i++) {
        free(s->cache[i].key);
        free(s->cache[i].body);
    }
    qry_dbh_close(&s->dbh);
}

/* Checks the address: anything but loopback needs a token, because the API
 * answers any SQL read on the file. */
static int check_listen(struct srv *s, struct hm_err *err)
{
    const struct qry_serve_opts *o = s->o;

    s->port = 8080;
    if (qry_listen_parse(o->listen ? o->listen : "127.0.0.1:8080", s->host, sizeof s->host, &s->port))
        return hm_err_set(err, HM_EINVAL, NULL, -1, "bad --listen '%s' (HOST:PORT, e.g. 127.0.0.1:8080)",
                          o->listen);
    if (o->token && !*o->token)
        return hm_err_set(err, HM_EINVAL, NULL, -1, "the token is empty");
    if (!qry_host_is_loopback(s->host) && !o->token)
        return hm_err_set(err, HM_EINVAL, NULL, -1,
                          "%s is not a loopback address: anyone who can reach it could read the file; "
                          "give a --token (or listen on 127.0.0.1)", s->host);
    s->check_host = qry_host_is_loopback(s->host) && !o->token;
    return 0;
}

int qry_serve(const struct qry_serve_opts *o, struct hm_err *err)
{
    struct srv s = {.o = o, .log = o->log ? o->log : stderr};
    int rc = check_listen(&s, err);
    char web[PATH_MAX];

    s.dbh.memory_mb = o->memory_mb;
    if (rc == 0)
        rc = qry_dbh_open(&s.dbh, o->db_path, err);
    if (rc == 0)
        rc = setup(&s, err);
    if (rc == 0) {
        fprintf(s.log, "htamerge: serving %s at http://%s%s%s:%d/%s\n", o->db_path, strchr(s.host, ':') ? "[" : "",
                s.host, strchr(s.host, ':') ? "]" : "", s.port, o->token ? "?token=TOKEN" : "");
        if (qry_asset_dir(web, sizeof web))
            fprintf(s.log, "htamerge: web files from %s (the embedded copy for files not there)\n", web);
        fflush(s.log);
        if (event_base_dispatch(s.base) < 0)
            rc = hm_err_set(err, HM_EIO, NULL, -1, "the event loop failed");
    }
    teardown(&s);
    return rc;
}

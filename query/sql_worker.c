/* SQL console statements in forked children (API in sql_worker.h). A job:
 *   qry_sqlw_start: a free slot (else 503) -> pipe, fork
 *     child: signals back to default, inherited sockets closed, the file
 *            opened afresh (qry_dbh_open, as the server opens it),
 *            qry_api_dispatch (api.c: guard, limits, JSON), then
 *            "STATUS LENGTH\n" + JSON written to the pipe, _exit
 *     parent: reads the pipe from the event loop as the child writes it
 *   -> EOF: answers what the child wrote (500 when it ended short)
 *   -> the deadline (time limit + grace): SIGKILL, 504
 *   -> an answer over QRY_SQLW_MAX_ANSWER: SIGKILL, 400
 *   -> the client closes its connection (EV_CLOSED on its socket: evhttp
 *      does not read while a request is being answered): SIGKILL, 400;
 *      or evhttp drops the connection (its close callback): SIGKILL
 *   then SIGCHLD reaps the child; the slot is free once the job is
 *   answered, its pipe closed and its child reaped.
 * Why forking is safe: the server is single-threaded and forks between
 * requests, when its connection holds no transaction and SQLite no mutex.
 * The child never touches that connection (SQLite forbids using one across
 * fork) and reads through its own; the per-file lock bookkeeping of
 * SQLite's unix VFS it inherits then records no locks, so the child's
 * connection takes real locks of its own. */
#include "sql_worker.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>

#include "query_int.h"
#include "common/monotime.h"

#define SQLW_READ_CHUNK 65536
#define SQLW_HEAD_MAX 48   /* "STATUS LENGTH\n" */

struct job {
    struct qry_sqlw *w;            /* borrowed: the owner */
    bool used;
    struct evhttp_request *req;    /* borrowed from evhttp; NULL once answered or dropped */
    pid_t pid;                     /* the child; 0 once reaped */
    int fd;                        /* owned: the pipe's read end; -1 once closed */
    struct event *rd, *deadline;   /* owned; NULL once closed */
    struct event *gone;            /* owned: the client's socket closing; NULL once answered */
    char *buf;                     /* owned: what the child wrote so far */
    size_t len, cap;
    double t0;                     /* monotonic seconds at the fork, for the log */
};

struct qry_sqlw {
    struct event_base *base;       /* borrowed */
    const char *db_path;           /* borrowed */
    qry_sqlw_reply_fn *reply;
    FILE *log;                     /* borrowed */
    struct event *sigchld;         /* owned */
    struct job jobs[QRY_SQLW_MAX_RUNNING];
};

static void send_error(struct qry_sqlw *w, struct evhttp_request *req, int status, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void send_error(struct qry_sqlw *w, struct evhttp_request *req, int status, const char *fmt, ...)
{
    char msg[300], *text;
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    text = qry_error_json(msg);
    w->reply(req, text ? status : 500, text ? text : "{}", text ? strlen(text) : 2);
    free(text);
}

/* ---- the child ---- */

static bool write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t k = write(fd, p, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return false;
        p += k;
        n -= (size_t)k;
    }
    return true;
}

/* Undoes what the child inherited but must not act on: the server's signal
 * handlers (they write to libevent's socket pair), and every socket (the
 * listener and the clients' connections, which would otherwise stay open
 * until the child ends even after the server closed them). */
static void child_detach(void)
{
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGCHLD, SIGPIPE};
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    struct stat sb;

    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        signal(sigs[i], SIG_DFL);
    while (d && (e = readdir(d)) != NULL) {
        int fd = atoi(e->d_name);
        if (fd > 2 && fd != dirfd(d) && fstat(fd, &sb) == 0 && S_ISSOCK(sb.st_mode))
            close(fd);
    }
    if (d)
        closedir(d);
}

/* Runs the statement as api.c would in the server and writes the answer
 * to fd. Never returns. */
static void child_run(const struct qry_sqlw *w, int fd, const char *body, size_t len)
    __attribute__((noreturn));
static void child_run(const struct qry_sqlw *w, int fd, const char *body, size_t len)
{
    struct qry_dbh h = {0};
    struct qry_call c = {.path = "/api/sql", .post = true, .body = body, .body_len = len};
    struct hm_err err;
    char head[SQLW_HEAD_MAX];
    int n;

    child_detach();
    hm_err_clear(&err);
    if (qry_dbh_open(&h, w->db_path, &err) == 0) {
        qry_api_dispatch(&h, &c);
    } else {   /* as server.c answers a file it cannot read */
        c.status = 503;
        c.out = qry_error_json(err.msg);
    }
    if (!c.out)
        c.status = 500, c.out = strdup("{\"error\":\"out of memory\"}");
    c.out_len = c.out ? strlen(c.out) : 0;
    n = snprintf(head, sizeof head, "%d %zu\n", c.status, c.out_len);
    if (write_all(fd, head, (size_t)n))
        write_all(fd, c.out ? c.out : "", c.out_len);
    /* No exit handlers: the parent's stdio buffers and its sanitizer's
     * leak check are not the child's business. */
    _exit(0);
}

/* ---- the parent ---- */

/* Closes the pipe and the job's events; the child may still be running. */
static void job_close(struct job *j)
{
    if (j->gone)
        event_free(j->gone);
    if (j->rd)
        event_free(j->rd);
    if (j->deadline)
        event_free(j->deadline);
    if (j->fd >= 0)
        close(j->fd);
    j->rd = j->deadline = j->gone = NULL;
    j->fd = -1;
}

/* Frees the slot once the job is answered, closed and reaped. */
static void job_release(struct job *j)
{
    if (j->req || j->fd >= 0 || j->pid > 0)
        return;
    free(j->buf);
    *j = (struct job){.fd = -1};
}

/* Answers the job's request (once) and stops watching its connection. */
static void job_answer(struct job *j, int status, const char *json, size_t len)
{
    struct evhttp_connection *evcon;

    if (j->gone)
        event_free(j->gone);
    j->gone = NULL;
    if (!j->req)
        return;
    evcon = evhttp_request_get_connection(j->req);
    if (evcon)   /* the connection outlives the request (keep-alive) */
        evhttp_connection_set_closecb(evcon, NULL, NULL);
    j->w->reply(j->req, status, json, len);
    j->req = NULL;
}

static void job_kill(struct job *j)
{
    if (j->pid > 0)   /* not reaped yet, so the pid is still ours */
        kill(j->pid, SIGKILL);
}

/* Stops a job early: kills the child, answers {"error"} (when status is
 * not 0), closes the pipe. */
static void job_stop(struct job *j, int status, const char *msg)
{
    char *text = status ? qry_error_json(msg) : NULL;

    job_kill(j);
    if (status)
        job_answer(j, text ? status : 500, text ? text : "{}", text ? strlen(text) : 2);
    free(text);
    job_close(j);
    job_release(j);
}

/* Parses "STATUS LENGTH\n" at the start of the buffer; the header's length
 * or 0 while incomplete, -1 when malformed. */
static int job_head(const struct job *j, int *status, size_t *body_len)
{
    const char *nl = memchr(j->buf, '\n', j->len < SQLW_HEAD_MAX ? j->len : SQLW_HEAD_MAX);
    char *end;

    if (!nl)
        return j->len < SQLW_HEAD_MAX ? 0 : -1;
    *status = (int)strtol(j->buf, &end, 10);
    *body_len = strtoull(end, &end, 10);
    return end == nl && *status >= 100 && *status < 600 ? (int)(nl - j->buf) + 1 : -1;
}

/* The child's pipe ended: answers what it wrote. */
static void job_finish(struct job *j)
{
    size_t body_len = 0;
    int status = 0, head = j->len ? job_head(j, &status, &body_len) : -1;

    if (head > 0 && j->len - (size_t)head == body_len) {
        job_answer(j, status, j->buf + head, body_len);
    } else {
        fprintf(j->w->log, "htamerge: serve: /api/sql: the worker (pid %d) ended without a whole answer\n",
                (int)j->pid);
        fflush(j->w->log);
        job_stop(j, 500, "the SQL worker ended without an answer (out of memory?)");
        return;
    }
    job_close(j);
    job_release(j);
}

/* Grows the buffer for the next read; false when out of memory. */
static bool job_reserve(struct job *j)
{
    size_t cap = j->cap ? j->cap * 2 : SQLW_READ_CHUNK;
    char *p;

    if (j->cap - j->len >= SQLW_READ_CHUNK)
        return true;
    if (!(p = realloc(j->buf, cap)))
        return false;
    j->buf = p;
    j->cap = cap;
    return true;
}

/* Drains the pipe while the child writes (a full pipe would block it). */
static void on_readable(evutil_socket_t fd, short what, void *arg)
{
    struct job *j = arg;
    size_t body_len = 0;
    int status, head;
    ssize_t n;

    (void)what;
    for (;;) {
        if (!job_reserve(j)) {
            job_stop(j, 500, "out of memory reading the SQL answer");
            return;
        }
        n = read(fd, j->buf + j->len, j->cap - j->len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        if (n <= 0)
            break;
        j->len += (size_t)n;
        /* The length comes first: a big answer is refused before it is read. */
        if ((head = job_head(j, &status, &body_len)) < 0 || body_len > QRY_SQLW_MAX_ANSWER) {
            job_stop(j, head < 0 ? 500 : 400, head < 0 ? "the SQL worker wrote a malformed answer"
                                 : "the answer is larger than 32 MiB; select fewer rows or columns");
            return;
        }
    }
    job_finish(j);
}

static void on_deadline(evutil_socket_t fd, short what, void *arg)
{
    struct job *j = arg;
    char msg[160];

    (void)fd, (void)what;
    fprintf(j->w->log, "htamerge: serve: /api/sql: killed the statement of pid %d after %.1f s\n", (int)j->pid,
            hm_mono_s() - j->t0);
    fflush(j->w->log);
    snprintf(msg, sizeof msg, "statement ran past its time limit (%d ms) and was stopped", QRY_API_SQL_MS);
    job_stop(j, 504, msg);
}

/* The client closed its socket (or shut down its side): nobody waits for
 * the answer. The reply evhttp then fails to send frees the connection. */
static void on_client_gone(evutil_socket_t fd, short what, void *arg)
{
    (void)fd, (void)what;
    job_stop(arg, 400, "the client closed the connection");
}

/* evhttp drops the connection. evhttp frees a request still on the connection
 * right after this; one it already detached (EOF while we worked) is ours
 * to free, as evhttp_send_reply does for a request with no connection. */
static void on_client_closed(struct evhttp_connection *evcon, void *arg)
{
    struct job *j = arg;

    (void)evcon;
    if (j->req && !evhttp_request_get_connection(j->req))
        evhttp_request_free(j->req);
    j->req = NULL;
    job_stop(j, 0, NULL);
}

static void on_sigchld(evutil_socket_t sig, short what, void *arg)
{
    struct qry_sqlw *w = arg;

    (void)sig, (void)what;
    for (int i = 0; i < QRY_SQLW_MAX_RUNNING; i++) {
        struct job *j = &w->jobs[i];
        pid_t r;
        if (!j->used || j->pid <= 0)
            continue;
        r = waitpid(j->pid, NULL, WNOHANG);
        if (r == j->pid || (r < 0 && errno == ECHILD)) {
            j->pid = 0;
            job_release(j);
        }
    }
}

/* Forks the job's child; 0, or -1 with errno. */
static int job_fork(struct job *j, const char *body, size_t len)
{
    struct timeval tv = {(QRY_API_SQL_MS + QRY_SQLW_GRACE_MS) / 1000,
                         (QRY_API_SQL_MS + QRY_SQLW_GRACE_MS) % 1000 * 1000};
    int p[2];

    if (pipe2(p, O_CLOEXEC) != 0)
        return -1;
    j->fd = p[0];
    j->rd = event_new(j->w->base, p[0], EV_READ | EV_PERSIST, on_readable, j);
    j->deadline = evtimer_new(j->w->base, on_deadline, j);
    if (!j->rd || !j->deadline || fcntl(p[0], F_SETFL, O_NONBLOCK) != 0) {
        close(p[1]);
        errno = ENOMEM;
        return -1;
    }
    j->t0 = hm_mono_s();
    j->pid = fork();
    if (j->pid == 0) {
        close(p[0]);
        child_run(j->w, p[1], body, len);
    }
    close(p[1]);
    if (j->pid < 0) {
        j->pid = 0;
        return -1;
    }
    event_add(j->rd, NULL);
    event_add(j->deadline, &tv);
    return 0;
}

void qry_sqlw_start(struct qry_sqlw *w, struct evhttp_request *req, const char *body, size_t len)
{
    struct evhttp_connection *evcon;
    struct bufferevent *bev;
    struct job *j = NULL;
    int e;

    for (int i = 0; i < QRY_SQLW_MAX_RUNNING && !j; i++)
        j = w->jobs[i].used ? NULL : &w->jobs[i];
    if (!j) {
        send_error(w, req, 503, "the SQL console is busy (%d statements running); try again", QRY_SQLW_MAX_RUNNING);
        return;
    }
    *j = (struct job){.w = w, .used = true, .fd = -1};
    if (job_fork(j, body, len) != 0) {
        e = errno;
        job_close(j);
        job_release(j);
        send_error(w, req, 503, "cannot start the SQL worker: %s", strerror(e));
        return;
    }
    j->req = req;
    evcon = evhttp_request_get_connection(req);
    evhttp_connection_set_closecb(evcon, on_client_closed, j);
    bev = evhttp_connection_get_bufferevent(evcon);
    j->gone = bev ? event_new(w->base, bufferevent_getfd(bev), EV_CLOSED, on_client_gone, j) : NULL;
    if (j->gone)
        event_add(j->gone, NULL);
}

struct qry_sqlw *qry_sqlw_new(struct event_base *base, const char *db_path, qry_sqlw_reply_fn *reply,
                              FILE *log)
{
    struct qry_sqlw *w = calloc(1, sizeof *w);

    if (!w)
        return NULL;
    *w = (struct qry_sqlw){.base = base, .db_path = db_path, .reply = reply, .log = log};
    for (int i = 0; i < QRY_SQLW_MAX_RUNNING; i++)
        w->jobs[i].fd = -1;
    w->sigchld = evsignal_new(base, SIGCHLD, on_sigchld, w);
    if (!w->sigchld || event_add(w->sigchld, NULL) != 0) {
        qry_sqlw_free(w);
        return NULL;
    }
    return w;
}

void qry_sqlw_free(struct qry_sqlw *w)
{
    if (!w)
        return;
    for (int i = 0; i < QRY_SQLW_MAX_RUNNING; i++) {
        struct job *j = &w->jobs[i];
        if (!j->used)
            continue;
        job_kill(j);
        while (j->pid > 0 && waitpid(j->pid, NULL, 0) < 0 && errno == EINTR)
            ;
        if (j->req && evhttp_request_get_connection(j->req))
            evhttp_connection_set_closecb(evhttp_request_get_connection(j->req), NULL, NULL);
        else if (j->req)   /* detached: no connection will free it */
            evhttp_request_free(j->req);
        job_close(j);
        free(j->buf);
    }
    if (w->sigchld)
        event_free(w->sigchld);
    free(w);
}

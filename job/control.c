/* Rank 0's capture control: the budget planner (collector/capture_budget.h)
 * fed with rank 0's own progress, the plans it sends to every rank, and
 * the control socket through which `htamerge capture` asks for steps in
 * full from another shell. Other ranks only apply the plans they receive
 * (loop.c). Nothing here may stop the job: a socket that cannot be made is
 * said once, and the job runs on without on-demand capture. */
#include <errno.h>
#include <fcntl.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "collector/capture_budget.h"
#include "collector/rank.h"
#include "common/control_socket.h"
#include "common/err.h"
#include "common/monotime.h"
#include "common/protocol.h"
#include "job_int.h"

enum { TICK_NS = 100000000, MAX_CLIENTS = 8, LINE_MAX_BYTES = 256, MAX_SENDS = 64 };

struct client {
    int fd;              /* -1: free */
    char line[LINE_MAX_BYTES];
    size_t n;
    int64_t req_id;      /* waiting for this request to finish; 0: not yet asked */
};

struct send {            /* one plan on its way to every other rank */
    struct hm_capture_plan plan;
    MPI_Request *req;
};

struct peer_step {       /* a rank's last HM_TAG_PROGRESS */
    int64_t step, step_ns, at_ns;   /* at_ns: when rank 0 got it; step -1: none */
};

struct job_control {
    struct cap_budget b;
    struct peer_step *peers; /* [size]; [0] unused (rank 0 reads its own ring) */
    int size, verbose;
    int manual;          /* --cupti-window: its own windows; only requests change the plan */
    int64_t next_tick;
    int listen_fd;
    char sock[108], note[300];
    struct client cl[MAX_CLIENTS];
    struct send sends[MAX_SENDS];
    int nsends;
};

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The socket and the note beside it; -1 and said when it cannot be made. */
static int open_socket(struct job_control *jc, const char *output)
{
    char dir[256], abs[PATH_MAX];
    struct sockaddr_un un = {.sun_family = AF_UNIX};
    FILE *f;
    int fd;

    if (hm_control_dir(dir, sizeof dir) != 0 || hm_control_sock_path(jc->sock, sizeof jc->sock, getpid()) ||
        hm_control_note_path(jc->note, sizeof jc->note, getpid())) {
        hm_say("no control socket for `htamerge capture`: its folder's path is too long "
               "(set HTAMERGE_CONTROL_DIR)");
        return -1;
    }
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
        hm_say("no control socket for `htamerge capture`: cannot make %s: %s", dir, strerror(errno));
        return -1;
    }
    snprintf(un.sun_path, sizeof un.sun_path, "%s", jc->sock);
    unlink(jc->sock);
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&un, sizeof un) != 0 || listen(fd, 8) != 0) {
        hm_say("no control socket for `htamerge capture`: %s: %s", jc->sock, strerror(errno));
        if (fd >= 0)
            close(fd);
        jc->sock[0] = 0;
        return -1;
    }
    if (!realpath(output, abs))
        snprintf(abs, sizeof abs, "%s", output);
    if ((f = fopen(jc->note, "w"))) {
        fprintf(f, "%s\n", abs);
        fclose(f);
    }
    jc->listen_fd = fd;
    return 0;
}

struct job_control *job_control_start(const struct job_run_opts *o, int size, const char *output)
{
    struct job_control *jc = calloc(1, sizeof *jc);
    struct cap_budget_opts bo = {.budget_pct = o->overhead_budget_pct,
                                 .capture_all = o->capture_all,
                                 .record_ns = cap_budget_default_record_ns()};

    if (!jc)
        return NULL;
    jc->size = size;
    jc->listen_fd = -1;
    if (!(jc->peers = calloc((size_t)size, sizeof *jc->peers))) {
        free(jc);
        return NULL;
    }
    for (int r = 0; r < size; r++)
        jc->peers[r].step = -1;
    jc->verbose = getenv("HTAMERGE_DEBUG") != NULL;
    for (int i = 0; i < MAX_CLIENTS; i++)
        jc->cl[i].fd = -1;
    cap_budget_init(&jc->b, &bo, now_ns());
    jc->manual = o->window != NULL;
    open_socket(jc, output);
    return jc;
}

/* Sends the current plan to ranks 1..size-1 without waiting: a plan is a
 * few words (eager), and a rank that ended never holds rank 0 up. */
static void broadcast(struct job_control *jc, struct col_rank *col)
{
    col_rank_set_plan(col, &jc->b.plan);
    for (int i = 0; i < jc->nsends;) {   /* retire finished sends */
        int done = 0;
        MPI_Testall(jc->size - 1, jc->sends[i].req, &done, MPI_STATUSES_IGNORE);
        if (done) {
            free(jc->sends[i].req);
            jc->sends[i] = jc->sends[--jc->nsends];
        } else {
            i++;
        }
    }
    if (jc->size < 2)
        return;
    if (jc->nsends == MAX_SENDS) {   /* a rank that stopped receiving: let its old plans go */
        for (int r = 0; r < jc->size - 1; r++)
            if (jc->sends[0].req[r] != MPI_REQUEST_NULL)
                MPI_Request_free(&jc->sends[0].req[r]);
        free(jc->sends[0].req);
        jc->sends[0] = jc->sends[--jc->nsends];
    }
    struct send *s = &jc->sends[jc->nsends];
    if (!(s->req = calloc((size_t)jc->size - 1, sizeof *s->req)))
        return;
    s->plan = jc->b.plan;
    for (int r = 1; r < jc->size; r++)
        MPI_Isend(&s->plan, sizeof s->plan, MPI_BYTE, r, HM_TAG_PLAN, MPI_COMM_WORLD, &s->req[r - 1]);
    jc->nsends++;
}

static void reply(struct client *c, const char *kind, const char *msg)
{
    char out[600];
    int n = snprintf(out, sizeof out, "%s %s\n", kind, msg);
    if (n > 0 && write(c->fd, out, (size_t)n) < 0) {
        /* the asker went away: nothing to tell */
    }
}

static void drop(struct client *c)
{
    close(c->fd);
    c->fd = -1;
    c->n = 0;
    c->req_id = 0;
}

/* One request line: "steps N" or "seconds S". */
static void handle_line(struct job_control *jc, struct client *c, struct col_rank *col,
                        const struct hm_capture_progress *pr)
{
    char msg[400];
    long long steps = 0;
    double secs = 0;

    if (sscanf(c->line, "steps %lld", &steps) == 1 && steps > 0 && steps <= 100000) {
        secs = 0;
    } else if (sscanf(c->line, "seconds %lf", &secs) == 1 && secs > 0) {
        steps = 0;
    } else {
        reply(c, "error", "want \"steps N\" (1 to 100000) or \"seconds S\"");
        drop(c);
        return;
    }
    if (cap_budget_request(&jc->b, pr, steps, secs, now_ns(), msg, sizeof msg) != 0) {
        reply(c, "error", msg);
        drop(c);
        return;
    }
    broadcast(jc, col);
    hm_say("%s (asked by `htamerge capture`)", msg);
    reply(c, "ok", msg);
    c->req_id = jc->b.plan.req_id;
}

static void serve_socket(struct job_control *jc, struct col_rank *col, const struct hm_capture_progress *pr)
{
    int fd;

    while (jc->listen_fd >= 0 && (fd = accept4(jc->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
        int i = 0;
        while (i < MAX_CLIENTS && jc->cl[i].fd >= 0)
            i++;
        if (i == MAX_CLIENTS) {
            struct client busy = {.fd = fd};
            reply(&busy, "error", "busy: too many `htamerge capture` connections");
            close(fd);
            continue;
        }
        jc->cl[i] = (struct client){.fd = fd};
    }
    for (int i = 0; i < MAX_CLIENTS; i++) {
        struct client *c = &jc->cl[i];
        if (c->fd < 0)
            continue;
        if (c->req_id) {   /* waiting: done, or gone? */
            char ch;
            ssize_t k = recv(c->fd, &ch, 1, MSG_DONTWAIT);
            if (k == 0 || (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) {
                drop(c);
            } else if (c->req_id != jc->b.plan.req_id) {
                reply(c, "done", "a later request replaced this one");
                drop(c);
            } else if (cap_budget_request_done(&jc->b, pr, now_ns())) {
                char msg[200];
                snprintf(msg, sizeof msg, "request %lld recorded on rank 0 (step %lld now)",
                         (long long)c->req_id, (long long)pr->step_now);
                reply(c, "done", msg);
                drop(c);
            }
            continue;
        }
        ssize_t k = read(c->fd, c->line + c->n, sizeof c->line - 1 - c->n);
        if (k == 0 || (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) {
            drop(c);
            continue;
        }
        if (k > 0)
            c->n += (size_t)k;
        c->line[c->n] = 0;
        char *nl = strchr(c->line, '\n');
        if (nl) {
            *nl = 0;
            handle_line(jc, c, col, pr);
        } else if (c->n == sizeof c->line - 1) {
            reply(c, "error", "request line too long");
            drop(c);
        }
    }
}

/* Receives every step report that has arrived (HM_TAG_PROGRESS). */
static void take_progress(struct job_control *jc, int64_t t)
{
    MPI_Status st;
    int flag = 1;

    while (jc->size > 1) {
        MPI_Iprobe(MPI_ANY_SOURCE, HM_TAG_PROGRESS, MPI_COMM_WORLD, &flag, &st);
        if (!flag)
            break;
        struct hm_msg_progress p = {.step_now = -1};
        MPI_Recv(&p, sizeof p, MPI_BYTE, st.MPI_SOURCE, HM_TAG_PROGRESS, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (st.MPI_SOURCE > 0 && st.MPI_SOURCE < jc->size)
            jc->peers[st.MPI_SOURCE] = (struct peer_step){p.step_now, p.step_ns, t};
    }
}

/* The slowest other rank's step as it said, and the fastest's projected
 * to now at its last step time. A rank silent this long (ended, or in a
 * long pause such as an evaluation) is left out: it holds no plan up. */
enum { PEER_STALE_NS = 3000000000 };

static void peers_span(const struct job_control *jc, int64_t t, int64_t *min_step, int64_t *max_step)
{
    *min_step = *max_step = -1;
    for (int r = 1; r < jc->size; r++) {
        const struct peer_step *p = &jc->peers[r];
        int64_t age = t - p->at_ns, ahead = p->step;
        if (p->step < 0 || age > PEER_STALE_NS)
            continue;
        if (p->step_ns > 0 && age > 0)
            ahead += age / p->step_ns;
        if (*min_step < 0 || p->step < *min_step)
            *min_step = p->step;
        if (ahead > *max_step)
            *max_step = ahead;
    }
}

void job_control_tick(struct job_control *jc, struct col_rank *col, double writer_rows_s)
{
    struct hm_capture_progress pr;
    int64_t t = now_ns(), lo, hi;

    if (!jc || t < jc->next_tick)
        return;
    jc->next_tick = t + TICK_NS;
    take_progress(jc, t);
    peers_span(jc, t, &lo, &hi);
    cap_budget_peers(&jc->b, lo, hi);
    cap_budget_writer(&jc->b, jc->size, writer_rows_s > 0 ? writer_rows_s : cap_budget_default_writer_rows_s());
    col_rank_progress(col, &pr);
    if (!jc->manual && cap_budget_tick(&jc->b, &pr, t)) {
        char line[512];
        broadcast(jc, col);
        cap_budget_describe(&jc->b, line, sizeof line);
        if (jc->verbose || jc->b.rate >= 0)   /* CUPTI measured, if only at 0 records/s */
            hm_say("%s", line);
    }
    serve_socket(jc, col, &pr);
}

void job_control_free(struct job_control *jc)
{
    if (!jc)
        return;
    for (int i = 0; i < MAX_CLIENTS; i++)
        if (jc->cl[i].fd >= 0) {
            reply(&jc->cl[i], "done", "the job ended");
            drop(&jc->cl[i]);
        }
    for (int i = 0; i < jc->nsends; i++) {
        for (int r = 0; r < jc->size - 1; r++)
            if (jc->sends[i].req[r] != MPI_REQUEST_NULL)
                MPI_Request_free(&jc->sends[i].req[r]);
        free(jc->sends[i].req);
    }
    if (jc->listen_fd >= 0) {
        close(jc->listen_fd);
        unlink(jc->sock);
        unlink(jc->note);
    }
    take_progress(jc, now_ns());   /* none left unreceived */
    free(jc->peers);
    free(jc);
}

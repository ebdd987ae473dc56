/* One rank's collection: child, watcher, parser thread.
 *
 *   main thread (col_rank_poll)          parser thread
 *   poll(child, watch, signals)  ----->  paths queue -> src_kineto_read
 *   col_rank_take  <---------------------  batches queue (clock hook applied)
 *
 * The child's exit is final only after a last scan of the trace folder and
 * once the parser has drained the paths queue, so no file written before
 * the child exited is missed.
 *
 * A file may come more than once (trace_watch.h: once per round of
 * writing). The parser skips a round whose file is as it was at the last
 * read, and holds a refused file back until the end: a later round that
 * reads whole replaces the refusal (a file seen between two appends), and
 * only what is still refused when the child is done reaches the database. */
#include "rank.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "child.h"
#include "collector/sources/kineto_json/kineto_json.h"
#include "common/clockhook.h"
#include "launcher_env.h"
#include "python_hooks.h"
#include "ring_source.h"
#include "common/capture_plan.h"
#include "trace_watch.h"
#include "common/monotime.h"
#include "common/strtab.h"

enum { KILL_AFTER_MS = 10000, MAX_READY = 4 };

/* A refused file held back until the end (see the top of this file). */
struct refusal {
    char *path;             /* owned */
    char *why;              /* owned: the reader's message */
    struct hm_batch *b;     /* owned: empty but for the file name and its unreadable_file count */
};

struct col_rank {
    int rank, size;
    char hostname[256];
    struct hm_clockhook hook;
    struct col_child *child;     /* owned */
    struct col_watch *watch;     /* owned */
    int skip_traces;             /* trace files are found (to keep the watch drained) but not read */
    struct col_ring *ring;       /* owned; NULL without live capture */
    char **envp;                 /* owned */
    int sigfd;
    int exited, exit_code, scanned;
    int64_t signalled_at;        /* monotonic ms of the first forwarded signal */
    struct col_rank_stats stats;
    /* Parser thread and its queues, under mu. */
    pthread_t thread;
    int thread_started, stop, busy;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    HM_VEC(char *) paths;        /* owned strings, FIFO from paths_head */
    size_t paths_head;
    HM_VEC(struct hm_batch *) out; /* owned batches, FIFO from out_head */
    size_t out_head;
    HM_VEC(struct refusal) refused;  /* owned, under mu */
    /* The parser thread's own: each path read, as it was when read. */
    struct hm_strtab *read_paths;           /* owned */
    HM_VEC(struct col_file_sig) read_sigs;  /* by read_paths id */
};

/* What this rank knows better than its sources: who and where it is. */
static void stamp(struct col_rank *c, struct hm_batch *b)
{
    b->info.rank = c->rank;
    if (c->size > 0)
        b->info.world_size = c->size;
    b->info.rank_source = hm_batch_intern(b, "mpi", 3);
    b->info.hostname = hm_batch_intern(b, c->hostname, strlen(c->hostname));
    if (c->child)
        b->info.pid = col_child_pid(c->child);
}

/* Queues a ready batch (takes it); call with c->mu held. */
static void push_ready(struct col_rank *c, struct hm_batch *b)
{
    struct hm_batch **slot = HM_VEC_PUSH(c->out);

    if (slot) {
        *slot = b;
        return;
    }
    fprintf(stderr, "htamerge: rank %d: out of memory: a batch of %zu slices is lost\n", c->rank,
            b->slices.n);
    hm_batch_free(b);
}

/* Parses one file; failures are never fatal. A file the reader refuses
 * still becomes a batch, empty but for its name and an unreadable_file
 * count, so the database says what was lost (the `skipped` table and
 * `report summary`), not just this rank's stderr; *why (malloc'd) then
 * holds the reader's message. */
static struct hm_batch *parse_file(struct col_rank *c, const char *path, char **why)
{
    struct src_kineto_opts ko = {.keep_args = 1};
    struct hm_batch *b = NULL;
    struct hm_err err;
    char line[1400];

    hm_err_clear(&err);
    *why = NULL;
    if (src_kineto_read(path, &ko, &b, &err) != 0) {
        *why = strdup(hm_err_line(&err, line, sizeof line));
        hm_batch_free(b);
        if (!(b = hm_batch_new()))
            return NULL;
        b->info.source_file = hm_batch_intern(b, path, strlen(path));
        b->info.skipped[HM_SKIP_UNREADABLE_FILE] = 1;
        stamp(c, b);
        return b;
    }
    stamp(c, b);
    hm_clockhook_apply_batch(&c->hook, b);
    return b;
}

/* Parser thread: records path as read now, unless it is as it was when
 * last read. Returns 1 when it should be read, 0 to skip this round. A file
 * that changes while it is read is recorded as before the read, so its
 * next round differs and is read again. */
static int note_read(struct col_rank *c, const char *path)
{
    uint32_t before = hm_strtab_count(c->read_paths);
    hm_strid id = hm_strtab_intern_cstr(c->read_paths, path);
    struct col_file_sig now = col_file_sig_of(path);

    if (id == UINT32_MAX)
        return 1;   /* out of memory: reading twice beats losing a round */
    if (id < before) {
        if (col_file_sig_equal(&c->read_sigs.v[id], &now))
            return 0;
    } else {
        while (c->read_sigs.n <= id)
            if (!HM_VEC_PUSH(c->read_sigs))
                return 1;
    }
    c->read_sigs.v[id] = now;
    return 1;
}

static void free_refusal(struct refusal *r)
{
    free(r->path);
    free(r->why);
    hm_batch_free(r->b);
}

/* Call with mu held. */
static void forget_refusal(struct col_rank *c, const char *path)
{
    for (size_t i = 0; i < c->refused.n; i++)
        if (!strcmp(c->refused.v[i].path, path)) {
            free_refusal(&c->refused.v[i]);
            c->refused.v[i] = c->refused.v[--c->refused.n];
            return;
        }
}

/* Keeps a refused file (taking path, why and b) until the end. Returns 0,
 * taking nothing, when out of memory: the caller reports it at once. Call
 * with mu held. */
static int hold_refusal(struct col_rank *c, char *path, char *why, struct hm_batch *b)
{
    struct refusal *r = HM_VEC_PUSH(c->refused);

    if (!r) {
        fprintf(stderr, "htamerge: rank %d: skipping %s\n", c->rank, why ? why : path);
        return 0;
    }
    *r = (struct refusal){path, why, b};
    return 1;
}

/* The end of the run: what is still refused is said and queued for the
 * database. Call with mu held. */
static void release_refusals(struct col_rank *c)
{
    for (size_t i = 0; i < c->refused.n; i++) {
        struct refusal *r = &c->refused.v[i];
        fprintf(stderr, "htamerge: rank %d: skipping %s\n", c->rank, r->why ? r->why : r->path);
        c->stats.files_failed++;
        push_ready(c, r->b);
        r->b = NULL;
        free_refusal(r);
    }
    c->refused.n = 0;
}

static void *parser_main(void *arg)
{
    struct col_rank *c = arg;

    pthread_mutex_lock(&c->mu);
    for (;;) {
        /* Back-pressure: at most MAX_READY parsed batches wait for the
         * merger, so a slow merger bounds this rank's memory. */
        while (!c->stop && (c->paths_head == c->paths.n || c->out.n - c->out_head >= MAX_READY))
            pthread_cond_wait(&c->cv, &c->mu);
        if (c->paths_head == c->paths.n)
            break;
        char *path = c->paths.v[c->paths_head++], *why = NULL;
        c->busy = 1;
        pthread_mutex_unlock(&c->mu);
        struct hm_batch *b = NULL;
        int fresh = note_read(c, path);
        if (fresh)
            b = parse_file(c, path, &why);
        pthread_mutex_lock(&c->mu);
        c->busy = 0;
        if (fresh) {
            c->stats.files++;
            forget_refusal(c, path);   /* this round replaces an earlier refused one */
            if (b && b->info.skipped[HM_SKIP_UNREADABLE_FILE] && hold_refusal(c, path, why, b)) {
                path = why = NULL;   /* held: the refusal owns them now */
                b = NULL;
            } else if (!b || b->info.skipped[HM_SKIP_UNREADABLE_FILE]) {
                c->stats.files_failed++;
            }
            if (b)
                push_ready(c, b);
        }
        free(path);
        free(why);
    }
    pthread_mutex_unlock(&c->mu);
    return NULL;
}

static void queue_path(struct col_rank *c, char *path)
{
    pthread_mutex_lock(&c->mu);
    char **slot = HM_VEC_PUSH(c->paths);
    if (slot)
        *slot = path;
    else
        free(path);
    pthread_cond_signal(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

static void drain_watch(struct col_rank *c)
{
    char *path = NULL;
    while (col_watch_next(c->watch, &path) > 0) {
        if (c->skip_traces)
            free(path);
        else
            queue_path(c, path);
        path = NULL;
    }
}

/* Live records: ring times are already Unix ns on this rank's (hooked)
 * clock, so no clock hook here. At the end it drains until empty. */
static void drain_ring(struct col_rank *c, int final)
{
    struct hm_err err;
    struct hm_batch *b;

    if (!c->ring)
        return;
    hm_err_clear(&err);
    while ((b = col_ring_drain(c->ring, final, &err))) {
        stamp(c, b);
        pthread_mutex_lock(&c->mu);
        push_ready(c, b);
        pthread_mutex_unlock(&c->mu);
        if (!final)
            break;
    }
    /* Trace files the program wrote where it chose (the Python hooks say
     * which): read like those of the trace folder, never touched. */
    char *path;
    int added = 0;
    while ((path = col_ring_take_trace_file(c->ring))) {
        added |= col_watch_add(c->watch, path) > 0;
        free(path);
    }
    if (added)
        drain_watch(c);
}

struct col_rank *col_rank_start(const struct col_rank_opts *o, struct hm_err *err)
{
    struct col_rank *c = calloc(1, sizeof *c);
    struct col_env_in in;
    char ringvar[300], cudavar[PATH_MAX + 32], nvtxvar[PATH_MAX + 32], ncclvar[PATH_MAX + 32];
    char pylibvar[PATH_MAX + 32];
    char *extra[6] = {ringvar, NULL, NULL, NULL, NULL, NULL};
    const char *trace_dir;

    if (!c) {
        hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");
        return NULL;
    }
    c->rank = o->rank;
    c->size = o->size;
    c->skip_traces = o->skip_traces;
    c->sigfd = -1;
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cv, NULL);
    /* One hook for the whole rank: sync samples and trace times must move
     * by the same function, reference time included. */
    c->hook = *o->hook;
    snprintf(c->hostname, sizeof c->hostname, "%s", o->hostname ? o->hostname : "");
    if (!(c->read_paths = hm_strtab_new())) {
        hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");
        goto fail;
    }
    if (mkdir(o->trace_dir, 0700) != 0 && errno != EEXIST) {
        hm_err_set(err, HM_EIO, o->trace_dir, -1, "cannot create the trace folder: %s", strerror(errno));
        goto fail;
    }
    col_env_in_init(&in);
    in.rank = o->rank;
    in.world_size = o->size;
    in.local_rank = o->local_rank;
    in.local_world_size = o->local_size;
    in.master_addr = o->master_addr;
    in.master_port = o->master_port;
    in.trace_dir = o->trace_dir;
    in.run_start_ns = o->run_start_ns;
    if (o->ring_name) {
        struct hm_err rerr;
        hm_err_clear(&rerr);
        c->ring = col_ring_new(o->ring_name, 0, o->rank, &rerr);
        if (c->ring) {
            snprintf(ringvar, sizeof ringvar, "HTAMERGE_RING=%s", o->ring_name);
            in.extra = extra;
            if (o->inject_lib) {
                /* The injection library writes into the ring: only with it. */
                snprintf(cudavar, sizeof cudavar, "CUDA_INJECTION64_PATH=%s", o->inject_lib);
                snprintf(nvtxvar, sizeof nvtxvar, "NVTX_INJECTION64_PATH=%s", o->inject_lib);
                snprintf(ncclvar, sizeof ncclvar, "NCCL_PROFILER_PLUGIN=%s", o->inject_lib);
                extra[1] = cudavar;
                extra[2] = nvtxvar;
                extra[3] = ncclvar;
            }
            /* The Python hooks write into the ring: only with it. */
            if (o->py_bootstrap && o->py_lib && col_py_is_python(o->argv, NULL)) {
                snprintf(pylibvar, sizeof pylibvar, "HTAMERGE_PY_LIB=%s", o->py_lib);
                extra[4] = pylibvar;
                in.python_path = o->py_bootstrap;
            }
        } else {
            char line[1400];
            fprintf(stderr, "htamerge: rank %d: no live capture ring: %s\n", o->rank,
                    hm_err_line(&rerr, line, sizeof line));
        }
    }
    if (col_env_build(&in, &c->envp, err) != 0)
        goto fail;
    /* The user's HTAMERGE_TRACE_DIR wins over ours: watch the one the child
     * gets, and ignore what an earlier run left in it. */
    trace_dir = col_env_get(c->envp, "HTAMERGE_TRACE_DIR");
    if (!trace_dir)
        trace_dir = o->trace_dir;
    if (strcmp(trace_dir, o->trace_dir) != 0 && mkdir(trace_dir, 0700) != 0 && errno != EEXIST) {
        hm_err_set(err, HM_EIO, trace_dir, -1, "cannot create the trace folder: %s", strerror(errno));
        goto fail;
    }
    c->watch = col_watch_new(trace_dir, err);
    if (!c->watch)
        goto fail;
    if (col_watch_polling(c->watch) && getenv("HTAMERGE_DEBUG"))   /* rank 0 says it once for all */
        fprintf(stderr, "htamerge: rank %d: cannot watch %s with inotify (%s); scanning it every second\n", o->rank,
                trace_dir, col_watch_polling(c->watch));
    if (strcmp(trace_dir, o->trace_dir) != 0)
        col_watch_skip_existing(c->watch);
    c->sigfd = col_signals_install();
    if (pthread_create(&c->thread, NULL, parser_main, c) != 0) {
        hm_err_set(err, HM_ENOMEM, NULL, -1, "cannot start the parser thread");
        goto fail;
    }
    c->thread_started = 1;
    c->child = col_child_spawn(o->argv, c->envp, err);
    if (!c->child)
        goto fail;
    return c;
fail:
    col_rank_free(c);
    return NULL;
}

/* Passes a signal on; escalates to SIGKILL if the child ignores it. */
static void handle_signal(struct col_rank *c, int sig)
{
    if (c->exited)
        return;
    col_child_signal(c->child, sig);
    /* USR1/USR2 (e.g. Slurm's time-limit warning) are only passed on; the
     * stopping signals arm the SIGKILL timer. */
    if (!c->signalled_at && sig != SIGUSR1 && sig != SIGUSR2)
        c->signalled_at = (hm_mono_ns() / 1000000);
}

int col_rank_poll(struct col_rank *c, int timeout_ms)
{
    struct pollfd p[3] = {{col_child_fd(c->child), POLLIN, 0}, {col_watch_fd(c->watch), POLLIN, 0},
                          {c->sigfd, POLLIN, 0}};
    int status, sig = 0;

    if (!c->exited)
        poll(p, 3, timeout_ms);
    if (c->sigfd >= 0 && (sig = col_signals_take()) > 0)
        handle_signal(c, sig);
    if (c->signalled_at && !c->exited && (hm_mono_ns() / 1000000) - c->signalled_at > KILL_AFTER_MS)
        col_child_signal(c->child, SIGKILL);
    drain_watch(c);
    if (!c->exited && col_child_reap(c->child, &status) == 1) {
        c->exited = 1;
        c->exit_code = col_child_exit_code(status);
        if (c->ring)
            col_ring_abandon(c->ring);
    }
    drain_ring(c, c->exited);
    if (c->exited && !c->scanned) {
        /* Files closed just before the exit, or missed by an overflow. */
        col_watch_scan(c->watch);
        drain_watch(c);
        c->scanned = 1;
    }
    return sig > 0 ? sig : 0;
}

struct hm_batch *col_rank_take(struct col_rank *c)
{
    struct hm_batch *b = NULL;

    pthread_mutex_lock(&c->mu);
    if (c->out_head < c->out.n) {
        b = c->out.v[c->out_head++];
        c->stats.batches++;
        if (c->out_head == c->out.n)
            c->out_head = c->out.n = 0;
        pthread_cond_signal(&c->cv);
    }
    pthread_mutex_unlock(&c->mu);
    return b;
}

int col_rank_finished(struct col_rank *c, int *exit_code)
{
    int idle;

    if (!c->scanned)
        return 0;
    pthread_mutex_lock(&c->mu);
    idle = !c->busy && c->paths_head == c->paths.n && c->out_head == c->out.n;
    if (idle && c->refused.n) {   /* no later round can come: say what stays refused */
        release_refusals(c);
        idle = 0;
    }
    pthread_mutex_unlock(&c->mu);
    if (idle)
        *exit_code = c->exit_code;
    return idle;
}

void col_rank_stats(const struct col_rank *c, struct col_rank_stats *s)
{
    *s = c->stats;
    s->watch_polling = c->watch && col_watch_polling(c->watch) != NULL;
}

void col_rank_free(struct col_rank *c)
{
    if (!c)
        return;
    if (c->child && !c->exited) {
        int status;
        col_child_signal(c->child, SIGKILL);
        while (col_child_reap(c->child, &status) == 0)
            usleep(1000);
    }
    if (c->thread_started) {
        pthread_mutex_lock(&c->mu);
        c->stop = 1;
        pthread_cond_signal(&c->cv);
        pthread_mutex_unlock(&c->mu);
        pthread_join(c->thread, NULL);
    }
    for (size_t i = c->paths_head; i < c->paths.n; i++)
        free(c->paths.v[i]);
    for (size_t i = c->out_head; i < c->out.n; i++)
        hm_batch_free(c->out.v[i]);
    HM_VEC_FREE(c->paths);
    HM_VEC_FREE(c->out);
    for (size_t i = 0; i < c->refused.n; i++)
        free_refusal(&c->refused.v[i]);
    HM_VEC_FREE(c->refused);
    hm_strtab_free(c->read_paths);
    HM_VEC_FREE(c->read_sigs);
    col_child_free(c->child);
    col_watch_free(c->watch);
    col_ring_free(c->ring);
    col_env_free(c->envp);
    pthread_mutex_destroy(&c->mu);
    pthread_cond_destroy(&c->cv);
    free(c);
}

void col_rank_set_plan(struct col_rank *c, const struct hm_capture_plan *p)
{
    void *area = c ? col_ring_control(c->ring) : NULL;
    if (area)
        hm_capture_plan_put(area, p);
}

int col_rank_progress(struct col_rank *c, struct hm_capture_progress *pr)
{
    void *area = c ? col_ring_control(c->ring) : NULL;
    if (!area) {
        memset(pr, 0, sizeof *pr);
        pr->step_now = -1;
        return -1;
    }
    hm_capture_progress_get(area, pr);
    return 0;
}

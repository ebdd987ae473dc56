/* htamerge-synth: a stand-in for one profiled PyTorch training rank on a
 * machine without a GPU. The htamerge collector starts it once per rank with
 * the torchrun environment plus HTAMERGE_TRACE_DIR and HTAMERGE_RUN_START_NS.
 * This file reads the command line and environment and runs the loop: for
 * each step, plan it (synth_sched.c), sleep until it starts, write its events
 * (synth_emit.c), sleep until it ends, and at the end of each profiler cycle
 * write one trace file (synth_out.c). It never talks to the other ranks:
 * they all follow one schedule on the shared CLOCK_REALTIME. --ranks N
 * writes a whole job's corpus from one command: each rank is a forked
 * child that runs the same loop, so its files (and its pid in their names)
 * are those of a per-rank invocation, without N program starts. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif
#include "synth.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define EXIT_USAGE 2
#define EXIT_FAIL_AT 3

static const char usage[] =
    "usage: htamerge-synth [--steps N] [--step-ms MS] [--cycle K] [--straggler R:MS]...\n"
    "                      [--gzip] [--fail-at STEP] [--crash-at STEP] [--nccl-kernel NAME]\n"
    "                      [--ranks N] [--tp T]\n"
    "Simulates a profiled training rank (no GPU): N steps (default 8) of period MS\n"
    "(default 50 ms) from HTAMERGE_RUN_START_NS (Unix ns, the same on every rank;\n"
    "default: now rounded up to 100 ms), each with forward, backward, optimizer and\n"
    "2 NCCL-style allreduces, and writes one Kineto trace per K steps (default 4)\n"
    "into HTAMERGE_TRACE_DIR (default .). Rank and world come from RANK, WORLD_SIZE,\n"
    "LOCAL_RANK. --straggler R:MS: rank R reaches every allreduce MS ms late (may\n"
    "repeat). --fail-at S: exit 3 after step S; --crash-at S: die of SIGSEGV.\n"
    "--nccl-kernel NAME: the allreduce kernel's name (default\n"
    "ncclDevKernel_AllReduce_Sum_f32_RING_LL, NCCL >= 2.19; older NCCL:\n"
    "ncclKernel_AllReduce_RING_LL_Sum_float).\n"
    "--ranks N: write ranks 0..N-1 of a job of N (WORLD_SIZE = N, RANK ignored,\n"
    "LOCAL_RANK = rank mod LOCAL_WORLD_SIZE, default 8), one after another, each\n"
    "as its own invocation would; a corpus for benchmarks and tests.\n"
    "--tp T: a 2-D mesh (T divides the world): the first allreduce of a step on\n"
    "the rank's tensor-parallel group of T consecutive ranks (\"mesh_tp\"), the\n"
    "second on its data-parallel group, the ranks equal to it mod T (\"mesh_dp\").\n";

/* Parses a whole decimal integer in [lo, hi]. */
static int parse_int(const char *s, long long lo, long long hi, long long *out)
{
    char *end;

    errno = 0;
    *out = strtoll(s, &end, 10);
    return (errno || end == s || *end || *out < lo || *out > hi) ? -1 : 0;
}

/* Parses milliseconds with up to 6 decimals ("20", "0.5") into ns. */
static int parse_ms(const char *s, int64_t *ns)
{
    long long whole, frac = 0;
    const char *dot = strchr(s, '.');
    char head[32];
    size_t n = dot ? (size_t)(dot - s) : strlen(s), fl = dot ? strlen(dot + 1) : 0;

    if (n == 0 || n >= sizeof head || fl > 6)
        return -1;
    memcpy(head, s, n);
    head[n] = '\0';
    if (parse_int(head, 0, 3600000, &whole) != 0 || (dot && fl && (dot[1] == '-' || dot[1] == '+')) ||
        (dot && fl && parse_int(dot + 1, 0, 999999, &frac) != 0))
        return -1;
    for (size_t i = fl; i < 6; i++)
        frac *= 10;
    *ns = (int64_t)whole * SYN_NS_PER_MS + frac;
    return 0;
}

/* Reads an integer environment variable; def when unset or empty. */
static int env_int(const char *name, long long def, long long lo, long long hi, long long *out)
{
    const char *v = getenv(name);

    if (!v || !*v) {
        *out = def;
        return 0;
    }
    if (parse_int(v, lo, hi, out) == 0)
        return 0;
    fprintf(stderr, "htamerge-synth: bad %s=%s\n", name, v);
    return -1;
}

static int64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * SYN_NS_PER_S + ts.tv_nsec;
}

/* Rank, world, trace folder and run start from the environment; a world
 * of ranks > 0 (--ranks) replaces WORLD_SIZE and RANK. */
static int read_env(struct syn_cfg *c, int ranks)
{
    long long rank = 0, world = ranks, local, start;
    const char *dir = getenv("HTAMERGE_TRACE_DIR");

    if (!ranks && (env_int("WORLD_SIZE", 1, 1, 1 << 20, &world) || env_int("RANK", 0, 0, world - 1, &rank)))
        return -1;
    if (env_int("LOCAL_RANK", 0, 0, 1 << 20, &local) ||
        env_int("HTAMERGE_RUN_START_NS", -1, SYN_NS_PER_S, INT64_MAX / 2, &start))
        return -1;
    c->rank = (int)rank;
    c->world = (int)world;
    c->local_rank = (int)local;
    if (start < 0) {   /* standalone: the next whole 100 ms */
        int64_t q = 100 * SYN_NS_PER_MS;
        start = (now_ns() / q + 1) * q;
    }
    c->t0_ns = start;
    c->base_ns = start - start % SYN_NS_PER_S;
    c->dir = dir && *dir ? dir : ".";
    return 0;
}

/* --straggler R:MS (may repeat; delays of one rank add up). */
static int add_straggler(struct syn_cfg *c, const char *arg)
{
    const char *colon = strchr(arg, ':');
    char head[16];
    long long r;
    int64_t ns;

    if (!colon || colon == arg || (size_t)(colon - arg) >= sizeof head)
        return -1;
    memcpy(head, arg, (size_t)(colon - arg));
    head[colon - arg] = '\0';
    if (parse_int(head, 0, c->world - 1, &r) != 0 || parse_ms(colon + 1, &ns) != 0)
        return -1;
    c->delay_ns[r] += ns;
    return 0;
}

/* One option with its value; returns -1 for a bad value. */
static int set_option(struct syn_cfg *c, const char *opt, const char *val)
{
    long long v;

    if (!strcmp(opt, "--straggler"))
        return add_straggler(c, val);
    if (!strcmp(opt, "--nccl-kernel")) {
        c->nccl_kernel = val;
        return *val ? 0 : -1;
    }
    if (!strcmp(opt, "--ranks"))
        return 0;   /* taken before the environment (ranks_arg) */
    if (!strcmp(opt, "--tp"))   /* groups that tile the world, of 2 or more */
        return parse_int(val, 2, c->world, &v) != 0 || c->world % v != 0 ? -1 : (c->tp = (int)v, 0);
    if (!strcmp(opt, "--step-ms"))
        return parse_ms(val, &c->period_ns) != 0 || c->period_ns < SYN_NS_PER_MS ? -1 : 0;
    if (parse_int(val, 0, 10000000, &v) != 0)
        return -1;
    if (!strcmp(opt, "--steps") && v >= 1)
        c->steps = (int)v;
    else if (!strcmp(opt, "--cycle") && v >= 1)
        c->cycle = (int)v;
    else if (!strcmp(opt, "--fail-at"))
        c->fail_at = (int)v;
    else if (!strcmp(opt, "--crash-at"))
        c->crash_at = (int)v;
    else
        return -1;
    return 0;
}

/* The command line (after read_env: --straggler needs the world size).
 * Returns 0, 1 after --help, or -1 after printing why. */
static int parse_args(struct syn_cfg *c, int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *eq = strchr(a, '=');
        char opt[32];
        size_t n = eq ? (size_t)(eq - a) : strlen(a);
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(usage, stdout);
            return 1;
        }
        if (!strcmp(a, "--gzip")) {
            c->gzip = true;
            continue;
        }
        if (strncmp(a, "--", 2) != 0 || n >= sizeof opt || (!eq && i + 1 >= argc)) {
            fprintf(stderr, "htamerge-synth: bad argument '%s'\n%s", a, usage);
            return -1;
        }
        memcpy(opt, a, n);
        opt[n] = '\0';
        const char *val = eq ? eq + 1 : argv[++i];
        if (set_option(c, opt, val) != 0) {
            fprintf(stderr, "htamerge-synth: bad value '%s' for %s\n%s", val, opt, usage);
            return -1;
        }
    }
    return 0;
}

/* The value of --ranks (0 without one), needed before the environment is
 * read. -1 after printing why it is bad. */
static int ranks_arg(int argc, char **argv)
{
    long long n = 0;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = NULL;
        if (!strncmp(a, "--ranks=", 8))
            v = a + 8;
        else if (!strcmp(a, "--ranks") && i + 1 < argc)
            v = argv[++i];
        else if (strncmp(a, "--", 2) == 0 && !strchr(a, '=') && strcmp(a, "--gzip") && i + 1 < argc)
            i++;   /* another option's value, which could read "--ranks" */
        if (v && parse_int(v, 1, 1 << 20, &n) != 0) {
            fprintf(stderr, "htamerge-synth: bad value '%s' for --ranks\n%s", v, usage);
            return -1;
        }
    }
    return (int)n;
}

/* mkdir -p: creates dir and any missing parents. Returns 0 or -1 (errno). */
static int make_dirs(const char *dir)
{
    char path[4096];
    size_t n = strlen(dir);

    if (n == 0 || n >= sizeof path) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(path, dir, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (path[i] != '/' && path[i] != '\0')
            continue;
        path[i] = '\0';
        if (mkdir(path, 0755) != 0 && errno != EEXIST)
            return -1;
        path[i] = i < n ? '/' : '\0';
    }
    return 0;
}

static void sleep_until(int64_t t_ns)
{
    struct timespec ts = {(time_t)(t_ns / SYN_NS_PER_S), (long)(t_ns % SYN_NS_PER_S)};

    while (clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
}

/* What the run did, for the summary line. */
struct tally {
    int files, steps;
    size_t events;
};

/* Writes the finished cycle's file and starts the next cycle's buffer. */
static int flush_cycle(const struct syn_cfg *c, struct syn_emit *e, int cycle, int64_t end_ns, struct tally *t)
{
    if (e->ev.oom) {
        fprintf(stderr, "htamerge-synth: out of memory\n");
        return -1;
    }
    if (syn_out_write(c, e, cycle, end_ns / SYN_NS_PER_MS) != 0)
        return -1;
    t->files++;
    t->events += e->nev;
    e->ev.n = 0;
    e->nev = 0;
    return 0;
}

static void summary(const struct syn_cfg *c, const struct tally *t)
{
    fprintf(stderr, "htamerge-synth: rank %d wrote %d files, %d steps, %zu events\n", c->rank, t->files,
            t->steps, t->events);
}

/* The training loop. Returns the exit status. */
static int run(const struct syn_cfg *c, struct syn_sched *s, struct syn_emit *e)
{
    struct tally t = {0, 0, 0};
    struct syn_plan p;

    for (int k = 0; k < c->steps; k++) {
        syn_sched_step(s, k, &p);
        sleep_until(p.start);
        if (k % c->cycle == 0)
            syn_emit_meta(e, p.start);
        syn_emit_step(e, k, &p);
        sleep_until(p.end);
        t.steps++;
        if (((k + 1) % c->cycle == 0 || k + 1 == c->steps) && flush_cycle(c, e, k / c->cycle, p.end, &t) != 0)
            return 1;
        if (k == c->fail_at) {
            summary(c, &t);
            fprintf(stderr, "htamerge-synth: rank %d failing after step %d (--fail-at)\n", c->rank, k);
            return EXIT_FAIL_AT;
        }
        if (k == c->crash_at) {
            summary(c, &t);
            fprintf(stderr, "htamerge-synth: rank %d crashing after step %d (--crash-at)\n", c->rank, k);
            signal(SIGSEGV, SIG_DFL);   /* past any sanitizer's handler: a real signal death */
            raise(SIGSEGV);
            abort();
        }
    }
    summary(c, &t);
    return 0;
}

/* A child's wait status as this program's exit status. */
static int exit_status(int st)
{
    return WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : 1;
}

/* --ranks: ranks 0..world-1 one after another, each in a forked child (its
 * own pid, as the file names want) running run(). Stops at the first rank
 * that fails and returns its status. */
static int run_ranks(struct syn_cfg *c, struct syn_emit *e)
{
    long long lws;
    int st;

    if (env_int("LOCAL_WORLD_SIZE", 8, 1, 1 << 20, &lws))
        return EXIT_USAGE;
    for (int r = 0; r < c->world; r++) {
        pid_t pid;
        fflush(NULL);
        if ((pid = fork()) < 0) {
            fprintf(stderr, "htamerge-synth: fork: %s\n", strerror(errno));
            return 1;
        }
        if (pid == 0) {
            struct syn_sched *s;
            c->rank = r;
            c->local_rank = (int)(r % lws);
            s = syn_sched_new(c);
            if (!s) {
                fprintf(stderr, "htamerge-synth: out of memory\n");
                exit(1);
            }
            exit(run(c, s, e));
        }
        while (waitpid(pid, &st, 0) < 0)
            if (errno != EINTR)
                return 1;
        if (st != 0)
            return exit_status(st);
    }
    return 0;
}

int main(int argc, char **argv)
{
    struct syn_cfg c = {.steps = 8, .cycle = 4, .period_ns = 50 * SYN_NS_PER_MS, .fail_at = -1, .crash_at = -1};
    struct syn_sched *s = NULL;
    struct syn_emit e;
    int rc = EXIT_USAGE, pr, ranks = ranks_arg(argc, argv);
    struct stat st;

    signal(SIGPIPE, SIG_IGN);   /* a dead gzip child is an error, not our death */
    if (ranks < 0 || read_env(&c, ranks) != 0)
        return EXIT_USAGE;
    c.delay_ns = calloc((size_t)c.world, sizeof *c.delay_ns);
    if (!c.delay_ns || syn_emit_init(&e, &c) != 0) {
        fprintf(stderr, "htamerge-synth: out of memory\n");
        free(c.delay_ns);
        return 1;
    }
    pr = parse_args(&c, argc, argv);
    if (pr != 0) {
        rc = pr > 0 ? 0 : EXIT_USAGE;
        goto out;
    }
    rc = 1;
    if (stat(c.dir, &st) != 0 && make_dirs(c.dir) != 0) {
        fprintf(stderr, "htamerge-synth: cannot create %s: %s\n", c.dir, strerror(errno));
        goto out;
    }
    if (ranks > 0) {
        rc = run_ranks(&c, &e);
        goto out;
    }
    s = syn_sched_new(&c);
    if (!s) {
        fprintf(stderr, "htamerge-synth: out of memory\n");
        goto out;
    }
    rc = run(&c, s, &e);
out:
    syn_sched_free(s);
    syn_emit_fini(&e);
    free(c.delay_ns);
    return rc;
}

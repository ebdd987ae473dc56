/* `htamerge [run options] PROGRAM [ARGS...]`: the main job. Under mpirun
 * every rank runs PROGRAM as its child and collects; rank 0 also merges.
 * Without mpirun it is one rank. The loop below is the only place that
 * knows both the collector and the merger. */
#include <errno.h>
#include <sched.h>
#include <getopt.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "collector/rank.h"
#include "collector/trace_sweep.h"
#include "collector/transport.h"
#include "common/clockhook.h"
#include "common/shm_ring.h"
#include "merger/live.h"

static const char run_help[] =
    "usage: [mpirun -n N] htamerge [-o FILE.db] [--capture LIST] [--cupti-window ON/PERIOD] [--sync-interval S] [--keep-traces]\n"
    "                              [--] PROGRAM [ARGS...]\n"
    "\n"
    "Runs PROGRAM on every MPI rank (PROGRAM.py runs under python3, or\n"
    "$HTAMERGE_PYTHON) with the environment torchrun would give it (RANK,\n"
    "LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT) plus\n"
    "HTAMERGE_TRACE_DIR, a per-rank folder for torch.profiler traces. Each trace\n"
    "file is read as soon as it is complete and streamed to rank 0, which puts\n"
    "every rank on rank 0's clock (MPI ping-pong at start, every S seconds and\n"
    "at the end) and writes one SQLite file while the job runs.\n"
    "\n"
    "options:\n"
    "  -o, --output FILE.db     default htamerge-YYYYmmdd-HHMMSS.db\n"
    "      --capture LIST       sources, comma-separated: kineto (torch.profiler files in\n"
    "                           HTAMERGE_TRACE_DIR), cupti (kernels, copies, memsets and\n"
    "                           the calls that copy, wait or allocate; each launch is\n"
    "                           rebuilt from its kernel's queued time, on thread 0),\n"
    "                           cupti-launches (cupti plus every launch call's record:\n"
    "                           its thread and duration; on a launch-bound step ~5x\n"
    "                           cupti's cost), cupti-sync (cupti plus synchronization\n"
    "                           records; ~5 % more overhead), cupti-range (cupti,\n"
    "                           recording only between cudaProfilerStart and\n"
    "                           cudaProfilerStop, as nsys --capture-range=cudaProfilerApi;\n"
    "                           paused until the first start), nvtx (ranges, marks),\n"
    "                           nccl (NCCL profiler plugin); also all, or none (default:\n"
    "                           all that are available, without cupti-sync and\n"
    "                           cupti-launches). Without cupti, torch.profiler keeps\n"
    "                           CUPTI (one client on CUDA 13)\n"
    "      --cupti-window ON/PERIOD\n"
    "                           CUPTI is attached the first ON ms of every PERIOD ms\n"
    "                           only (e.g. 1000/10000) and detached in between; NVTX\n"
    "                           and NCCL record throughout, so matching and stragglers\n"
    "                           cover every step. Each window edge is the counter\n"
    "                           \"htamerge/cupti recording\"\n"
    "      --sync-interval S    seconds between clock-sync rounds (default 10; 0: start and end)\n"
    "      --keep-traces        keep the per-rank trace folders (printed at the end);\n"
    "                           a KEEP file marks them. Each run first removes the\n"
    "                           folders ($TMPDIR/htamerge-PID-MS) that killed runs left\n"
    "                           over 10 minutes ago, never those with a KEEP file\n"
    "      --serve ADDR:PORT    rank 0 serves the file (htamerge serve) while the job runs\n"
    "                           and after it ends, until Ctrl-C\n"
    "  -h, --help               this text\n"
    "\n"
    "exit status: the child's exit status on each rank (mpirun reports the first\n"
    "non-zero one); when every child exited 0 but trace files were refused (their\n"
    "data is missing; `htamerge report FILE.db summary` lists them), 3 on rank 0,\n"
    "as ingest --keep-going; 1 when collection itself failed; 127 when PROGRAM\n"
    "cannot run.\n"
    "\n"
    "examples:\n"
    "  mpirun -n 8 htamerge -o run.db train.py --epochs 1\n"
    "  mpirun -n 4 htamerge -o run.db htamerge-synth --steps 8 --straggler 2:20\n"
    "  htamerge report run.db clocks\n";

enum {
    RUN_CAP_KINETO = 1, RUN_CAP_CUPTI = 2, RUN_CAP_NVTX = 4, RUN_CAP_NCCL = 8, RUN_CAP_CUPTI_SYNC = 16,
    RUN_CAP_CUPTI_RANGE = 32, RUN_CAP_CUPTI_LAUNCHES = 64,
    RUN_CAP_LIVE = RUN_CAP_CUPTI | RUN_CAP_NVTX | RUN_CAP_NCCL,
    RUN_CAP_ALL = RUN_CAP_KINETO | RUN_CAP_LIVE,
};

struct run_opts {
    const char *output;
    double sync_interval_s;
    int keep_traces;
    const char *window;        /* --cupti-window ON/PERIOD, or NULL */
    const char *serve;      /* --serve ADDR:PORT, NULL = none */
    unsigned capture;       /* RUN_CAP_* bits */
    char **argv;            /* PROGRAM ARGS... (borrowed from main's argv) */
};

/* What rank 0 tells everyone before the children start. */
struct run_plan {
    int64_t run_start_ns;
    int32_t master_port;
    char master_addr[64];
    char trace_root[PATH_MAX];
};

/* "kineto,nvtx" -> bits; -1 (with the message printed) on an unknown name. */
static int parse_capture(const char *list, unsigned *out)
{
    static const struct { const char *name; unsigned bits; } names[] = {
        {"kineto", RUN_CAP_KINETO}, {"cupti", RUN_CAP_CUPTI}, {"nvtx", RUN_CAP_NVTX},
        {"nccl", RUN_CAP_NCCL},     {"cupti-sync", RUN_CAP_CUPTI | RUN_CAP_CUPTI_SYNC},
        {"cupti-range", RUN_CAP_CUPTI | RUN_CAP_CUPTI_RANGE}, {"cupti-launches", RUN_CAP_CUPTI | RUN_CAP_CUPTI_LAUNCHES},
        {"cupti-lean", RUN_CAP_CUPTI},   /* the default since launches are rebuilt; kept for old command lines */
        {"all", RUN_CAP_ALL},       {"none", 0}};
    const char *p = list;

    *out = 0;
    while (*p) {
        size_t n = strcspn(p, ","), i;
        for (i = 0; i < sizeof names / sizeof names[0]; i++)
            if (strlen(names[i].name) == n && !strncmp(p, names[i].name, n))
                break;
        if (i == sizeof names / sizeof names[0]) {
            cli_error("--capture: unknown source '%.*s' (known: kineto, cupti, cupti-launches, cupti-sync, cupti-range, "
                      "nvtx, nccl, all, none)",
                      (int)n, p);
            return -1;
        }
        *out |= names[i].bits;
        p += n + (p[n] == ',');
    }
    return 0;
}

/* Tells the injection library which live sources to run (the flag wins
 * over an inherited HTAMERGE_CAPTURE, since the user just typed it). */
static void export_capture(unsigned cap)
{
    char list[80] = "";
    if (cap & RUN_CAP_CUPTI)
        strcat(list, cap & RUN_CAP_CUPTI_SYNC ? "cupti,cupti-sync," : "cupti,");
    if (cap & RUN_CAP_CUPTI_RANGE)
        strcat(list, "cupti-range,");
    if (cap & RUN_CAP_CUPTI_LAUNCHES)
        strcat(list, "cupti-launches,");
    if (cap & RUN_CAP_NVTX)
        strcat(list, "nvtx,");
    if (cap & RUN_CAP_NCCL)
        strcat(list, "nccl,");
    if (list[0])
        list[strlen(list) - 1] = '\0';
    setenv("HTAMERGE_CAPTURE", list, 1);
}

/* --cupti-window ON/PERIOD: milliseconds, 0 < ON < PERIOD <= one hour. */
static int parse_window(const char *arg, const char **out)
{
    long long on, period;
    int used = 0;

    if (sscanf(arg, "%lld/%lld%n", &on, &period, &used) != 2 || arg[used] != '\0' || on <= 0 ||
        period <= on || period > 3600000) {
        cli_error("--cupti-window '%s': want ON/PERIOD in milliseconds with 0 < ON < PERIOD <= "
                  "3600000, e.g. 1000/10000", arg);
        return -1;
    }
    *out = arg;
    return 0;
}

static int parse_run_opts(int argc, char **argv, struct run_opts *o)
{
    static const struct option longopts[] = {
        {"output", required_argument, 0, 'o'}, {"sync-interval", required_argument, 0, 'S'},
        {"keep-traces", no_argument, 0, 'K'},  {"help", no_argument, 0, 'h'},
        {"serve", required_argument, 0, 'V'}, {"capture", required_argument, 0, 'C'},
        {"cupti-window", required_argument, 0, 'W'}, {0, 0, 0, 0}};
    static char defname[64];
    int c;

    o->sync_interval_s = 10;
    o->capture = RUN_CAP_ALL;
    optind = 1;
    /* "+": stop at PROGRAM, so its own options stay its own. */
    while ((c = getopt_long(argc, argv, "+o:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'o': o->output = optarg; break;
        case 'S': o->sync_interval_s = atof(optarg); break;
        case 'K': o->keep_traces = 1; break;
        case 'V': o->serve = optarg; break;
        case 'C':
            if (parse_capture(optarg, &o->capture) != 0)
                return -1;
            export_capture(o->capture);
            break;
        case 'W':
            if (parse_window(optarg, &o->window) != 0)
                return -1;
            break;
        case 'h': fputs(run_help, stdout); return 1;
        default: fputs(run_help, stderr); return -1;
        }
    }
    if (optind >= argc) {
        cli_error("no PROGRAM to run (try `htamerge --help`)");
        return -1;
    }
    if (o->window) {
        if (!(o->capture & RUN_CAP_CUPTI) || (o->capture & RUN_CAP_CUPTI_RANGE)) {
            cli_error("--cupti-window needs cupti in --capture, and not cupti-range (which "
                      "decides when CUPTI records itself)");
            return -1;
        }
        setenv("HTAMERGE_CUPTI_WINDOW", o->window, 1);
    }
    o->argv = argv + optind;
    if (!o->output) {
        time_t t = time(NULL);
        struct tm tm;
        strftime(defname, sizeof defname, "htamerge-%Y%m%d-%H%M%S.db", localtime_r(&t, &tm));
        o->output = defname;
    }
    return 0;
}

/* Where run folders go: $TMPDIR, else /tmp. */
static const char *trace_parent(void)
{
    const char *tmp = getenv("TMPDIR");
    return tmp && *tmp ? tmp : "/tmp";
}

/* Removes the run folders that ranks of ended runs left behind (killed
 * before they could clean up): see collector/trace_sweep.h for what counts
 * as ended. Rank 0 does it, before it makes its own. */
static void sweep_leftovers(void)
{
    int n = col_trace_sweep(trace_parent(), COL_TRACE_SWEEP_MIN_AGE_S);
    if (n > 0)
        fprintf(stderr, "htamerge: removed %d leftover trace folder%s of ended runs from %s\n", n,
                n == 1 ? "" : "s", trace_parent());
}

static void make_plan(struct run_plan *p, const struct hm_clockhook *hook)
{
    const char *port = getenv("MASTER_PORT");

    memset(p, 0, sizeof *p);
    /* Far enough ahead that every rank has started its child by then. */
    p->run_start_ns = hm_clock_now(hook) + 500000000;
    p->master_port = port ? atoi(port) : 29500;
    gethostname(p->master_addr, sizeof p->master_addr - 1);
    snprintf(p->trace_root, sizeof p->trace_root, "%s/htamerge-%ld-%lld", trace_parent(),
             (long)getpid(), (long long)(p->run_start_ns / 1000000));
}

/* This rank's trace folder, then the run's folder if it is now empty: on
 * each host, whichever of its ranks ends last removes it. */
static void remove_traces(const char *trace_dir, const char *trace_root)
{
    if (col_trace_remove_tree(trace_dir) != 0 && errno != ENOENT)
        cli_error("could not remove %s: %s", trace_dir, strerror(errno));
    rmdir(trace_root);
}

/* --keep-traces: the KEEP file keeps other runs' sweeps off the folder,
 * also when this run is killed before it can say where its traces are. */
static void mark_kept(const char *trace_root)
{
    char path[PATH_MAX + 16];
    int fd;

    snprintf(path, sizeof path, "%s/%s", trace_root, COL_TRACE_KEEP_MARKER);
    fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0)
        cli_error("could not create %s: %s", path, strerror(errno));
    else
        close(fd);
}

struct loop {
    struct col_rank *col;   /* NULL when PROGRAM could not start */
    struct col_link *link;  /* ranks > 0 */
    struct mrg_live *mrg;   /* rank 0 */
    int rank, child_done, exit_code, signal;
    const char *trace_root; /* borrowed from the plan */
    time_t touched;         /* when trace_root's mtime was last set */
};

/* One turn: collect, move batches, talk to the merger. Returns 1 when this
 * rank may leave, 0 to go on, < 0 on a failure (err filled). */
static int turn(struct loop *L, struct hm_err *err)
{
    struct hm_batch *b;
    int rc = 0, fin = 0, all_done = 0;

    if (L->col) {
        int sig = col_rank_poll(L->col, 5);
        if (sig && !L->signal)
            L->signal = sig;
        /* A peer takes no more batches while its unsent bytes are high:
         * the parser then stalls too, bounding memory end to end. */
        while (rc == 0 && (L->rank == 0 || col_link_backlog(L->link) < COL_LINK_MAX_BACKLOG) &&
               (b = col_rank_take(L->col)))
            rc = L->rank == 0 ? mrg_live_local(L->mrg, b, err) : col_link_queue(L->link, b, err);
        if (!L->child_done && col_rank_finished(L->col, &L->exit_code))
            L->child_done = 1;
    } else {
        usleep(5000);
        L->child_done = 1;
    }
    if (rc)
        return rc;
    if (L->rank == 0) {
        if (L->child_done)
            mrg_live_local_done(L->mrg, L->exit_code);
        rc = mrg_live_step(L->mrg, &all_done, err);
        return rc ? rc : (L->child_done && all_done);
    }
    rc = col_link_step(L->link, &fin, err);
    if (rc == 0 && L->child_done) {
        struct hm_msg_done d = {.exit_code = L->exit_code, .spawn_failed = L->col == NULL};
        struct col_rank_stats st = {0};
        if (L->col)
            col_rank_stats(L->col, &st);
        d.files = st.files;
        d.files_failed = st.files_failed;
        d.batches = st.batches;
        rc = col_link_done(L->link, &d, err) < 0 ? err->code : 0;
    }
    return rc ? rc : fin;
}

/* The injection library beside this executable (build tree) or in
 * <prefix>/lib/htamerge (installed); 0 with its path, -1 when absent (then
 * the child runs without live GPU capture). */
static int find_inject_lib(char *buf, size_t len)
{
    static const char *const rel[] = {"libhtamerge-inject.so", "../lib/htamerge/libhtamerge-inject.so"};
    char exe[PATH_MAX], cand[PATH_MAX + 64];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    char *slash;

    if (n <= 0)
        return -1;
    exe[n] = 0;
    slash = strrchr(exe, '/');
    if (!slash)
        return -1;
    *slash = 0;
    for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++) {
        snprintf(cand, sizeof cand, "%s/%s", exe, rel[i]);
        if (access(cand, R_OK) == 0 && realpath(cand, buf) && strlen(buf) < len)
            return 0;
    }
    return -1;
}

static int start_rank(struct loop *L, const struct run_opts *o, const struct run_plan *plan, int size,
                      MPI_Comm node, const struct hm_clockhook *hook, char *trace_dir, size_t len)
{
    char host[256] = "", ring[256], inject[PATH_MAX];
    const char *jobid = strrchr(plan->trace_root, '/');
    struct col_rank_opts co = {.argv = o->argv, .rank = L->rank, .size = size,
                               .master_addr = plan->master_addr, .master_port = plan->master_port,
                               .run_start_ns = plan->run_start_ns, .hook = hook, .hostname = host};

    gethostname(host, sizeof host - 1);
    if (o->capture & RUN_CAP_LIVE) {   /* rings that killed ranks could not remove: memory */
        uint64_t bytes;
        int n = hm_ring_sweep_stale("/dev/shm", &bytes);
        if (n > 0)
            fprintf(stderr, "htamerge: rank %d: removed %d shared-memory rings of ended runs (%.0f MB)\n",
                    L->rank, n, (double)bytes / 1e6);
    }
    if (hm_ring_format_name(ring, sizeof ring, jobid ? jobid + 1 : "job", L->rank) == 0)
        co.ring_name = ring;
    if ((o->capture & RUN_CAP_LIVE) && find_inject_lib(inject, sizeof inject) == 0)
        co.inject_lib = inject;
    co.skip_traces = !(o->capture & RUN_CAP_KINETO);
    struct hm_err err;
    char line[1400];

    MPI_Comm_rank(node, &co.local_rank);
    MPI_Comm_size(node, &co.local_size);
    mkdir(plan->trace_root, 0700);
    if (o->keep_traces)
        mark_kept(plan->trace_root);
    snprintf(trace_dir, len, "%s/rank-%d", plan->trace_root, L->rank);
    co.trace_dir = trace_dir;
    hm_err_clear(&err);
    L->col = col_rank_start(&co, &err);
    if (!L->col) {
        cli_error("rank %d: %s", L->rank, hm_err_line(&err, line, sizeof line));
        L->exit_code = 127;
        return -1;
    }
    return 0;
}

/* Keeps the run folder's mtime recent while this rank lives, so another
 * run's sweep, which cannot see this run's processes from another host,
 * leaves it alone (trace_sweep.h). */
static void touch_trace_root(struct loop *L)
{
    time_t now = time(NULL);

    if (now - L->touched < COL_TRACE_TOUCH_S)
        return;
    L->touched = now;
    utimensat(AT_FDCWD, L->trace_root, NULL, 0);
}

static int run_loop(struct loop *L, struct hm_err *err)
{
    int rc;
    while ((rc = turn(L, err)) == 0 && !(L->signal && L->rank == 0))
        touch_trace_root(L);
    return rc < 0 ? rc : 0;
}

/* --serve: `htamerge serve FILE --listen ADDR` as a child of rank 0, so the
 * file can be browsed while the run writes it (WAL) and after. */
static pid_t start_server(const char *db, const char *addr)
{
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    pid_t pid;

    if (n <= 0)
        return -1;
    self[n] = '\0';
    pid_t parent = getpid();
    pid = fork();
    if (pid == 0) {
        /* The server ends with rank 0, however rank 0 ends (even killed). */
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() != parent)
            _exit(0);
        execl(self, self, "serve", db, "--listen", addr, (char *)NULL);
        _exit(127);
    }
    return pid;
}

/* The server child wait_server waits for; its signal handler forwards
 * there. */
static volatile sig_atomic_t g_server_pid;

static void forward_to_server(int sig)
{
    if (g_server_pid > 0)
        kill((pid_t)g_server_pid, sig);
}

/* After the run: keep serving until the user stops the server. Ctrl-C at a
 * terminal reaches the server itself (same process group); a signal that
 * mpirun passes on to rank 0 alone is forwarded to it; and when mpirun
 * itself is gone (killed: a batch system, `timeout -k`), rank 0 stops its
 * server and ends instead of serving, orphaned, for ever. (A run started
 * without a launcher keeps serving when its shell goes: nohup works.) */
static void wait_server(pid_t pid)
{
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
    struct sigaction sa = {.sa_handler = forward_to_server};
    pid_t parent = getppid();
    int launched = getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMIX_RANK") || getenv("PMI_RANK") ||
                   getenv("SLURM_STEP_ID");
    int status;

    g_server_pid = pid;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        sigaction(sigs[i], &sa, NULL);
    fprintf(stderr, "htamerge: still serving the finished run; Ctrl-C to stop\n");
    for (;;) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid || (r < 0 && errno != EINTR))
            break;
        if (launched && getppid() != parent) {
            fprintf(stderr, "htamerge: mpirun is gone; stopping the server\n");
            kill(pid, SIGTERM);
            for (int i = 0; i < 50 && waitpid(pid, &status, WNOHANG) == 0; i++)
                nanosleep(&(struct timespec){.tv_nsec = 100000000L}, NULL);
            if (kill(pid, 0) == 0) {   /* 5 s and still there */
                kill(pid, SIGKILL);
                waitpid(pid, &status, 0);
            }
            break;
        }
        nanosleep(&(struct timespec){.tv_nsec = 200000000L}, NULL);
    }
    g_server_pid = 0;
}

/* mpirun binds each rank to one core by default when it has few ranks: the
 * training program, its CUDA/NCCL threads and this collector then share
 * that core, which slowed a 2-GPU DDP step about 2x on the H200 (one rank
 * is enough to say it: they are all launched alike). */
static void warn_if_bound_to_one_cpu(void)
{
    cpu_set_t set;
    long online = sysconf(_SC_NPROCESSORS_ONLN);

    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) == 1 && online > 1)
        fprintf(stderr, "htamerge: warning: this rank is bound to one CPU (mpirun's --bind-to core); "
                        "the program, its CUDA/NCCL threads and htamerge share it and run slower. "
                        "Use mpirun --bind-to none, or --map-by slot:PE=N\n");
}

/* HTAMERGE_STATS=1: the collector's own CPU time (not its child's), for
 * the overhead benchmark. */
static void print_stats(int rank, struct col_rank *col)
{
    struct rusage ru;
    struct col_rank_stats st = {0};

    getrusage(RUSAGE_SELF, &ru);
    if (col)
        col_rank_stats(col, &st);
    fprintf(stderr, "htamerge-stats: rank %d cpu_user_s %.3f cpu_sys_s %.3f files %lld batches %lld\n", rank,
            ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6, ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6,
            (long long)st.files, (long long)st.batches);
}

/* A rank's exit status. The programs' statuses come first: mpirun reports
 * the first non-zero one, so rank 0 adds nothing of its own when any
 * rank's program failed. Otherwise rank 0, which alone knows, exits
 * CLI_EXIT_PARTIAL when trace files were refused, as ingest does: the
 * file lacks their data, and a script should not take it for whole. */
static int run_exit_status(const struct loop *L, const struct mrg_live_result *res)
{
    if (L->exit_code || L->rank != 0 || res->job_exit)
        return L->exit_code;
    return res->files_refused > 0 ? CLI_EXIT_PARTIAL : CLI_EXIT_OK;
}

/* Rank 0's last line: the file, and what it lacks. */
static void say_written(const char *output, int size, int complete, const struct mrg_live_result *res)
{
    char refused[PATH_MAX + 128] = "";

    if (res->files_refused > 0)
        snprintf(refused, sizeof refused, "; %lld trace file%s refused: see `htamerge report %s summary`",
                 (long long)res->files_refused, res->files_refused == 1 ? "" : "s", output);
    fprintf(stderr, "htamerge: wrote %s (%d ranks, run %s%s)\n", output, size,
            complete ? "complete" : "incomplete", refused);
}

int cli_run(int argc, char **argv)
{
    struct run_opts o = {0};
    struct run_plan plan;
    struct hm_clockhook hook;
    struct loop L = {0};
    struct hm_err err;
    char trace_dir[PATH_MAX + 32], line[1400];
    struct mrg_live_result res = {0};
    int size, provided, rc;
    pid_t server = -1;
    MPI_Comm node;

    rc = parse_run_opts(argc, argv, &o);
    if (rc)
        return rc > 0 ? CLI_EXIT_OK : CLI_EXIT_USAGE;
    if (hm_clockhook_load(&hook) != 0) {
        cli_error("malformed HTAMERGE_CLOCK_SKEW_NS, _DRIFT_PPM, _JUMP_NS or _JUMP_AFTER_MS");
        return CLI_EXIT_USAGE;
    }
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &L.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    if (L.rank == 0) {
        warn_if_bound_to_one_cpu();
        sweep_leftovers();
        make_plan(&plan, &hook);
    }
    MPI_Bcast(&plan, sizeof plan, MPI_BYTE, 0, MPI_COMM_WORLD);
    L.trace_root = plan.trace_root;
    L.touched = time(NULL);
    hm_err_clear(&err);
    if (L.rank == 0) {
        struct mrg_live_opts mo = {.output = o.output, .command_line = cli_command_line(argc, argv),
                                   .created_by = "htamerge run",
                                   .sync_interval_ms = (int64_t)(o.sync_interval_s * 1000),
                                   .analyse = 1, .hook = &hook};
        L.mrg = mrg_live_start(&mo, &err);
        if (!L.mrg) {
            cli_error("%s", hm_err_line(&err, line, sizeof line));
            MPI_Abort(MPI_COMM_WORLD, CLI_EXIT_FAIL);
        }
    } else {
        L.link = col_link_new(&hook, &err);
    }
    if (L.rank == 0 && o.serve)
        server = start_server(o.output, o.serve);
    start_rank(&L, &o, &plan, size, node, &hook, trace_dir, sizeof trace_dir);
    rc = run_loop(&L, &err);
    if (rc)
        cli_error("rank %d: %s", L.rank, hm_err_line(&err, line, sizeof line));
    if (L.rank == 0) {
        int complete = rc == 0 && !L.signal;
        if (mrg_live_finish(L.mrg, complete, &res, &err) != 0) {
            cli_error("%s", hm_err_line(&err, line, sizeof line));
            rc = -1;
        } else {
            say_written(o.output, size, complete, &res);
        }
    }
    if (getenv("HTAMERGE_STATS"))
        print_stats(L.rank, L.col);
    col_rank_free(L.col);
    col_link_free(L.link);
    if (o.keep_traces)
        fprintf(stderr, "htamerge: rank %d traces kept in %s\n", L.rank, trace_dir);
    else
        remove_traces(trace_dir, plan.trace_root);
    if (L.signal && L.rank == 0) {
        if (server > 0)
            kill(server, SIGTERM);
        /* The job is being torn down: what we have is written; do not wait
         * in MPI_Finalize for ranks that may be gone. */
        fflush(NULL);
        _exit(128 + L.signal);
    }
    if (rc) {
        /* This rank cannot go on (e.g. the disk is full): its peers would
         * wait in MPI_Finalize for it, or for rank 0's goodbye, forever.
         * What rank 0 could write is written; end the job. */
        if (server > 0)
            kill(server, SIGTERM);
        fflush(NULL);
        MPI_Abort(MPI_COMM_WORLD, CLI_EXIT_FAIL);
    }
    MPI_Comm_free(&node);
    MPI_Finalize();
    if (server > 0)
        wait_server(server);
    if (rc)
        return CLI_EXIT_FAIL;
    return run_exit_status(&L, &res);
}

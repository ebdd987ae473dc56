/* `htamerge [run options] PROGRAM [ARGS...]`: the main job's command line.
 * This file only parses the options into struct job_run_opts and hands
 * them to job_run (job/run.h), which runs the job. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "job/run.h"

static const char run_help[] =
    "usage: [mpirun -n N] htamerge [-o FILE.db] [--capture LIST] [--overhead-budget PCT | --capture-all |\n"
    "                              --cupti-window ON/PERIOD] [--sync-interval S] [--keep-traces]\n"
    "                              [--python-hooks on|off] [--] PROGRAM [ARGS...]\n"
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
    "      --overhead-budget PCT\n"
    "                           keep CUPTI's cost within PCT % of the program's time\n"
    "                           (default 2): rank 0 estimates it while the job runs\n"
    "                           (CUPTI records per second x a calibrated cost per\n"
    "                           record, and the time each attach and detach took) and\n"
    "                           records everything when that fits, else windows of\n"
    "                           whole steps, the same steps on every rank (of time when\n"
    "                           no steps are known). NVTX, NCCL and the Python hooks\n"
    "                           record throughout. `htamerge capture --steps N` asks for\n"
    "                           the next N steps in full\n"
    "      --capture-all        CUPTI attached throughout (no budget)\n"
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
    "      --python-hooks on|off\n"
    "                           when PROGRAM runs under Python (x.py, python -m mod, a\n"
    "                           python #! line), mark each training step with no change\n"
    "                           to the script: ranges step, forward, backward and\n"
    "                           optimizer (domain htamerge) from optimizer.step and\n"
    "                           backward calls, gloo (non-NCCL) collectives with their\n"
    "                           process group and sequence number, and the trace files\n"
    "                           torch.profiler exports wherever the script writes them\n"
    "                           (read in place, never changed). Default on;\n"
    "                           HTAMERGE_PYTHON_HOOKS=0 also turns it off. See PYTHON\n"
    "                           HOOKS in htamerge(1)\n"
    "      --serve ADDR:PORT    rank 0 serves the file (htamerge serve) while the job runs\n"
    "                           and after it ends, for --serve-linger\n"
    "      --serve-linger S     seconds to keep serving the finished file (default 300:\n"
    "                           time to look at it, and a batch job still ends on its\n"
    "                           own), 0 to stop with the job, or forever (until Ctrl-C)\n"
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

/* "kineto,nvtx" -> bits; -1 (with the message printed) on an unknown name. */
static int parse_capture(const char *list, unsigned *out)
{
    static const struct { const char *name; unsigned bits; } names[] = {
        {"kineto", JOB_CAP_KINETO}, {"cupti", JOB_CAP_CUPTI}, {"nvtx", JOB_CAP_NVTX},
        {"nccl", JOB_CAP_NCCL},     {"cupti-sync", JOB_CAP_CUPTI | JOB_CAP_CUPTI_SYNC},
        {"cupti-range", JOB_CAP_CUPTI | JOB_CAP_CUPTI_RANGE}, {"cupti-launches", JOB_CAP_CUPTI | JOB_CAP_CUPTI_LAUNCHES},
        {"cupti-lean", JOB_CAP_CUPTI},   /* the default since launches are rebuilt; kept for old command lines */
        {"all", JOB_CAP_ALL},       {"none", 0}};
    const char *p = list;

    *out = 0;
    while (*p) {
        size_t n = strcspn(p, ","), i;
        for (i = 0; i < sizeof names / sizeof names[0]; i++)
            if (strlen(names[i].name) == n && !strncmp(p, names[i].name, n))
                break;
        if (i == sizeof names / sizeof names[0]) {
            hm_say("--capture: unknown source '%.*s' (known: kineto, cupti, cupti-launches, cupti-sync, cupti-range, "
                      "nvtx, nccl, all, none)",
                      (int)n, p);
            return -1;
        }
        *out |= names[i].bits;
        p += n + (p[n] == ',');
    }
    return 0;
}

/* --cupti-window ON/PERIOD: milliseconds, 0 < ON < PERIOD <= one hour. */
static int parse_window(const char *arg, const char **out)
{
    long long on, period;
    int used = 0;

    if (sscanf(arg, "%lld/%lld%n", &on, &period, &used) != 2 || arg[used] != '\0' || on <= 0 ||
        period <= on || period > 3600000) {
        hm_say("--cupti-window '%s': want ON/PERIOD in milliseconds with 0 < ON < PERIOD <= "
                  "3600000, e.g. 1000/10000", arg);
        return -1;
    }
    *out = arg;
    return 0;
}

/* --serve-linger: whole seconds >= 0, or "forever". */
static int parse_linger(const char *arg, int *out)
{
    char *end;
    long v;

    if (!strcmp(arg, "forever")) {
        *out = JOB_SERVE_LINGER_FOREVER;
        return 0;
    }
    v = strtol(arg, &end, 10);
    if (end == arg || *end != '\0' || v < 0 || v > 31536000) {
        hm_say("--serve-linger '%s': want seconds (0 to 31536000) or forever", arg);
        return -1;
    }
    *out = (int)v;
    return 0;
}

static int parse_run_opts(int argc, char **argv, struct job_run_opts *o)
{
    static const struct option longopts[] = {
        {"output", required_argument, 0, 'o'}, {"sync-interval", required_argument, 0, 'S'},
        {"keep-traces", no_argument, 0, 'K'},  {"help", no_argument, 0, 'h'},
        {"serve", required_argument, 0, 'V'}, {"capture", required_argument, 0, 'C'},
        {"cupti-window", required_argument, 0, 'W'}, {"serve-linger", required_argument, 0, 'L'},
        {"python-hooks", required_argument, 0, 'P'}, {"overhead-budget", required_argument, 0, 'B'},
        {"capture-all", no_argument, 0, 'A'}, {0, 0, 0, 0}};
    const char *hooks_env = getenv("HTAMERGE_PYTHON_HOOKS");
    static char defname[64];
    int c, budget_set = 0;

    o->sync_interval_s = 10;
    o->overhead_budget_pct = 2;
    o->capture = JOB_CAP_ALL;
    o->serve_linger_s = JOB_SERVE_LINGER_DEFAULT_S;
    o->python_hooks = !(hooks_env && !strcmp(hooks_env, "0"));
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
            o->capture_set = 1;
            break;
        case 'L':
            if (parse_linger(optarg, &o->serve_linger_s) != 0)
                return -1;
            break;
        case 'W':
            if (parse_window(optarg, &o->window) != 0)
                return -1;
            break;
        case 'P':
            if (strcmp(optarg, "on") && strcmp(optarg, "off")) {
                hm_say("--python-hooks '%s': want on or off", optarg);
                return -1;
            }
            o->python_hooks = !strcmp(optarg, "on");
            break;
        case 'B': {
            char *end;
            double v = strtod(optarg, &end);
            if (*end || !(v > 0 && v <= 100)) {
                hm_say("--overhead-budget '%s': want a percentage, 0 < PCT <= 100", optarg);
                return -1;
            }
            o->overhead_budget_pct = v;
            budget_set = 1;
            break;
        }
        case 'A': o->capture_all = 1; break;
        case 'h': fputs(run_help, stdout); return 1;
        default: fputs(run_help, stderr); return -1;
        }
    }
    if (optind >= argc) {
        hm_say("no PROGRAM to run (try `htamerge --help`)");
        return -1;
    }
    if (budget_set + o->capture_all + (o->window != NULL) > 1) {
        hm_say("--overhead-budget, --capture-all and --cupti-window each decide when CUPTI records: "
               "give one");
        return -1;
    }
    if (o->window) {
        if (!(o->capture & JOB_CAP_CUPTI) || (o->capture & JOB_CAP_CUPTI_RANGE)) {
            hm_say("--cupti-window needs cupti in --capture, and not cupti-range (which "
                      "decides when CUPTI records itself)");
            return -1;
        }
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

int cli_run(int argc, char **argv)
{
    struct job_run_opts o = {0};
    int rc = parse_run_opts(argc, argv, &o);

    if (rc)
        return rc > 0 ? CLI_EXIT_OK : CLI_EXIT_USAGE;
    o.command_line = cli_command_line(argc, argv);
    return job_run(&o, argc, argv);
}

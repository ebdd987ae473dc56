/* `htamerge capture [FILE.db] --steps N | --seconds S`: from another shell
 * on rank 0's host, asks a running job to record the next N steps in full
 * on every rank (CUPTI attached on GPUs; torch.profiler's CPU ops on the
 * CPU), then return to its budget. It finds the job by the file it writes,
 * or as the only job of this user on this host, and talks to rank 0
 * through its control socket (common/control_socket.h). */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "common/control_socket.h"

static const char capture_help[] =
    "usage: htamerge capture [FILE.db] (--steps N | --seconds S) [--no-wait]\n"
    "\n"
    "Asks a running `htamerge` job on this host to record the next N steps in\n"
    "full on every rank, then to return to its cost budget: on GPUs CUPTI is\n"
    "attached for those steps; on the CPU the Python hooks run torch.profiler\n"
    "(CPU ops) for them and its trace is merged like any other. Rank 0 picks\n"
    "steps far enough ahead for every rank to get the request in time, so all\n"
    "ranks record the same steps. Without steps (no Python hooks), --seconds S\n"
    "records S seconds from shortly after now.\n"
    "\n"
    "FILE.db names the job by the file it writes; without it, the only job of\n"
    "this user on this host is asked (a list is printed when there are several).\n"
    "\n"
    "options:\n"
    "      --steps N      the next N steps (1 to 100000)\n"
    "      --seconds S    S seconds, for jobs without steps\n"
    "      --no-wait      return once the job took the request (default: wait\n"
    "                     until rank 0 is past the last step)\n"
    "  -h, --help         this text\n"
    "\n"
    "exit status: 0 recorded (or taken, with --no-wait), 1 the job refused or\n"
    "went away, 2 usage or no such job.\n"
    "\n"
    "examples:\n"
    "  htamerge capture --steps 5\n"
    "  htamerge capture run.db --steps 20 --no-wait\n"
    "  htamerge capture --seconds 2\n";

struct job_ref {
    int pid;
    char db[PATH_MAX];
};

/* The jobs whose control socket is there and whose rank 0 is alive. */
static int list_jobs(struct job_ref *jobs, int max)
{
    char dir[256];
    DIR *d;
    struct dirent *e;
    int n = 0;

    if (hm_control_dir(dir, sizeof dir) != 0 || !(d = opendir(dir)))
        return 0;
    while ((e = readdir(d)) && n < max) {
        char *end;
        long pid = strtol(e->d_name, &end, 10);
        char note[300];
        FILE *f;
        if (pid <= 0 || strcmp(end, ".sock") != 0)
            continue;
        if (kill((pid_t)pid, 0) != 0 && errno == ESRCH)
            continue;
        jobs[n].pid = (int)pid;
        jobs[n].db[0] = 0;
        if (hm_control_note_path(note, sizeof note, (pid_t)pid) == 0 && (f = fopen(note, "r"))) {
            if (fgets(jobs[n].db, sizeof jobs[n].db, f))
                jobs[n].db[strcspn(jobs[n].db, "\n")] = 0;
            fclose(f);
        }
        n++;
    }
    closedir(d);
    return n;
}

static int pick_job(const char *db, struct job_ref *out)
{
    struct job_ref jobs[64];
    char want[PATH_MAX];
    int n = list_jobs(jobs, 64), found = -1;

    if (db) {
        if (!realpath(db, want))
            snprintf(want, sizeof want, "%s", db);
        for (int i = 0; i < n; i++)
            if (!strcmp(jobs[i].db, want))
                found = i;
        if (found < 0) {
            hm_say("capture: no running job on this host writes %s (%d job%s found)", want, n, n == 1 ? "" : "s");
            return -1;
        }
    } else if (n == 1) {
        found = 0;
    } else {
        if (n == 0)
            hm_say("capture: no running htamerge job of this user on this host (run this on rank 0's host)");
        else
            hm_say("capture: %d jobs are running; name one by the file it writes:", n);
        for (int i = 0; i < n; i++)
            fprintf(stderr, "  pid %d writes %s\n", jobs[i].pid, jobs[i].db);
        return -1;
    }
    *out = jobs[found];
    return 0;
}

static int talk(const struct job_ref *j, const char *request, int wait)
{
    struct hm_control_reader r = {0};
    char path[108], line[1024];
    int fd, rc = 1;

    if (hm_control_sock_path(path, sizeof path, j->pid) != 0)
        return 2;
    if ((fd = hm_control_send(path, request)) < 0) {
        hm_say("capture: cannot reach the job (pid %d) at %s: %s", j->pid, path, strerror(errno));
        return 1;
    }
    for (;;) {
        int k = hm_control_read_line(fd, &r, line, sizeof line, -1);
        if (k <= 0) {
            if (rc != 0 || wait)
                hm_say("capture: the job (pid %d) closed the connection", j->pid);
            break;
        }
        if (!strncmp(line, "ok ", 3)) {
            printf("%s\n", line + 3);
            rc = 0;
            if (!wait)
                break;
        } else if (!strncmp(line, "done ", 5)) {
            printf("%s\n", line + 5);
            break;
        } else {
            hm_say("capture: %s", !strncmp(line, "error ", 6) ? line + 6 : line);
            rc = 1;
            break;
        }
    }
    fflush(stdout);
    close(fd);
    return rc;
}

int cli_capture(int argc, char **argv)
{
    static const struct option longopts[] = {{"steps", required_argument, 0, 's'},
                                             {"seconds", required_argument, 0, 'S'},
                                             {"no-wait", no_argument, 0, 'n'},
                                             {"help", no_argument, 0, 'h'},
                                             {0, 0, 0, 0}};
    int c, steps = 0, wait = 1;
    double secs = 0;
    char request[64];
    struct job_ref job;

    optind = 1;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case 's':
            if (cli_parse_int(optarg, 1, 100000, &steps) != 0) {
                hm_say("capture: --steps '%s': want 1 to 100000", optarg);
                return CLI_EXIT_USAGE;
            }
            break;
        case 'S': {
            char *end;
            secs = strtod(optarg, &end);
            if (*end || !(secs > 0 && secs <= 3600)) {
                hm_say("capture: --seconds '%s': want 0 < S <= 3600", optarg);
                return CLI_EXIT_USAGE;
            }
            break;
        }
        case 'n': wait = 0; break;
        case 'h': fputs(capture_help, stdout); return CLI_EXIT_OK;
        default: fputs(capture_help, stderr); return CLI_EXIT_USAGE;
        }
    }
    if ((steps > 0) == (secs > 0)) {
        hm_say("capture: give one of --steps N or --seconds S");
        return CLI_EXIT_USAGE;
    }
    if (argc - optind > 1) {
        hm_say("capture: one FILE.db at most");
        return CLI_EXIT_USAGE;
    }
    if (pick_job(optind < argc ? argv[optind] : NULL, &job) != 0)
        return CLI_EXIT_USAGE;
    if (steps > 0)
        snprintf(request, sizeof request, "steps %d\n", steps);
    else
        snprintf(request, sizeof request, "seconds %.6g\n", secs);
    return talk(&job, request, wait) == 0 ? CLI_EXIT_OK : CLI_EXIT_FAIL;
}

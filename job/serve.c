/* --serve: `htamerge serve FILE --listen ADDR` as a child of rank 0, so the
 * file can be browsed while the run writes it (WAL) and, for
 * --serve-linger seconds, after: a person watching the run sees it
 * complete and keeps browsing, and a batch job still ends on its own. */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/control_socket.h"
#include "common/monotime.h"
#include "job_int.h"

pid_t job_start_server(const char *db, const char *addr)
{
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    pid_t pid;

    if (n <= 0)
        return -1;
    self[n] = '\0';
    pid_t parent = getpid();
    char sock[108];
    int have_sock = hm_control_sock_path(sock, sizeof sock, parent) == 0;
    pid = fork();
    if (pid == 0) {
        /* The server ends with rank 0, however rank 0 ends (even killed). */
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() != parent)
            _exit(0);
        if (have_sock)   /* POST /api/capture forwards there */
            setenv("HTAMERGE_CAPTURE_SOCKET", sock, 1);
        execl(self, self, "serve", db, "--listen", addr, (char *)NULL);
        _exit(127);
    }
    return pid;
}

/* The server child job_wait_server waits for; its signal handler forwards
 * there. */
static volatile sig_atomic_t g_server_pid;

static void forward_to_server(int sig)
{
    if (g_server_pid > 0)
        kill((pid_t)g_server_pid, sig);
}

/* SIGTERM, then SIGKILL if the server is still there 5 s later. */
static void stop_server(pid_t pid)
{
    int status;

    kill(pid, SIGTERM);
    for (int i = 0; i < 50 && waitpid(pid, &status, WNOHANG) == 0; i++)
        nanosleep(&(struct timespec){.tv_nsec = 100000000L}, NULL);
    if (kill(pid, 0) == 0) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
    }
}

static void say_serving(const char *addr, int linger_s)
{
    if (linger_s == JOB_SERVE_LINGER_FOREVER)
        fprintf(stderr, "htamerge: still serving the finished run at http://%s/; Ctrl-C to stop\n", addr);
    else
        fprintf(stderr, "htamerge: still serving the finished run at http://%s/ for %d s (--serve-linger); "
                        "Ctrl-C to stop\n", addr, linger_s);
}

/* After the run: keep serving for linger_s seconds, or until the user stops
 * the server. Ctrl-C at a terminal reaches the server itself (same process
 * group); a signal that mpirun passes on to rank 0 alone is forwarded to
 * it; and when mpirun itself is gone (killed: a batch system, `timeout
 * -k`), rank 0 stops its server and ends instead of serving, orphaned.
 * (A run started without a launcher keeps serving when its shell goes:
 * nohup works.) */
void job_wait_server(pid_t pid, const char *addr, int linger_s)
{
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
    struct sigaction sa = {.sa_handler = forward_to_server};
    pid_t parent = getppid();
    int launched = getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMIX_RANK") || getenv("PMI_RANK") ||
                   getenv("SLURM_STEP_ID");
    double until = hm_mono_s() + linger_s;
    int status;

    if (linger_s == 0) {
        stop_server(pid);
        return;
    }
    g_server_pid = pid;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        sigaction(sigs[i], &sa, NULL);
    say_serving(addr, linger_s);
    for (;;) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid || (r < 0 && errno != EINTR))
            break;
        if (launched && getppid() != parent) {
            fprintf(stderr, "htamerge: mpirun is gone; stopping the server\n");
            stop_server(pid);
            break;
        }
        if (linger_s != JOB_SERVE_LINGER_FOREVER && hm_mono_s() >= until) {
            fprintf(stderr, "htamerge: stopped serving after %d s (--serve-linger)\n", linger_s);
            stop_server(pid);
            break;
        }
        nanosleep(&(struct timespec){.tv_nsec = 200000000L}, NULL);
    }
    g_server_pid = 0;
}

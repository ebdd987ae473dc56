/* Tests for collector/child: exit codes, spawn errors named by the spawner,
 * the .py interpreter rule, output inheritance, signal forwarding, the
 * collector's signal fd, the child's own session and its death with us. */
#include "test.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "collector/child.h"

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Polls the child's fd and reaps it; returns the exit code, or -1 if it
 * did not exit within ms. */
static int wait_exit(struct col_child *c, int ms)
{
    int64_t end = now_ms() + ms;
    int st;

    for (;;) {
        struct pollfd pfd = { .fd = col_child_fd(c), .events = POLLIN };
        int left = (int)(end - now_ms());
        if (col_child_reap(c, &st) == 1)
            return col_child_exit_code(st);
        if (left <= 0)
            return -1;
        poll(&pfd, 1, left);
    }
}

/* Spawns argv with envp and returns its exit code, or -2 if spawn failed. */
static int run(char *const argv[], char *const envp[])
{
    struct hm_err err;
    struct col_child *c = col_child_spawn(argv, envp, &err);
    int code;

    if (!c) {
        fprintf(stderr, "spawn: %s\n", err.msg);
        return -2;
    }
    code = wait_exit(c, 5000);
    col_child_free(c);
    return code;
}

static void test_exit_codes(void)
{
    char *t[] = { "/bin/true", NULL };
    char *f[] = { "false", NULL };   /* through PATH */
    char *seven[] = { "sh", "-c", "exit 7", NULL };
    char *segv[] = { "sh", "-c", "kill -SEGV $$", NULL };
    char *term[] = { "sh", "-c", "kill -TERM $$", NULL };

    CHECK_EQ_INT(run(t, NULL), 0);
    CHECK_EQ_INT(run(f, NULL), 1);
    CHECK_EQ_INT(run(seven, NULL), 7);
    CHECK_EQ_INT(run(segv, NULL), 139);
    CHECK_EQ_INT(run(term, NULL), 143);
    CHECK_EQ_INT(col_child_exit_code(0), 0);
    CHECK_EQ_INT(col_child_exit_code(3 << 8), 3);
    CHECK_EQ_INT(col_child_exit_code(SIGKILL), 137);
}

static void check_spawn_error(char *const argv[], char *const envp[], const char *want)
{
    struct hm_err err;
    struct col_child *c;

    hm_err_clear(&err);
    c = col_child_spawn(argv, envp, &err);
    CHECK(c == NULL);
    CHECK_EQ_INT(err.code, HM_EIO);
    CHECK_STR(err.msg, want);
    col_child_free(c);
}

static void test_spawn_errors(void)
{
    const char *dir = hm_tmpfile("child_errs");
    char noexec[4096], subdir[4096];
    char *missing[] = { "htamerge-no-such-program", "arg", NULL };
    char *missing_path[] = { "/nonexistent/prog", NULL };
    char *not_exec[] = { noexec, NULL };
    char *a_dir[] = { subdir, NULL };
    char *empty[] = { NULL };
    char *no_path_env[] = { "PATH=/nonexistent", NULL };
    char *sh[] = { "sh", "-c", "true", NULL };
    char want[8192];
    struct hm_err err;
    int fd;

    mkdir(dir, 0755);
    snprintf(noexec, sizeof noexec, "%s/noexec", dir);
    snprintf(subdir, sizeof subdir, "%s/sub", dir);
    mkdir(subdir, 0755);
    fd = open(noexec, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    CHECK(fd >= 0);
    close(fd);

    check_spawn_error(missing, NULL, "cannot run 'htamerge-no-such-program': No such file or directory");
    check_spawn_error(missing_path, NULL, "cannot run '/nonexistent/prog': No such file or directory");
    snprintf(want, sizeof want, "cannot run '%s': Permission denied", noexec);
    check_spawn_error(not_exec, NULL, want);   /* no x bit at all: refused even for root */
    snprintf(want, sizeof want, "cannot run '%s': Is a directory", subdir);
    check_spawn_error(a_dir, NULL, want);
    /* the child's PATH is the one searched */
    check_spawn_error(sh, no_path_env, "cannot run 'sh': No such file or directory");
    CHECK(col_child_spawn(empty, NULL, &err) == NULL);
    CHECK_EQ_INT(err.code, HM_EINVAL);
}

static void write_file(const char *path, const char *text, mode_t mode)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
    CHECK(fd >= 0);
    if (fd >= 0) {
        CHECK_EQ_INT(write(fd, text, strlen(text)), (long long)strlen(text));
        close(fd);
    }
}

static void test_python_rule(void)
{
    char script[4096], noshebang[4096], want[8192];
    char *py[] = { script, "9", NULL };
    char *missing[] = { "/nonexistent/train.py", NULL };
    char *plain[] = { noshebang, "5", NULL };
    char *env_sh[] = { "HTAMERGE_PYTHON=/bin/sh", "PATH=/usr/bin:/bin", NULL };
    char *env_bad[] = { "HTAMERGE_PYTHON=htamerge-no-python", "PATH=/usr/bin:/bin", NULL };

    snprintf(script, sizeof script, "%s/train.py", hm_tmpfile("child_errs"));
    snprintf(noshebang, sizeof noshebang, "%s/plain_script", hm_tmpfile("child_errs"));
    /* the "interpreter" is /bin/sh, so the script is shell: exit with $1 */
    write_file(script, "exit $1\n", 0644);   /* not executable: it is run by the interpreter */
    CHECK_EQ_INT(run(py, env_sh), 9);

    snprintf(want, sizeof want, "cannot run '%s' with 'htamerge-no-python': No such file or directory",
             script);
    check_spawn_error(py, env_bad, want);
    check_spawn_error(missing, env_sh, "cannot run '/nonexistent/train.py': No such file or directory");

    /* execvp rule: an executable without #! runs under /bin/sh */
    write_file(noshebang, "exit $(($1 + 1))\n", 0755);
    CHECK_EQ_INT(run(plain, NULL), 6);
}

/* The child writes to our stdout: that is how its output is forwarded. */
static void test_output_inherited(void)
{
    const char *out = hm_tmpfile("child_stdout.txt");
    char *echo[] = { "sh", "-c", "echo hello-from-child; echo to-stderr >&2", NULL };
    int saved = dup(1), fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    char buf[128] = { 0 };

    CHECK(fd >= 0 && saved >= 0);
    fflush(stdout);
    dup2(fd, 1);
    close(fd);
    CHECK_EQ_INT(run(echo, NULL), 0);
    dup2(saved, 1);
    close(saved);
    fd = open(out, O_RDONLY);
    CHECK(read(fd, buf, sizeof buf - 1) > 0);
    close(fd);
    CHECK_STR(buf, "hello-from-child\n");
}

static void test_signal_forwarding(void)
{
    char *sleeper[] = { "sleep", "30", NULL };
    char *session[] = { "sh", "-c", "test \"$(cut -d' ' -f6 /proc/$$/stat)\" = $$", NULL };
    struct hm_err err;
    struct col_child *c;
    sigset_t block, old;
    int64_t t0;
    int st;

    /* the child runs in its own session (sid == its pid) */
    CHECK_EQ_INT(run(session, NULL), 0);

    /* TERM reaches a sleeping child; it is reaped within 2 s */
    c = col_child_spawn(sleeper, NULL, &err);
    CHECK(c != NULL);
    if (!c)
        return;
    CHECK(col_child_pid(c) > 0);
    CHECK_EQ_INT(col_child_reap(c, &st), 0);
    t0 = now_ms();
    col_child_signal(c, SIGTERM);
    CHECK_EQ_INT(wait_exit(c, 2000), 143);
    CHECK(now_ms() - t0 < 2000);
    col_child_signal(c, SIGTERM);   /* after reaping: nothing */
    CHECK_EQ_INT(col_child_reap(c, &st), 1);
    col_child_free(c);

    /* our blocked mask is not inherited: INT still kills the child */
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    sigprocmask(SIG_BLOCK, &block, &old);
    c = col_child_spawn(sleeper, NULL, &err);
    sigprocmask(SIG_SETMASK, &old, NULL);
    CHECK(c != NULL);
    if (!c)
        return;
    col_child_signal(c, SIGINT);
    CHECK_EQ_INT(wait_exit(c, 2000), 130);
    col_child_free(c);

    /* freeing a running child kills it */
    c = col_child_spawn(sleeper, NULL, &err);
    t0 = now_ms();
    col_child_free(c);
    CHECK(now_ms() - t0 < 2000);
}

/* The collector's own signal fd: handlers queue signals in order. */
static void test_signal_fd(void)
{
    int fd = col_signals_install();
    struct pollfd pfd = { .fd = fd, .events = POLLIN };

    CHECK(fd >= 0);
    CHECK_EQ_INT(col_signals_install(), fd);
    CHECK_EQ_INT(col_signals_take(), 0);
    kill(getpid(), SIGTERM);
    kill(getpid(), SIGUSR1);
    CHECK_EQ_INT(poll(&pfd, 1, 1000), 1);
    CHECK_EQ_INT(col_signals_take(), SIGTERM);
    CHECK_EQ_INT(col_signals_take(), SIGUSR1);
    CHECK_EQ_INT(col_signals_take(), 0);
    CHECK_EQ_INT(poll(&pfd, 1, 0), 0);
}

/* With the collector's handlers installed, the child gets default
 * dispositions (TERM kills it), but a signal ignored when we started (as
 * under nohup) stays ignored for the child. */
static void test_dispositions_in_child(void)
{
    char *term[] = { "sh", "-c", "kill -TERM $$; exit 4", NULL };
    char *hup[] = { "sh", "-c", "kill -HUP $$; exit 4", NULL };
    struct sigaction ign, old;

    CHECK(col_signals_install() >= 0);
    CHECK_EQ_INT(run(term, NULL), 143);
    memset(&ign, 0, sizeof ign);
    ign.sa_handler = SIG_IGN;
    sigaction(SIGHUP, &ign, &old);
    CHECK_EQ_INT(run(hup, NULL), 4);
    sigaction(SIGHUP, &old, NULL);
    CHECK_EQ_INT(col_signals_take(), 0);   /* nothing the child did reached our fd */
}

/* If the collector dies, the child is killed: a middle process spawns a
 * sleeper and exits; we, as subreaper, collect the orphan. */
static void test_dies_with_parent(void)
{
    int fds[2];
    pid_t mid, orphan = 0;
    int st = 0;
    int64_t end;

    CHECK_EQ_INT(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
    CHECK_EQ_INT(pipe(fds), 0);
    mid = fork();
    if (mid == 0) {
        char *sleeper[] = { "sleep", "30", NULL };
        struct hm_err err;
        struct col_child *c = col_child_spawn(sleeper, NULL, &err);
        pid_t p = c ? col_child_pid(c) : -1;
        if (write(fds[1], &p, sizeof p) < 0)
            _exit(2);
        _exit(0);   /* without reaping or killing it */
    }
    close(fds[1]);
    CHECK_EQ_INT(read(fds[0], &orphan, sizeof orphan), (long long)sizeof orphan);
    close(fds[0]);
    waitpid(mid, NULL, 0);
    CHECK(orphan > 0);
    end = now_ms() + 2000;
    while (orphan > 0 && now_ms() < end && waitpid(orphan, &st, WNOHANG) == 0)
        usleep(10000);
    CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
    prctl(PR_SET_CHILD_SUBREAPER, 0);
}

/* Kernels without pidfd_open: the SIGCHLD pipe path. */
static void test_sigchld_fallback(void)
{
    char *f[] = { "false", NULL };
    char *sleeper[] = { "sleep", "30", NULL };
    struct hm_err err;
    struct col_child *c;

    setenv("HTAMERGE_NO_PIDFD", "1", 1);
    CHECK_EQ_INT(run(f, NULL), 1);
    c = col_child_spawn(sleeper, NULL, &err);
    CHECK(c != NULL);
    if (c) {
        col_child_signal(c, SIGKILL);
        CHECK_EQ_INT(wait_exit(c, 2000), 137);
        col_child_free(c);
    }
    unsetenv("HTAMERGE_NO_PIDFD");
}

int main(void)
{
    struct rlimit no_core = { 0, 0 };

    setrlimit(RLIMIT_CORE, &no_core);   /* the SEGV test must not leave a core */
    mkdir(hm_tmpfile("child_errs"), 0755);
    test_exit_codes();
    test_spawn_errors();
    test_python_rule();
    test_output_inherited();
    test_signal_forwarding();
    test_signal_fd();
    test_dispositions_in_child();
    test_dies_with_parent();
    test_sigchld_fallback();
    return hm_test_done();
}

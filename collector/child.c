/* Child process supervision: spawn with exec errors reported by the
 * spawner, an exit fd for poll, reaping, and signal forwarding (see
 * child.h for the process layout).
 *
 * Spawn sequence: resolve the program in the parent (so "not found" is an
 * ordinary error), block all signals, fork; the child restores default
 * dispositions, starts a session, asks for SIGKILL on parent death,
 * unblocks signals and execs; if exec fails it writes errno into a
 * close-on-exec pipe, so the parent reads either EOF (the program runs) or
 * the reason it could not. */
#include "child.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

struct col_child {
    pid_t pid;
    int fd;          /* pidfd (owned) or the shared SIGCHLD pipe (borrowed) */
    int fd_owned;
    int reaped;
    int status;      /* wait status once reaped */
};

/* ---- signals: the collector's one piece of global state ----------------- */

static const int forwarded[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2 };
#define N_FORWARDED (sizeof forwarded / sizeof forwarded[0])

/* Self-pipes written by the handlers: handlers get no user pointer. */
static struct {
    int sig[2];     /* forwarded signals, one byte each */
    int chld[2];    /* SIGCHLD, when there is no pidfd */
} col_sig = { { -1, -1 }, { -1, -1 } };

static void on_signal(int sig)
{
    int saved = errno;
    unsigned char b = (unsigned char)sig;
    int fd = sig == SIGCHLD ? col_sig.chld[1] : col_sig.sig[1];

    if (write(fd, &b, 1) < 0) {
        /* pipe full: the reader is far behind; dropping is fine */
    }
    errno = saved;
}

static int handle(int sig)
{
    struct sigaction sa;

    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESTART | (sig == SIGCHLD ? SA_NOCLDSTOP : 0);
    sigfillset(&sa.sa_mask);
    return sigaction(sig, &sa, NULL);
}

int col_signals_install(void)
{
    if (col_sig.sig[0] >= 0)
        return col_sig.sig[0];
    if (pipe2(col_sig.sig, O_NONBLOCK | O_CLOEXEC) != 0)
        return HM_EIO;
    for (size_t i = 0; i < N_FORWARDED; i++) {
        struct sigaction old;
        if (sigaction(forwarded[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN)
            continue;   /* ignored on entry (nohup): keep it so, for the child too */
        if (handle(forwarded[i]) != 0)
            return HM_EIO;
    }
    return col_sig.sig[0];
}

int col_signals_take(void)
{
    unsigned char b;

    if (col_sig.sig[0] < 0)
        return 0;
    return read(col_sig.sig[0], &b, 1) == 1 ? b : 0;
}

/* The SIGCHLD pipe for kernels without pidfd_open. */
static int chld_pipe(void)
{
    if (col_sig.chld[0] >= 0)
        return col_sig.chld[0];
    if (pipe2(col_sig.chld, O_NONBLOCK | O_CLOEXEC) != 0)
        return -1;
    if (handle(SIGCHLD) != 0)
        return -1;
    return col_sig.chld[0];
}

static int pidfd_open_(pid_t pid)
{
#ifdef SYS_pidfd_open
    const char *off = getenv("HTAMERGE_NO_PIDFD");   /* test hook: the fallback path */
    if (off && *off && strcmp(off, "0"))
        return -1;
    return (int)syscall(SYS_pidfd_open, pid, 0);
#else
    (void)pid;
    errno = ENOSYS;
    return -1;
#endif
}

/* True if pidfd_open works here (probed on ourselves; fd closed). */
static int have_pidfd(void)
{
    int fd = pidfd_open_(getpid());
    if (fd < 0)
        return 0;
    close(fd);
    return 1;
}

/* ---- program resolution ------------------------------------------------- */

static const char *envp_get(char *const *envp, const char *name)
{
    size_t n = strlen(name);
    for (; envp && *envp; envp++)
        if (!strncmp(*envp, name, n) && (*envp)[n] == '=')
            return *envp + n + 1;
    return NULL;
}

/* 0 if path is a file we may execute, else an errno. */
static int exec_ok(const char *path)
{
    struct stat st;

    if (stat(path, &st) != 0)
        return errno;
    if (S_ISDIR(st.st_mode))
        return EISDIR;
    if (access(path, X_OK) != 0)
        return errno;
    return 0;
}

/* Resolves name as execvp would. Returns a malloc'd path, or NULL with
 * *why = errno (EACCES if some candidate was not executable, else ENOENT). */
static char *search_path(const char *name, const char *path, int *why)
{
    size_t nlen = strlen(name);
    int saw_eacces = 0;

    if (strchr(name, '/')) {
        *why = exec_ok(name);
        return *why ? NULL : strdup(name);
    }
    if (!*name) {
        *why = ENOENT;
        return NULL;
    }
    for (const char *p = path;; p++) {
        const char *e = strchrnul(p, ':');
        size_t dlen = (size_t)(e - p);
        char *cand = malloc(dlen + nlen + 3);
        int rc;
        if (!cand) {
            *why = ENOMEM;
            return NULL;
        }
        if (dlen)
            snprintf(cand, dlen + nlen + 3, "%.*s/%s", (int)dlen, p, name);
        else   /* an empty entry is the working directory */
            snprintf(cand, dlen + nlen + 3, "./%s", name);
        rc = exec_ok(cand);
        if (!rc)
            return cand;
        free(cand);
        saw_eacces |= rc == EACCES;
        if (!*e)
            break;
        p = e;
    }
    *why = saw_eacces ? EACCES : ENOENT;
    return NULL;
}

/* What the forked child executes; all memory is prepared before fork. */
struct plan {
    char *path;       /* owned: resolved program */
    char **argv;      /* owned array; strings borrowed from the caller */
    char **sh_argv;   /* owned array: /bin/sh PATH ARGS... for a script without #! */
    char *const *envp;
};

static void plan_free(struct plan *p)
{
    free(p->path);
    free(p->argv);
    free(p->sh_argv);
}

static int plan_fail(const char *name, const char *via, int why, struct hm_err *err)
{
    if (via)
        return hm_err_set(err, HM_EIO, NULL, -1, "cannot run '%s' with '%s': %s", name, via,
                          strerror(why));
    return hm_err_set(err, HM_EIO, NULL, -1, "cannot run '%s': %s", name, strerror(why));
}

static int ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && !strcmp(s + a - b, suffix);
}

/* Fills p->argv (with the interpreter in front for .py) and p->sh_argv. */
static int plan_argv(struct plan *p, char *const argv[], const char *interp)
{
    size_t n = 0, k = interp ? 1 : 0;

    while (argv[n])
        n++;
    p->argv = calloc(n + k + 1, sizeof *p->argv);
    p->sh_argv = calloc(n + k + 2, sizeof *p->sh_argv);
    if (!p->argv || !p->sh_argv)
        return HM_ENOMEM;
    if (interp)
        p->argv[0] = (char *)interp;
    for (size_t i = 0; i < n; i++)
        p->argv[i + k] = argv[i];
    p->sh_argv[0] = "/bin/sh";
    p->sh_argv[1] = p->path;
    for (size_t i = 1; i < n + k; i++)
        p->sh_argv[i + 1] = p->argv[i];
    return 0;
}

static int plan_make(struct plan *p, char *const argv[], char *const envp[], struct hm_err *err)
{
    const char *name = argv[0], *interp = NULL;
    const char *path = envp_get(envp, "PATH");
    int why = 0;

    memset(p, 0, sizeof *p);
    p->envp = envp;
    if (!path)
        path = getenv("PATH");
    if (!path)
        path = "/bin:/usr/bin";
    if (ends_with(name, ".py")) {
        if (access(name, R_OK) != 0)
            return plan_fail(name, NULL, errno, err);
        interp = envp_get(envp, "HTAMERGE_PYTHON");
        if (!interp || !*interp)
            interp = "python3";
    }
    p->path = search_path(interp ? interp : name, path, &why);
    if (!p->path)
        return plan_fail(name, interp, why, err);
    if (plan_argv(p, argv, interp) != 0)
        return hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");
    return 0;
}

/* ---- spawning ------------------------------------------------------------ */

/* In the forked child: only async-signal-safe calls from here on. */
static void child_exec(const struct plan *p, int status_fd, pid_t parent)
{
    static const int reset[] = { SIGPIPE, SIGXFSZ, SIGCHLD };
    struct sigaction dfl;
    sigset_t none;
    int e;

    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    for (size_t i = 0; i < N_FORWARDED; i++) {
        struct sigaction old;
        if (sigaction(forwarded[i], NULL, &old) == 0 && old.sa_handler != SIG_IGN)
            sigaction(forwarded[i], &dfl, NULL);
    }
    for (size_t i = 0; i < sizeof reset / sizeof reset[0]; i++)
        sigaction(reset[i], &dfl, NULL);
    setsid();
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
        _exit(127);   /* the collector died already */
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    execve(p->path, p->argv, p->envp);
    if (errno == ENOEXEC)
        execve("/bin/sh", p->sh_argv, p->envp);
    e = errno;
    if (write(status_fd, &e, sizeof e) < 0)
        _exit(127);
    _exit(127);
}

/* Waits for the exec verdict. Returns 0 (running) or the child's errno
 * after reaping it. */
static int exec_verdict(int rd, pid_t pid)
{
    int e = 0, st;
    ssize_t n;

    do
        n = read(rd, &e, sizeof e);
    while (n < 0 && errno == EINTR);
    if (n == (ssize_t)sizeof e) {
        while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
            ;
        return e ? e : EIO;
    }
    return 0;
}

/* Forks and execs p. Returns the pid, or -1 with *why set. */
static pid_t fork_exec(const struct plan *p, int *why)
{
    sigset_t all, saved;
    pid_t parent = getpid(), pid;
    int fds[2];

    if (pipe2(fds, O_CLOEXEC) != 0) {
        *why = errno;
        return -1;
    }
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &saved);   /* no handler runs in the child */
    pid = fork();
    if (pid == 0)
        child_exec(p, fds[1], parent);
    *why = errno;
    pthread_sigmask(SIG_SETMASK, &saved, NULL);
    close(fds[1]);
    if (pid > 0 && (*why = exec_verdict(fds[0], pid)) != 0)
        pid = -1;
    close(fds[0]);
    return pid;
}

static struct col_child *child_new(pid_t pid, int use_pidfd, struct hm_err *err)
{
    struct col_child *c = calloc(1, sizeof *c);

    if (c) {
        c->pid = pid;
        c->fd = use_pidfd ? pidfd_open_(pid) : chld_pipe();
        c->fd_owned = use_pidfd;
        if (c->fd >= 0)
            return c;
        hm_err_set(err, HM_EIO, NULL, -1, "cannot watch child %d: %s", (int)pid, strerror(errno));
    } else {
        hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");
    }
    kill(pid, SIGKILL);
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
        ;
    free(c);
    return NULL;
}

struct col_child *col_child_spawn(char *const argv[], char *const envp[], struct hm_err *err)
{
    struct col_child *c = NULL;
    struct plan p;
    int use_pidfd, why = 0;
    pid_t pid;

    if (!argv || !argv[0]) {
        hm_err_set(err, HM_EINVAL, NULL, -1, "no program to run");
        return NULL;
    }
    if (!envp)
        envp = environ;
    if (plan_make(&p, argv, envp, err) != 0)
        goto out;
    use_pidfd = have_pidfd();
    if (!use_pidfd && chld_pipe() < 0) {   /* before fork: an early exit must not be missed */
        hm_err_set(err, HM_EIO, NULL, -1, "cannot watch children: %s", strerror(errno));
        goto out;
    }
    pid = fork_exec(&p, &why);
    if (pid < 0)
        plan_fail(argv[0], p.argv[0] != argv[0] ? p.argv[0] : NULL, why, err);
    else
        c = child_new(pid, use_pidfd, err);
out:
    plan_free(&p);
    return c;
}

/* ---- supervision --------------------------------------------------------- */

int col_child_fd(const struct col_child *c)
{
    return c->fd;
}

pid_t col_child_pid(const struct col_child *c)
{
    return c->pid;
}

int col_child_reap(struct col_child *c, int *status)
{
    pid_t r;
    int st;

    if (!c->reaped) {
        if (!c->fd_owned) {   /* drain the shared SIGCHLD pipe before waiting */
            unsigned char buf[64];
            while (read(c->fd, buf, sizeof buf) > 0)
                ;
        }
        do
            r = waitpid(c->pid, &st, WNOHANG);
        while (r < 0 && errno == EINTR);
        if (r < 0)
            return HM_EIO;
        if (r == 0)
            return 0;
        c->reaped = 1;
        c->status = st;
    }
    if (status)
        *status = c->status;
    return 1;
}

void col_child_signal(struct col_child *c, int sig)
{
    if (!c || c->reaped)
        return;
    if (killpg(c->pid, sig) != 0)
        kill(c->pid, sig);
}

int col_child_exit_code(int wait_status)
{
    if (WIFEXITED(wait_status))
        return WEXITSTATUS(wait_status);
    if (WIFSIGNALED(wait_status))
        return 128 + WTERMSIG(wait_status);
    return 1;
}

void col_child_free(struct col_child *c)
{
    if (!c)
        return;
    if (!c->reaped) {
        col_child_signal(c, SIGKILL);
        while (waitpid(c->pid, NULL, 0) < 0 && errno == EINTR)
            ;
    }
    if (c->fd_owned)
        close(c->fd);
    free(c);
}

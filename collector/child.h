/* The supervised child: starts PROGRAM, tells the collector's poll loop
 * when it exits, and forwards the signals the launcher sends us. It does
 * not build the child's environment (launcher_env.c) or read its traces
 * (trace_watch.c); the child's stdin, stdout and stderr are ours, so its
 * output reaches mpirun the way ours does.
 *
 * Process layout: the child runs in a session and process group of its
 * own (as torchrun's workers do). Signals meant for the job therefore reach
 * it exactly once: mpirun, srun and a terminal's Ctrl-C signal our process
 * group, not the child's, and the collector forwards each signal to the
 * child's whole group (its DataLoader workers too, as a terminal would).
 * Reads from a terminal still work (it is no longer the child's controlling
 * terminal, so there is no job-control stop); /dev/tty cannot be opened.
 * The child is killed (SIGKILL) if the collector dies, so a killed rank
 * leaves no orphan training process. */
#ifndef COL_CHILD_H
#define COL_CHILD_H

#include <sys/types.h>

#include "common/err.h"

struct col_child;   /* opaque */

/* Signals.
 * The collector's handlers for the signals it forwards: SIGINT, SIGTERM,
 * SIGHUP, SIGQUIT (requests to stop) and SIGUSR1, SIGUSR2 (e.g. Slurm's
 * warning before a time limit; forward only). A signal that was ignored
 * when the collector started (nohup) stays ignored, for the child too.
 * The handlers live in process-wide state (handlers get no user pointer);
 * this is the collector's one global. */

/* Installs the handlers (once; later calls return the same fd) and returns
 * a non-blocking fd that is readable while signals are pending, or a
 * negative HM_E* code. Do not read the fd; call col_signals_take. */
int col_signals_install(void);

/* Returns the next pending signal number, in arrival order, or 0 if none. */
int col_signals_take(void);

/* Lifecycle. */

/* Starts argv[0] with arguments argv[1..] and environment envp (NULL:
 * environ); argv and envp are only read. A name ending in ".py" runs as
 * `$HTAMERGE_PYTHON argv...` (HTAMERGE_PYTHON taken from envp, default
 * python3). Otherwise execvp rules: a name without '/' is searched in PATH
 * (envp's PATH, else ours, else /bin:/usr/bin); a file without a #! line
 * runs under /bin/sh. Everything that can go wrong before the program runs
 * (not found, not executable, a directory, no interpreter) is returned here
 * as HM_EIO with err->msg "cannot run 'NAME': REASON", never as a child
 * exit. Returns the child (owned: col_child_free) or NULL. Call it from the
 * main thread: the kill-on-exit tie is to the calling thread. */
struct col_child *col_child_spawn(char *const argv[], char *const envp[], struct hm_err *err);

/* Kills (SIGKILL to its group) and reaps the child if it was not reaped
 * yet, closes its fd and frees c. NULL does nothing. */
void col_child_free(struct col_child *c);

/* Supervision. */

/* An fd that becomes readable (POLLIN) when the child exits: a pidfd, or on
 * kernels without pidfd_open a SIGCHLD self-pipe shared by all children.
 * Owned by c; valid until col_child_free. Take it out of the poll set once
 * col_child_reap returned 1. */
int col_child_fd(const struct col_child *c);

/* Non-blocking. Returns 1 and sets *status (a wait status) if the child
 * has exited (again on later calls), 0 if it still runs, or HM_EIO if it
 * cannot be waited for (someone else reaped it). */
int col_child_reap(struct col_child *c, int *status);

/* Sends sig to the child's process group (falling back to the child
 * alone). Does nothing once the child was reaped. */
void col_child_signal(struct col_child *c, int sig);

/* The child's process id (also its process group and session id). */
pid_t col_child_pid(const struct col_child *c);

/* A wait status as a shell exit code: the exit status, or 128 + signal. */
int col_child_exit_code(int wait_status);

#endif

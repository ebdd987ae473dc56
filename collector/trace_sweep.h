/* Trace folders of runs. `htamerge run` gives each run a folder
 * $TMPDIR/htamerge-PID-MS (PID: rank 0's process, MS: the run's start in
 * ms) holding one rank-N folder per rank, and removes it at the end. Ranks
 * killed mid-run cannot, so rank 0 of the next run sweeps the leftovers of
 * ended runs before it makes its own. A live run's ranks touch their copy
 * of the folder every COL_TRACE_TOUCH_S seconds, so its age says when a run
 * (on any host) last lived; --keep-traces marks the folder with a KEEP file,
 * which the sweep never removes. No MPI here. */
#ifndef COL_TRACE_SWEEP_H
#define COL_TRACE_SWEEP_H

/* File inside a run's folder that keeps it from every sweep (--keep-traces). */
#define COL_TRACE_KEEP_MARKER "KEEP"

/* A leftover folder is swept once it is this old (mtime) ... */
#define COL_TRACE_SWEEP_MIN_AGE_S 600
/* ... which a live run's folder never is: its ranks touch it this often. */
#define COL_TRACE_TOUCH_S 60

/* 1 when name is exactly "htamerge-<pid>-<ms>" (decimal, pid > 0), with
 * *pid set; 0 otherwise. */
int col_trace_root_name(const char *name, long *pid);

/* Removes path and everything under it, never following a symbolic link
 * (a link is removed, not what it points to) nor entering another file
 * system. Returns 0, or -1 with errno from the first failure (the rest is
 * still removed where possible). */
int col_trace_remove_tree(const char *path);

/* Removes each folder of dir that is the leftover of an ended run: named
 * htamerge-<pid>-<ms>, a folder itself (not a link to one), owned by the
 * calling user, holding no KEEP file, modified at least min_age_s seconds
 * ago, and whose pid is no process on this host (kill(pid, 0) fails with
 * ESRCH). Returns how many were removed, or -1 when dir cannot be read.
 * A folder it cannot remove whole is not counted (what could go is gone). */
int col_trace_sweep(const char *dir, int min_age_s);

#endif

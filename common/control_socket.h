/* Where a running job's rank 0 listens for `htamerge capture`: a Unix
 * socket per job in a per-user folder of this host, with a note of the
 * file the job writes, so that a second shell finds the job by its file
 * (or as the only one running). Both the job (job/control.c) and the
 * command (cli/cmd_capture.c) use these names. */
#ifndef HM_CONTROL_SOCKET_H
#define HM_CONTROL_SOCKET_H

#include <stddef.h>
#include <sys/types.h>

/* $HTAMERGE_CONTROL_DIR, else ${XDG_RUNTIME_DIR:-${TMPDIR:-/tmp}}/htamerge-UID. */
int hm_control_dir(char *buf, size_t len);
/* DIR/PID.sock and DIR/PID.db (the job's output, absolute). 0, or -1 when
 * the path does not fit (a Unix socket path is short). */
int hm_control_sock_path(char *buf, size_t len, pid_t pid);
int hm_control_note_path(char *buf, size_t len, pid_t pid);

#endif

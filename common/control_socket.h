/* Where a running job's rank 0 listens for `htamerge capture`: a Unix
 * socket per job in a per-user folder of this host, with a note of the
 * file the job writes, so that a second shell finds the job by its file
 * (or as the only one running). Both the job (job/control.c) and the
 * command (cli/cmd_capture.c) use these names. */
#ifndef HM_CONTROL_SOCKET_H
#define HM_CONTROL_SOCKET_H

#include <stddef.h>
#include <sys/types.h>

/* $HTAMERGE_CONTROL_DIR, else ${XDG_RUNTIME_DIR:-${TMPDIR:-/tmp}}/htamerge.UID (not
 * htamerge-*: the run folders of killed runs are swept by that name). */
int hm_control_dir(char *buf, size_t len);
/* DIR/PID.sock and DIR/PID.db (the job's output, absolute). 0, or -1 when
 * the path does not fit (a Unix socket path is short). */
int hm_control_sock_path(char *buf, size_t len, pid_t pid);
int hm_control_note_path(char *buf, size_t len, pid_t pid);

/* Connects to the control socket at path and sends request (one line,
 * '\n'-terminated). The connected fd, or -1 with errno set. */
int hm_control_send(const char *path, const char *request);
/* Reply lines from the job, read one at a time. */
struct hm_control_reader {
    char buf[1024];
    size_t have;
};
/* Reads one reply line ("ok ...", "done ...", "error ...") into line
 * without its newline, waiting up to timeout_ms (< 0: no limit). 1 a line,
 * 0 the job closed the connection, -1 an error or the time ran out (errno
 * ETIMEDOUT). r starts zeroed. */
int hm_control_read_line(int fd, struct hm_control_reader *r, char *line, size_t len, int timeout_ms);

#endif

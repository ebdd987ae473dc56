/* The trace folder watch: reports each completed trace file that appears
 * under HTAMERGE_TRACE_DIR while the job runs, so the collector can parse
 * and stream it at once. It does not read the files (the kineto_json
 * source does); it only says which are complete.
 *
 * A file is complete when a writer closes it (IN_CLOSE_WRITE) or when it is
 * renamed into place (IN_MOVED_TO). Reported names end in ".json" or
 * ".json.gz", do not start with '.', and do not contain ".tmp". Folders
 * created later are watched too, down to 8 levels; a folder renamed into
 * place is scanned whole (its files were finished elsewhere). A path is
 * reported when first found complete, whether by an event or by a scan,
 * and again each time a later close or scan finds it changed (device,
 * inode, size or mtime) since it was last reported: a file written in
 * several rounds (appended and closed, or rewritten under the same name
 * each profiler cycle) is reported once per round, and a close that
 * changed nothing is not reported. Readers must therefore expect a path
 * more than once. */
#ifndef COL_TRACE_WATCH_H
#define COL_TRACE_WATCH_H

#include "common/err.h"

#include <stdint.h>
#include <sys/types.h>

struct col_watch;   /* opaque */

/* What a file looks like now: a rewrite, an append or a cut changes at
 * least one field (the mtime has ns resolution). All zero when the file
 * cannot be stat'ed. */
struct col_file_sig {
    dev_t dev;
    ino_t ino;
    off_t size;
    int64_t mtime_ns;
};
struct col_file_sig col_file_sig_of(const char *path);
int col_file_sig_equal(const struct col_file_sig *a, const struct col_file_sig *b);

/* Lifecycle. */

/* Watches dir, which must exist. Returns the watch (owned:
 * col_watch_free) or NULL after filling err (HM_EIO, with err->file =
 * dir). Files already in dir are not reported by events; col_watch_scan
 * reports them (call col_watch_skip_existing to exclude them instead). */
struct col_watch *col_watch_new(const char *dir, struct hm_err *err);

/* Frees w and its queue. NULL does nothing. */
void col_watch_free(struct col_watch *w);

/* Watching. */

/* An fd (inotify, non-blocking) that is readable when there may be news;
 * owned by w. On POLLIN call col_watch_next until it returns 0 (and every
 * second or so anyway when polling: col_watch_polling). */
int col_watch_fd(const struct col_watch *w);

/* Returns 1 and sets *path to the next completed trace file (full path,
 * owned by the caller: free()), 0 if there is none now, or HM_EIO if the
 * inotify fd failed. Never blocks. */
int col_watch_next(struct col_watch *w, char **path);

/* Rescans the whole tree and queues every trace file not reported yet or
 * changed since it was reported; returns how many it queued (fetch them with col_watch_next), or HM_EIO
 * when dir cannot be read. Call it once the child has exited, to catch
 * what events missed: files written before the watch started, or while
 * the kernel queue overflowed. A scan cannot tell whether a file is still
 * being written, so do not call it while the child runs. */
int col_watch_scan(struct col_watch *w);

/* Marks every trace file present now as reported, so that neither events
 * nor scans report it unless it is written again (a folder that holds an
 * earlier run's traces).
 * Returns how many it marked, or HM_EIO. */
int col_watch_skip_existing(struct col_watch *w);

/* Reports path, a completed trace file anywhere (the program said it wrote
 * it: HM_RING_TRACE_FILE), through col_watch_next like the files found in
 * dir, under the same rule: queued when new or changed since it was last
 * reported. Nothing here writes, moves or removes it. Returns 1 if queued,
 * 0 if not, or HM_ENOMEM. */
int col_watch_add(struct col_watch *w, const char *path);

/* NULL while inotify watches the tree; else why it could not (its
 * per-user instances or watches used up: 128 instances by default, so 128
 * ranks on one host), and the tree is scanned every second instead: a file
 * is reported once two scans found it unchanged, which a file written with
 * a pause of a second could fool (its reader refuses the half, and reads
 * it again once it changes). col_watch_fd is then -1. */
const char *col_watch_polling(const struct col_watch *w);

/* True once the kernel's event queue overflowed: some files may only be
 * found by col_watch_scan. After an overflow col_watch_next re-adds
 * watches for folders it missed, but does not report their files. */
int col_watch_overflowed(const struct col_watch *w);

#endif

/* Early writeback of a fresh load's temporary file (issue 21).
 *
 * A fresh load is published by fsync and rename (writer.c, publish), and
 * with journal_mode OFF nothing is synced before that: the kernel held the
 * whole file dirty, and the closing fsync wrote it out while nothing else
 * ran (0.66 s for the 1.6 GB file of 64 x 55 MB of traces on this VM's
 * disk). So, as the file grows, the writer asks the kernel to start
 * writing what is there (sync_file_range, SYNC_FILE_RANGE_WRITE: it
 * starts the writes and does not wait for them), every WB_STEP bytes; the
 * closing fsync then finds little left. Pages written again later (the
 * right edges of the B-trees) are simply dirty again: the fsync still
 * covers everything, so durability is what it was.
 *
 * Best effort: a file system without sync_file_range, or a failure, only
 * leaves the work to the fsync. In-place files (live, reopened) are synced
 * by SQLite's own commits and are left alone. */
#include "store/writer_int.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#define WB_STEP ((off_t)64 << 20)

void wr_writeback(struct mrg_writer *w)
{
    struct stat sb;

    if (w->state != WR_FRESH || !w->tmp_path || w->wb_fd == -2)
        return;
    if (w->wb_fd < 0 && (w->wb_fd = open(w->tmp_path, O_RDONLY | O_CLOEXEC)) < 0) {
        w->wb_fd = -2; /* never again */
        return;
    }
    if (fstat(w->wb_fd, &sb) != 0 || sb.st_size < w->wb_size + WB_STEP)
        return;
    w->wb_size = sb.st_size;
    if (sync_file_range(w->wb_fd, 0, 0, SYNC_FILE_RANGE_WRITE) != 0)
        wr_writeback_close(w);
}

void wr_writeback_close(struct mrg_writer *w)
{
    if (w->wb_fd >= 0)
        close(w->wb_fd);
    w->wb_fd = -2;
}

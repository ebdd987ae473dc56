/* The job loop, the only place that knows both the collector and the
 * merger: each turn collects, moves batches (to the merger on rank 0, over
 * MPI to rank 0 elsewhere) and lets the merger step, until this rank may
 * leave. */
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "collector/rank.h"
#include "common/capture_plan.h"
#include "common/monotime.h"
#include "collector/trace_sweep.h"
#include "collector/transport.h"
#include "job_int.h"
#include "merger/live.h"

/* One turn: collect, move batches, talk to the merger. Returns 1 when this
 * rank may leave, 0 to go on, < 0 on a failure (err filled). */
static int turn(struct job_loop *L, struct hm_err *err)
{
    struct hm_batch *b;
    int rc = 0, fin = 0, all_done = 0;

    if (L->col) {
        int sig = col_rank_poll(L->col, 5);
        if (sig && !L->signal)
            L->signal = sig;
        /* A peer takes no more batches while its unsent bytes are high:
         * the parser then stalls too, bounding memory end to end. */
        while (rc == 0 && (L->rank == 0 || col_link_backlog(L->link) < COL_LINK_MAX_BACKLOG) &&
               (b = col_rank_take(L->col)))
            rc = L->rank == 0 ? mrg_live_local(L->mrg, b, err) : col_link_queue(L->link, b, err);
        if (!L->child_done && col_rank_finished(L->col, &L->exit_code))
            L->child_done = 1;
    } else {
        usleep(5000);
        L->child_done = 1;
    }
    if (rc)
        return rc;
    if (L->rank == 0) {
        job_control_tick(L->ctl, L->col, mrg_live_write_rate(L->mrg));
        if (L->child_done) {
            struct col_rank_stats st = {0};
            if (L->col)
                col_rank_stats(L->col, &st);
            mrg_live_local_done(L->mrg, L->exit_code, st.watch_polling);
        }
        rc = mrg_live_step(L->mrg, &all_done, err);
        return rc ? rc : (L->child_done && all_done);
    }
    rc = col_link_step(L->link, &fin, err);
    struct hm_capture_plan plan;
    if (col_link_take_plan(L->link, &plan))
        col_rank_set_plan(L->col, &plan);
    struct hm_capture_progress pr;
    if (rc == 0 && L->col && !L->child_done && col_rank_progress(L->col, &pr) == 0)
        rc = col_link_progress(L->link, pr.step_now, pr.step_ns, hm_mono_ns(), err);
    if (rc == 0 && L->child_done) {
        struct hm_msg_done d = {.exit_code = L->exit_code, .spawn_failed = L->col == NULL};
        struct col_rank_stats st = {0};
        if (L->col)
            col_rank_stats(L->col, &st);
        d.files = st.files;
        d.files_failed = st.files_failed;
        d.batches = st.batches;
        d.watch_polling = st.watch_polling;
        rc = col_link_done(L->link, &d, err) < 0 ? err->code : 0;
    }
    return rc ? rc : fin;
}

/* Keeps the run folder's mtime recent while this rank lives, so another
 * run's sweep, which cannot see this run's processes from another host,
 * leaves it alone (trace_sweep.h). */
static void touch_trace_root(struct job_loop *L)
{
    time_t now = time(NULL);

    if (now - L->touched < COL_TRACE_TOUCH_S)
        return;
    L->touched = now;
    utimensat(AT_FDCWD, L->trace_root, NULL, 0);
}

int job_loop_run(struct job_loop *L, struct hm_err *err)
{
    int rc;
    while ((rc = turn(L, err)) == 0 && !(L->signal && L->rank == 0))
        touch_trace_root(L);
    return rc < 0 ? rc : 0;
}

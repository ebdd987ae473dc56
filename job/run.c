/* The main job on one rank: MPI start, rank 0's plan, the merger (rank 0)
 * or the link to it (other ranks), the --serve child, the loop, and the
 * end: the file's last line, trace folders, and how the rank leaves (a stop
 * signal or a failure ends the job at once; otherwise MPI_Finalize, then
 * the finished file is served for --serve-linger). */
#include "run.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "collector/rank.h"
#include "collector/transport.h"
#include "job_int.h"
#include "merger/live.h"

/* Tells the injection library which live sources to run (the flag wins
 * over an inherited HTAMERGE_CAPTURE, since the user just typed it). */
static void export_capture(unsigned cap)
{
    char list[80] = "";
    if (cap & JOB_CAP_CUPTI)
        strcat(list, cap & JOB_CAP_CUPTI_SYNC ? "cupti,cupti-sync," : "cupti,");
    if (cap & JOB_CAP_CUPTI_RANGE)
        strcat(list, "cupti-range,");
    if (cap & JOB_CAP_CUPTI_LAUNCHES)
        strcat(list, "cupti-launches,");
    if (cap & JOB_CAP_NVTX)
        strcat(list, "nvtx,");
    if (cap & JOB_CAP_NCCL)
        strcat(list, "nccl,");
    if (list[0])
        list[strlen(list) - 1] = '\0';
    setenv("HTAMERGE_CAPTURE", list, 1);
}

/* HTAMERGE_STATS=1: the collector's own CPU time (not its child's), for
 * the overhead benchmark. */
static void print_stats(int rank, struct col_rank *col)
{
    struct rusage ru;
    struct col_rank_stats st = {0};

    getrusage(RUSAGE_SELF, &ru);
    if (col)
        col_rank_stats(col, &st);
    fprintf(stderr, "htamerge-stats: rank %d cpu_user_s %.3f cpu_sys_s %.3f files %lld batches %lld\n", rank,
            ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6, ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6,
            (long long)st.files, (long long)st.batches);
}

/* A rank's exit status. The programs' statuses come first: mpirun reports
 * the first non-zero one, so rank 0 adds nothing of its own when any
 * rank's program failed. Otherwise rank 0, which alone knows, exits
 * JOB_EXIT_PARTIAL when trace files were refused, as ingest does: the
 * file lacks their data, and a script should not take it for whole. */
static int run_exit_status(const struct job_loop *L, const struct mrg_live_result *res)
{
    if (L->exit_code || L->rank != 0 || res->job_exit)
        return L->exit_code;
    return res->files_refused > 0 ? JOB_EXIT_PARTIAL : JOB_EXIT_OK;
}

/* Rank 0's last line: the file, and what it lacks. */
static void say_written(const char *output, int size, int complete, const struct mrg_live_result *res)
{
    char refused[PATH_MAX + 128] = "";

    if (res->files_refused > 0)
        snprintf(refused, sizeof refused, "; %lld trace file%s refused: see `htamerge report %s summary`",
                 (long long)res->files_refused, res->files_refused == 1 ? "" : "s", output);
    fprintf(stderr, "htamerge: wrote %s (%d ranks, run %s%s)\n", output, size,
            complete ? "complete" : "incomplete", refused);
}

/* Ends a rank that cannot end normally. A stop signal on rank 0: the job
 * is being torn down; what we have is written; do not wait in
 * MPI_Finalize for ranks that may be gone. A failure (e.g. the disk is
 * full): this rank cannot go on, and its peers would wait in MPI_Finalize
 * for it, or for rank 0's goodbye, forever; what rank 0 could write is
 * written; end the job. Returns when neither applies. */
static void end_early(const struct job_loop *L, int rc, pid_t server)
{
    if (L->signal && L->rank == 0) {
        if (server > 0)
            kill(server, SIGTERM);
        fflush(NULL);
        _exit(128 + L->signal);
    }
    if (rc) {
        if (server > 0)
            kill(server, SIGTERM);
        fflush(NULL);
        MPI_Abort(MPI_COMM_WORLD, JOB_EXIT_FAIL);
    }
}

/* The environment the children inherit: --capture and --cupti-window win
 * over inherited values, since the user just typed them. */
static void export_env(const struct job_run_opts *o)
{
    if (o->capture_set)
        export_capture(o->capture);
    if (o->window)
        setenv("HTAMERGE_CUPTI_WINDOW", o->window, 1);
}

/* Rank 0: the merger, which writes the file while the job runs. */
static void start_merger(struct job_loop *L, const struct job_run_opts *o, const struct hm_clockhook *hook,
                         struct hm_err *err)
{
    char line[1400];
    struct mrg_live_opts mo = {.output = o->output, .command_line = o->command_line,
                               .created_by = "htamerge run",
                               .sync_interval_ms = (int64_t)(o->sync_interval_s * 1000),
                               .analyse = 1, .hook = hook};

    L->mrg = mrg_live_start(&mo, err);
    if (!L->mrg) {
        hm_say("%s", hm_err_line(err, line, sizeof line));
        MPI_Abort(MPI_COMM_WORLD, JOB_EXIT_FAIL);
    }
}

/* Rank 0: the file's last state and line. */
static int finish_merger(struct job_loop *L, const struct job_run_opts *o, int size, int rc,
                         struct mrg_live_result *res, struct hm_err *err)
{
    char line[1400];
    int complete = rc == 0 && !L->signal;

    if (mrg_live_finish(L->mrg, complete, res, err) != 0) {
        hm_say("%s", hm_err_line(err, line, sizeof line));
        return -1;
    }
    say_written(o->output, size, complete, res);
    return rc;
}

int job_run(const struct job_run_opts *o, int argc, char **argv)
{
    struct job_plan plan;
    struct hm_clockhook hook;
    struct job_loop L = {0};
    struct hm_err err;
    char trace_dir[PATH_MAX + 32], line[1400];
    struct mrg_live_result res = {0};
    int size, provided, rc;
    pid_t server = -1;
    MPI_Comm node;

    export_env(o);
    if (hm_clockhook_load(&hook) != 0) {
        hm_say("malformed HTAMERGE_CLOCK_SKEW_NS, _DRIFT_PPM, _JUMP_NS or _JUMP_AFTER_MS");
        return JOB_EXIT_USAGE;
    }
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &L.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    if (L.rank == 0) {
        job_warn_if_bound_to_one_cpu();
        job_sweep_leftovers();
        job_make_plan(&plan, &hook);
    }
    MPI_Bcast(&plan, sizeof plan, MPI_BYTE, 0, MPI_COMM_WORLD);
    L.trace_root = plan.trace_root;
    L.touched = time(NULL);
    hm_err_clear(&err);
    if (L.rank == 0)
        start_merger(&L, o, &hook, &err);
    else
        L.link = col_link_new(&hook, &err);
    if (L.rank == 0 && o->serve)
        server = job_start_server(o->output, o->serve);
    job_start_rank(&L, o, &plan, size, node, &hook, trace_dir, sizeof trace_dir);
    if (L.rank == 0)
        L.ctl = job_control_start(o, size, o->output);
    rc = job_loop_run(&L, &err);
    job_control_free(L.ctl);
    L.ctl = NULL;
    if (rc)
        hm_say("rank %d: %s", L.rank, hm_err_line(&err, line, sizeof line));
    if (L.rank == 0)
        rc = finish_merger(&L, o, size, rc, &res, &err);
    if (getenv("HTAMERGE_STATS"))
        print_stats(L.rank, L.col);
    col_rank_free(L.col);
    col_link_free(L.link);
    if (o->keep_traces)
        fprintf(stderr, "htamerge: rank %d traces kept in %s\n", L.rank, trace_dir);
    else
        job_remove_traces(trace_dir, plan.trace_root);
    end_early(&L, rc, server);
    MPI_Comm_free(&node);
    MPI_Finalize();
    if (server > 0)
        job_wait_server(server, o->serve, o->serve_linger_s);
    if (rc)
        return JOB_EXIT_FAIL;
    return run_exit_status(&L, &res);
}

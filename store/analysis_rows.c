/* Analysis rows and dimension tables: one rank's HTA results (a_* tables
 * and the step columns of `steps`), and the rows of strings, ranks, tracks,
 * files and skipped that the writer keeps in memory until a commit,
 * flush or _finish writes them. Both are rows computed elsewhere and
 * stored whole, replacing what was there. */
#include "store/writer_int.h"

#include <stdio.h>
#include <string.h>

/* --- Analysis results ----------------------------------------------------- */

static void bind_key(sqlite3_stmt *st, const char *mode, int rank)
{
    sqlite3_bind_text(st, 1, mode, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 2, rank);
}

/* Per-rank rows: temporal, overlap, kernel classes and labels. */
static int analysis_rank_rows(struct mrg_writer *w, const struct an_rank_result *r,
                              const char *mode, struct hm_err *err)
{
    int rc;
    sqlite3_stmt *st = w->st[ST_A_TEMPORAL];
    const struct an_temporal *t = &r->temporal;

    bind_key(st, mode, r->rank);
    sqlite3_bind_int(st, 3, r->has_gpu ? 1 : 0);
    sqlite3_bind_int64(st, 4, t->idle_us);
    sqlite3_bind_int64(st, 5, t->compute_us);
    sqlite3_bind_int64(st, 6, t->non_compute_us);
    sqlite3_bind_int64(st, 7, t->kernel_us);
    wr_bind_real(st, 8, t->idle_pct);
    wr_bind_real(st, 9, t->compute_pct);
    wr_bind_real(st, 10, t->non_compute_pct);
    if ((rc = wr_step(w, st, err, "storing a_temporal")))
        return rc;
    st = w->st[ST_A_OVERLAP];
    bind_key(st, mode, r->rank);
    sqlite3_bind_int64(st, 3, r->overlap.comm_us);
    sqlite3_bind_int64(st, 4, r->overlap.overlap_us);
    wr_bind_real(st, 5, r->overlap.overlap_pct);
    if ((rc = wr_step(w, st, err, "storing a_overlap")))
        return rc;
    st = w->st[ST_A_KCLASS];
    for (int k = 0; k < AN_KCLASS__COUNT; k++) {
        bind_key(st, mode, r->rank);
        sqlite3_bind_text(st, 3, an_kclass_name((enum an_kclass)k), -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 4, r->kclass_us[k]);
        sqlite3_bind_int64(st, 5, r->comp_overlap_comm_us);
        if ((rc = wr_step(w, st, err, "storing a_kernel_class")))
            return rc;
    }
    st = w->st[ST_A_KLABEL];
    for (int m = 1; m < (int)(sizeof r->label_us / sizeof *r->label_us); m++) {
        bind_key(st, mode, r->rank);
        sqlite3_bind_text(st, 3, an_label_name(m), -1, SQLITE_STATIC);
        sqlite3_bind_int(st, 4, m);
        sqlite3_bind_int64(st, 5, r->label_us[m]);
        if ((rc = wr_step(w, st, err, "storing a_kernel_labels")))
            return rc;
    }
    return 0;
}

/* Per-stream and per-kernel rows. */
static int analysis_list_rows(struct mrg_writer *w, const struct an_rank_result *r,
                              const char *mode, struct hm_err *err)
{
    int rc;
    sqlite3_stmt *st = w->st[ST_A_IDLE];

    for (size_t i = 0; i < r->idle.n; i++) {
        const struct an_idle *d = &r->idle.v[i];
        bind_key(st, mode, r->rank);
        sqlite3_bind_int64(st, 3, d->stream);
        sqlite3_bind_int64(st, 4, d->host_wait_us);
        sqlite3_bind_int64(st, 5, d->kernel_wait_us);
        sqlite3_bind_int64(st, 6, d->other_us);
        if ((rc = wr_step(w, st, err, "storing a_idle")))
            return rc;
    }
    st = w->st[ST_A_KERNEL];
    for (size_t i = 0; i < r->kernels.n; i++) {
        const struct an_kernel *k = &r->kernels.v[i];
        bind_key(st, mode, r->rank);
        wr_bind_sid(st, 3, k->name ? wr_intern(w, k->name, strlen(k->name)) : 0);
        sqlite3_bind_text(st, 4, an_kclass_name((enum an_kclass)k->kclass), -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 5, k->count);
        sqlite3_bind_int64(st, 6, k->sum_us);
        sqlite3_bind_int64(st, 7, k->min_us);
        sqlite3_bind_int64(st, 8, k->max_us);
        wr_bind_real(st, 9, k->mean_us);
        wr_bind_real(st, 10, k->std_us);
        if ((rc = wr_step(w, st, err, "storing a_kernels")))
            return rc;
    }
    return 0;
}

/* Step analysis into `steps` (mode hta only), times aligned like the
 * rank's batches (its explicit base, else its first batch's). */
static int analysis_steps(struct mrg_writer *w, const struct an_rank_result *r,
                          struct hm_err *err)
{
    int rc;
    sqlite3_stmt *st = w->st[ST_A_STEP];
    struct bctx c = {.r = &w->ranks[r->rank], .rank = r->rank};

    c.base = c.r->clk.base_ns != HM_NONE ? c.r->clk.base_ns
             : c.r->base_seen != HM_NONE ? c.r->base_seen : 0;
    for (size_t i = 0; i < r->steps.n; i++) {
        const struct an_step *s = &r->steps.v[i];
        int64_t ts = wr_align_ts(&c, s->ts_ns);
        sqlite3_bind_int(st, 1, r->rank);
        sqlite3_bind_int64(st, 2, s->number);
        sqlite3_bind_int64(st, 3, ts);
        sqlite3_bind_int64(st, 4, wr_align_ts(&c, hm_add_wrap(s->ts_ns, s->dur_ns)) - ts);
        sqlite3_bind_int64(st, 5, s->gpu_busy_us);
        sqlite3_bind_int64(st, 6, s->kernel_count);
        sqlite3_bind_int(st, 7, s->dropped ? 1 : 0);
        sqlite3_bind_text(st, 8, hm_step_source_name(s->source), -1, SQLITE_STATIC);
        if ((rc = wr_step(w, st, err, "storing a step's analysis")))
            return rc;
    }
    return 0;
}

int mrg_writer_add_analysis(struct mrg_writer *w, const struct an_rank_result *r,
                            const char *mode, struct hm_err *err)
{
    int rc;

    if (!mode)
        mode = "hta";
    if ((rc = wr_check_rank(w, r->rank, err)))
        return rc;
    if (strcmp(mode, "hta") != 0 && strcmp(mode, "all_steps") != 0)
        return wr_refuse(w, err, HM_EINVAL, r->rank, "analysis mode must be hta or all_steps");
    for (int s = ST_DEL_TEMPORAL; s <= ST_DEL_KERNEL && rc == 0; s++) {
        bind_key(w->st[s], mode, r->rank);
        rc = wr_step(w, w->st[s], err, "replacing analysis rows");
    }
    if (rc == 0)
        rc = analysis_rank_rows(w, r, mode, err);
    if (rc == 0)
        rc = analysis_list_rows(w, r, mode, err);
    if (rc == 0 && strcmp(mode, "hta") == 0)
        rc = analysis_steps(w, r, err);
    if (rc == 0)
        rc = wr_usable(w, err);   /* a kernel name that could not be interned */
    if (rc && err)
        err->rank = r->rank;
    return rc;
}

/* --- Dimension tables ---------------------------------------------------- */

static int write_strings(struct mrg_writer *w, struct hm_err *err)
{
    int rc;
    sqlite3_stmt *st = w->st[ST_STRING];
    uint32_t n = hm_strtab_count(w->strings);

    for (uint32_t id = w->strings_written ? w->strings_written : 1; id < n; id++) {
        size_t len;
        const char *s = hm_strtab_get(w->strings, id, &len);
        sqlite3_bind_int64(st, 1, id);
        sqlite3_bind_text64(st, 2, s, len, SQLITE_STATIC, SQLITE_UTF8);
        if ((rc = wr_step(w, st, err, "storing strings")))
            return rc;
    }
    w->strings_written = n;
    return 0;
}

static int write_rank_row(struct mrg_writer *w, int rank, const struct rank_state *r,
                          struct hm_err *err)
{
    sqlite3_stmt *st = w->st[ST_RANK];
    const struct hm_strtab *t = w->strings;
    int64_t base = r->clk.base_ns != HM_NONE ? r->clk.base_ns : r->base_seen;
    const char *method = r->clk.set ? r->clk.method : base != HM_NONE ? "base_time" : "none";

    sqlite3_bind_int(st, 1, rank);
    wr_bind_str(st, 2, t, r->host);
    wr_bind_opt(st, 3, r->pid);
    wr_bind_opt(st, 4, r->world_size);
    wr_bind_str(st, 5, t, r->backend);
    wr_bind_str(st, 6, t, r->rank_source);
    wr_bind_opt(st, 7, base);
    sqlite3_bind_int64(st, 8, r->clk.offset_ns);
    sqlite3_bind_double(st, 9, r->clk.drift_ppm);
    sqlite3_bind_int64(st, 10, r->clk.ref_ns);
    sqlite3_bind_text(st, 11, method, -1, SQLITE_STATIC);
    wr_bind_opt(st, 12, r->clk.uncertainty_ns);
    sqlite3_bind_int(st, 13, r->complete >= 0 ? r->complete : r->batches > 0);
    sqlite3_bind_int64(st, 14, (int64_t)r->batches);
    wr_bind_str(st, 15, t, r->pg_config);
    wr_bind_str(st, 16, t, r->device_props);
    wr_bind_str(st, 17, t, r->nccl_version);
    wr_bind_str(st, 18, t, r->trace_meta);
    sqlite3_bind_int64(st, 19, r->trace_flags);
    int rc = wr_step(w, st, err, "storing a rank");
    if (rc)
        return rc;
    /* Apart from the row's statement, which files older than the step
     * columns can take (only live runs repair a step). */
    if (r->clk.step_ns) {
        char sql[160];
        snprintf(sql, sizeof sql, "UPDATE ranks SET clock_step_ns = %lld, clock_step_at_ns = %lld WHERE rank = %d",
                 (long long)r->clk.step_ns, (long long)r->clk.step_at_ns, rank);
        return wr_exec(w, sql, err, "storing a clock step");
    }
    return 0;
}

static int write_tracks(struct mrg_writer *w, int rank, const struct rank_state *r,
                        struct hm_err *err)
{
    int rc;
    sqlite3_stmt *st = w->st[ST_TRACK];

    for (size_t i = 0; i < r->tracks.n; i++) {
        const struct rank_track *t = &r->tracks.v[i];
        sqlite3_bind_int64(st, 1, t->id);
        sqlite3_bind_int(st, 2, rank);
        sqlite3_bind_text(st, 3, t->kind == HM_TRACK_GPU_STREAM ? "gpu_stream" : "cpu_thread", -1,
                          SQLITE_STATIC);
        sqlite3_bind_int64(st, 4, t->pid);
        sqlite3_bind_int64(st, 5, t->tid);
        wr_bind_sid(st, 6, t->name);
        if ((rc = wr_step(w, st, err, "storing a track")))
            return rc;
    }
    return 0;
}

/* The rank's slice count, so that summaries need not count the slices
 * (a scan of the whole table on a large file). */
static int write_rank_slices(struct mrg_writer *w, int rank, const struct rank_state *r, struct hm_err *err)
{
    sqlite3_stmt *st = w->st[ST_RANK_SLICES];

    sqlite3_bind_int(st, 1, rank);
    sqlite3_bind_int64(st, 2, (int64_t)r->slices);
    return wr_step(w, st, err, "storing a rank's slice count");
}

static int write_files(struct mrg_writer *w, int rank, const struct rank_state *r,
                       struct hm_err *err)
{
    int rc;
    for (size_t i = 0; i < r->files.n; i++) {
        const struct rank_file *f = &r->files.v[i];
        sqlite3_stmt *st = w->st[ST_FILE];
        if (f->path) {
            sqlite3_bind_int(st, 1, rank);
            wr_bind_str(st, 2, w->strings, f->path);
            sqlite3_bind_int64(st, 3, (int64_t)f->batches);
            sqlite3_bind_int64(st, 4, (int64_t)f->slices);
            if ((rc = wr_step(w, st, err, "storing a file")))
                return rc;
        }
        st = w->st[ST_SKIPPED];
        for (int k = 0; k < HM_SKIP__COUNT; k++) {
            if (!f->skipped[k])
                continue;
            sqlite3_bind_int(st, 1, rank);
            wr_bind_str(st, 2, w->strings, f->path);
            sqlite3_bind_text(st, 3, hm_skip_name((enum hm_skip_reason)k), -1, SQLITE_STATIC);
            sqlite3_bind_int64(st, 4, (int64_t)f->skipped[k]);
            if ((rc = wr_step(w, st, err, "storing skipped counts")))
                return rc;
        }
    }
    return 0;
}

/* Strings (new ones only) and one rank's row and tracks: what reading the
 * rank back joins on, at a cost that does not grow with the ranks. */
int wr_write_rank_dimensions(struct mrg_writer *w, int rank, struct hm_err *err)
{
    int rc;

    if (w->state == WR_REOPENED)
        return 0;
    rc = write_strings(w, err);
    if (rc == 0)
        rc = write_rank_row(w, rank, &w->ranks[rank], err);
    return rc ? rc : write_tracks(w, rank, &w->ranks[rank], err);
}

/* Strings (new ones only), ranks and tracks (rewritten: their names and
 * clocks may change). files: also the per-file rows,
 * which are written once, at the end. */
int wr_write_dimensions(struct mrg_writer *w, int files, struct hm_err *err)
{
    int rc;

    /* A reopened file's dimension rows are already stored and w knows none
     * of them (its strings, ranks and tracks start empty): writing w's
     * state would replace rows with blanks. This also drops the clock
     * summaries a re-analysis passes to _update_clock: the data keeps the
     * clocks it was aligned with. */
    if (w->state == WR_REOPENED)
        return 0;
    rc = write_strings(w, err);

    for (int rank = 0; rank < w->nranks && rc == 0; rank++) {
        const struct rank_state *r = &w->ranks[rank];
        if (!r->known)
            continue;
        rc = write_rank_row(w, rank, r, err);
        if (rc == 0)
            rc = write_tracks(w, rank, r, err);
        if (rc == 0 && files)
            rc = write_files(w, rank, r, err);
        if (rc == 0 && files)
            rc = write_rank_slices(w, rank, r, err);
    }
    return rc;
}

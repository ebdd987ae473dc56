/* Per-rank state and time alignment: what the writer knows of each rank
 * (clock, shift, facts from its batches, its files) until _finish writes
 * it as rows of ranks, tracks, files and skipped (analysis_rows.c), and
 * the mapping of a rank's raw times onto the aligned clock. Kept in memory
 * because batches update it cheaply and often. */
#include "store/writer_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Returns the state of rank, creating it; NULL when out of memory. */
struct rank_state *wr_rank_get(struct mrg_writer *w, int rank)
{
    struct rank_state *r;

    if (rank >= w->nranks) {
        int n = w->nranks ? w->nranks : 8;
        while (n <= rank)
            n *= 2;
        r = realloc(w->ranks, (size_t)n * sizeof *r);
        if (!r)
            return NULL;
        memset(r + w->nranks, 0, (size_t)(n - w->nranks) * sizeof *r);
        w->ranks = r;
        w->nranks = n;
    }
    r = &w->ranks[rank];
    if (!r->known) {
        r->known = 1;
        r->complete = -1;
        r->base_seen = HM_NONE;
        r->pid = HM_NONE;
        r->world_size = HM_NONE;
        r->clk.base_ns = HM_NONE;
        r->clk.uncertainty_ns = HM_NONE;
    }
    return r;
}

int wr_check_rank(struct mrg_writer *w, int rank, struct hm_err *err)
{
    char msg[96];
    int rc = wr_usable(w, err);

    if (rc)
        return rc;
    /* A reopened file's ranks live only in its rows, not in w->ranks, so
     * adding to them here would write rows that clobber the stored ones. */
    if (w->state == WR_REOPENED)
        return wr_refuse(w, err, HM_EINVAL, rank, "a reopened database takes analyses only");
    if (rank < 0 || rank >= RANK_MAX) {
        snprintf(msg, sizeof msg, "rank %d out of range [0, %d)", rank, RANK_MAX);
        return wr_refuse(w, err, HM_EINVAL, rank, msg);
    }
    if (!wr_rank_get(w, rank))
        return wr_refuse(w, err, HM_ENOMEM, rank, "out of memory");
    return 0;
}

static int valid_method(const char *m)
{
    return m && (!strcmp(m, "base_time") || !strcmp(m, "none") || !strcmp(m, "mpi") ||
                 !strcmp(m, "collectives"));
}

int mrg_writer_set_clock(struct mrg_writer *w, int rank, int64_t base_ns, int64_t offset_ns,
                         double drift_ppm, int64_t ref_ns, const char *method,
                         int64_t uncertainty_ns, struct hm_err *err)
{
    struct rank_clock *c;
    int rc = wr_check_rank(w, rank, err);

    if (rc)
        return rc;
    if (!valid_method(method) || !isfinite(drift_ppm))
        return wr_refuse(w, err, HM_EINVAL, rank, "clock method must be base_time, none, mpi or "
                    "collectives, with a finite drift");
    if (w->ranks[rank].batches)
        return wr_refuse(w, err, HM_EINVAL, rank, "clock set after the rank's first batch");
    c = &w->ranks[rank].clk;
    c->set = 1;
    c->base_ns = base_ns;
    c->offset_ns = offset_ns;
    c->drift_ppm = drift_ppm;
    c->ref_ns = ref_ns;
    c->uncertainty_ns = uncertainty_ns;
    snprintf(c->method, sizeof c->method, "%s", method);
    return 0;
}

int mrg_writer_set_time_shift(struct mrg_writer *w, int rank, int64_t shift_ns, struct hm_err *err)
{
    int rc = wr_check_rank(w, rank, err);

    if (rc)
        return rc;
    if (w->ranks[rank].batches)
        return wr_refuse(w, err, HM_EINVAL, rank, "time shift set after the rank's first batch");
    w->ranks[rank].shift_ns = shift_ns;
    return 0;
}

int64_t mrg_writer_time_shift(const struct mrg_writer *w, int rank)
{
    return rank >= 0 && rank < w->nranks && w->ranks[rank].known ? w->ranks[rank].shift_ns : 0;
}

int mrg_writer_set_rank_complete(struct mrg_writer *w, int rank, int complete,
                                 struct hm_err *err)
{
    int rc = wr_check_rank(w, rank, err);

    if (rc == 0)
        w->ranks[rank].complete = complete ? 1 : 0;
    return rc;
}

int mrg_writer_set_clock_step(struct mrg_writer *w, int rank, int64_t step_ns, int64_t step_at_ns,
                              struct hm_err *err)
{
    struct rank_state *r = wr_rank_get(w, rank);

    if (!r)
        return wr_refuse(w, err, HM_ENOMEM, rank, "out of memory");
    r->clk.step_ns = step_ns;
    r->clk.step_at_ns = step_at_ns;
    return 0;
}

int mrg_writer_update_clock(struct mrg_writer *w, int rank, int64_t offset_ns, double drift_ppm,
                            int64_t ref_ns, const char *method, int64_t uncertainty_ns,
                            struct hm_err *err)
{
    struct rank_state *r;

    if (!valid_method(method))
        return wr_refuse(w, err, HM_EINVAL, rank, "unknown clock method");
    r = wr_rank_get(w, rank);
    if (!r)
        return wr_refuse(w, err, HM_ENOMEM, rank, "out of memory");
    r->clk.set = 1;
    r->clk.offset_ns = offset_ns;
    r->clk.drift_ppm = drift_ppm;
    r->clk.ref_ns = ref_ns;
    r->clk.uncertainty_ns = uncertainty_ns;
    snprintf(r->clk.method, sizeof r->clk.method, "%s", method);
    return 0;
}

/* The aligned time of raw on the batch's rank clock. */
int64_t wr_align_ts(const struct bctx *c, int64_t raw)
{
    const struct rank_clock *k = &c->r->clk;
    int64_t t = hm_add_wrap(hm_add_wrap(raw, c->base), k->offset_ns);

    if (k->drift_ppm != 0.0)
        t = hm_add_wrap(t, (int64_t)(k->drift_ppm * 1e-6 * (double)hm_add_wrap(raw, -k->ref_ns)));
    return hm_add_wrap(t, c->r->shift_ns);
}

/* Folds the batch's rank info into the rank: first known value wins. */
void wr_merge_info(struct mrg_writer *w, struct bctx *c)
{
    const struct hm_rank_info *in = &c->b->info;
    struct rank_state *r = c->r;

    if (r->pid == HM_NONE)
        r->pid = in->pid;
    if (r->world_size == HM_NONE)
        r->world_size = in->world_size;
    if (r->base_seen == HM_NONE)
        r->base_seen = in->base_time_ns;
    r->trace_flags |= in->flags;
    wr_keep_sid(&r->host, wr_gstr(w, c->b, in->hostname));
    wr_keep_sid(&r->backend, wr_gstr(w, c->b, in->backend));
    wr_keep_sid(&r->rank_source, wr_gstr(w, c->b, in->rank_source));
    wr_keep_sid(&r->pg_config, wr_gstr(w, c->b, in->pg_config));
    wr_keep_sid(&r->device_props, wr_gstr(w, c->b, in->device_props));
    wr_keep_sid(&r->nccl_version, wr_gstr(w, c->b, in->nccl_version));
    wr_keep_sid(&r->trace_meta, wr_gstr(w, c->b, in->trace_meta));
    r->batches++;
}

/* Counts the batch under its source file, adding its skipped counts. */
int wr_merge_file(struct mrg_writer *w, struct bctx *c)
{
    hm_strid path = wr_gstr(w, c->b, c->b->info.source_file);
    struct rank_file *f = NULL;

    for (size_t i = 0; i < c->r->files.n && !f; i++)
        if (c->r->files.v[i].path == path)
            f = &c->r->files.v[i];
    if (!f) {
        f = HM_VEC_PUSH(c->r->files);
        if (!f)
            return HM_ENOMEM;
        f->path = path;
    }
    f->batches++;
    f->slices += c->b->slices.n;
    for (int k = 0; k < HM_SKIP__COUNT; k++)
        f->skipped[k] += c->b->info.skipped[k];
    return 0;
}

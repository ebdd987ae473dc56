/* Several trace files of one rank (rank_files.h). */
#include "rank_files.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/hta.h"

struct file_print {
    size_t file;
    int rank;
    int joined;          /* stored as a later file of its rank */
    int fractional;      /* HM_INFO_F_FRACTIONAL_TS: HTA rounds to whole us */
    int64_t nslices, first, last, base;
    int64_t *steps;      /* owned: ProfilerStep numbers, sorted */
    size_t nsteps;
};

/* Analyses of a rank of several files made by the reader that read them all. */
struct offer {
    int rank;
    size_t *files;              /* owned: list indices, increasing */
    size_t n;
    struct an_rank_result res[2];
};

struct mrg_rank_files {
    struct file_print *v;
    size_t n, cap;
    struct offer *o;             /* owned */
    size_t no, ocap;
    size_t offered, read_back;   /* ranks finished either way */
};

static int fingerprint(const struct hm_batch *b, size_t i, struct file_print *f)
{
    memset(f, 0, sizeof *f);
    f->file = i;
    f->rank = b->info.rank;
    f->nslices = (int64_t)b->slices.n;
    f->first = INT64_MAX;
    f->last = INT64_MIN;
    f->base = b->info.base_time_ns;
    f->fractional = (b->info.flags & HM_INFO_F_FRACTIONAL_TS) != 0;
    for (size_t k = 0; k < b->slices.n; k++) {
        const struct hm_slice *s = &b->slices.v[k];
        f->first = s->ts < f->first ? s->ts : f->first;
        f->last = s->ts + s->dur > f->last ? s->ts + s->dur : f->last;
    }
    f->steps = malloc((b->steps.n ? b->steps.n : 1) * sizeof *f->steps);
    if (!f->steps)
        return HM_ENOMEM;
    for (size_t k = 0; k < b->steps.n; k++)
        if (b->steps.v[k].source == HM_STEP_PROFILER)
            f->steps[f->nsteps++] = b->steps.v[k].number;
    qsort(f->steps, f->nsteps, sizeof *f->steps, hm_cmp_i64);
    return 0;
}

static struct mrg_rank_files *get(struct mrg_rank_files **rf)
{
    return *rf ? *rf : (*rf = calloc(1, sizeof **rf));
}

static int push(struct mrg_rank_files **rf, struct file_print *f)
{
    struct mrg_rank_files *r = get(rf);

    if (!r)
        return HM_ENOMEM;
    if (hm_vec_reserve((void **)&r->v, &r->cap, r->n + 1, sizeof *r->v))
        return HM_ENOMEM;
    r->v[r->n++] = *f;
    return 0;
}

int mrg_rank_files_note(struct mrg_rank_files **rf, size_t i, const struct hm_batch *b)
{
    struct file_print f;
    int rc = fingerprint(b, i, &f);

    if (rc == 0 && (rc = push(rf, &f)) != 0)
        free(f.steps);
    return rc;
}

/* A ProfilerStep number both have, or INT64_MIN. */
static int64_t common_step(const struct file_print *a, const struct file_print *b)
{
    for (size_t i = 0, j = 0; i < a->nsteps && j < b->nsteps;) {
        if (a->steps[i] == b->steps[j])
            return a->steps[i];
        if (a->steps[i] < b->steps[j])
            i++;
        else
            j++;
    }
    return INT64_MIN;
}

int mrg_rank_files_join(struct mrg_rank_files **rf, size_t i, const struct hm_batch *b, char *const *files,
                        struct hm_err *err)
{
    struct file_print f;
    int rc = fingerprint(b, i, &f);

    if (rc)
        return hm_err_set(err, rc, files[i], -1, "out of memory");
    for (size_t k = 0; *rf && k < (*rf)->n; k++) {
        const struct file_print *o = &(*rf)->v[k];
        int64_t step;
        if (o->rank != f.rank)
            continue;
        step = common_step(o, &f);
        if (step != INT64_MIN || (o->nslices == f.nslices && o->first == f.first && o->last == f.last &&
                                  o->base == f.base)) {
            char what[64];
            if (step != INT64_MIN)
                snprintf(what, sizeof what, "ProfilerStep#%lld", (long long)step);
            else
                snprintf(what, sizeof what, "events");
            free(f.steps);
            return hm_err_set(err, HM_EDUP, files[i], -1,
                              "rank %d is also claimed by %s, with the same %s: the same data twice", f.rank,
                              files[o->file], what);
        }
    }
    f.joined = 1;
    if ((rc = push(rf, &f)) != 0) {
        free(f.steps);
        return hm_err_set(err, rc, files[i], -1, "out of memory");
    }
    return 1;
}

/* Steps of the rank's files other than ProfilerSteps were numbered per
 * file: they are found again over the whole rank. 1 when they are to be
 * found (the rank has no ProfilerSteps), else 0, or a negative error. */
static int renumber_steps(struct mrg_writer *w, struct hm_batch *b, struct hm_err *err)
{
    int profiler = 0, rc;

    for (size_t k = 0; k < b->steps.n; k++)
        profiler |= b->steps.v[k].source == HM_STEP_PROFILER;
    if ((rc = mrg_writer_drop_steps(w, b->info.rank, profiler, err)))
        return rc;
    if (!profiler)
        b->steps.n = 0; /* an_hta_run finds them over the whole rank */
    return profiler ? 0 : 1;
}

/* The rank's files' trace clock: the shift from the stored (aligned) times
 * back to the files' own, which HTA's rounding to whole us needs (0 when
 * the files have no fractional times or different base times). */
static int64_t raw_shift(const struct mrg_rank_files *rf, const struct hm_batch *b, int rank)
{
    int64_t raw = INT64_MAX, stored = INT64_MAX, base = INT64_MIN;
    int frac = 0, same = 1;

    for (size_t k = 0; k < rf->n; k++) {
        const struct file_print *f = &rf->v[k];
        if (f->rank != rank)
            continue;
        frac |= f->fractional;
        same &= base == INT64_MIN || f->base == base;
        base = f->base;
        raw = f->first < raw ? f->first : raw;
    }
    for (size_t k = 0; k < b->slices.n; k++)
        stored = b->slices.v[k].ts < stored ? b->slices.v[k].ts : stored;
    return frac && same && raw != INT64_MAX && stored != INT64_MAX ? stored - raw : 0;
}

static void shift_times(struct hm_batch *b, int64_t d)
{
    for (size_t k = 0; k < b->slices.n; k++)
        b->slices.v[k].ts += d;
    for (size_t k = 0; k < b->steps.n; k++)
        b->steps.v[k].ts += d;
    for (size_t k = 0; k < b->counters.n; k++)
        b->counters.v[k].ts += d;
}

static int reanalyse(const struct mrg_rank_files *rf, struct mrg_writer *w, int rank, struct hm_err *err)
{
    int64_t shift = 0;
    struct an_options modes[2] = {{.all_steps = 0}, {.all_steps = 1}};
    struct an_rank_result res[2];
    struct hm_batch *b = NULL;
    int rc = mrg_writer_load_rank(w, rank, &b, err), found = 0;

    if (rc == HM_EEMPTY)
        return 0;
    if (rc == 0 && (rc = renumber_steps(w, b, err)) == 1) {
        found = 1;
        rc = 0;
    }
    if (rc == 0 && (shift = raw_shift(rf, b, rank)) != 0) {
        shift_times(b, -shift); /* on the files' clock, rounded as HTA does */
        b->info.flags |= HM_INFO_F_FRACTIONAL_TS;
    }
    if (rc == 0)
        rc = an_hta_run_modes(b, modes, 2, res, err);
    if (rc == 0)
        shift_times(b, shift);
    if (rc == 0 && found)
        rc = mrg_writer_store_steps(w, b, err);
    if (rc == 0 && found)
        rc = mrg_writer_store_iterations(w, b, err);
    if (rc == 0) {
        res[0].rank = res[1].rank = rank;
        rc = mrg_writer_add_analysis(w, &res[0], "hta", err);
        if (rc == 0)
            rc = mrg_writer_add_analysis(w, &res[1], "all_steps", err);
        an_rank_result_clear(&res[0]);
        an_rank_result_clear(&res[1]);
    }
    hm_batch_free(b);
    return rc;
}

int mrg_rank_files_offer(struct mrg_rank_files **rf, int rank, const size_t *files, size_t n,
                         struct an_rank_result res[2])
{
    struct mrg_rank_files *r = get(rf);
    struct offer *o = NULL;

    if (r && hm_vec_reserve((void **)&r->o, &r->ocap, r->no + 1, sizeof *r->o) == 0) {
        o = &r->o[r->no];
        o->files = malloc((n ? n : 1) * sizeof *o->files);
    }
    if (!o || !o->files) {
        an_rank_result_clear(&res[0]);
        an_rank_result_clear(&res[1]);
        return HM_ENOMEM;
    }
    r->no++;
    o->rank = rank;
    o->n = n;
    memcpy(o->files, files, n * sizeof *files);
    o->res[0] = res[0];
    o->res[1] = res[1];
    return 0;
}

/* A stored file of a rank: rf->v[k] (finish's index, by rank, then k). */
struct rank_file {
    int rank;
    size_t k;
};

static int cmp_rank_file(const void *a, const void *b)
{
    const struct rank_file *x = a, *y = b;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    return x->k < y->k ? -1 : x->k > y->k;
}

static int cmp_offer(const void *a, const void *b)
{
    int x = ((const struct offer *)a)->rank, y = ((const struct offer *)b)->rank;
    return x < y ? -1 : x > y;
}

/* The offer (rf->o sorted by rank) that covers exactly the files stored
 * for a rank, f[0..n) in the order stored (the list's), or NULL. */
static struct offer *offer_for(const struct mrg_rank_files *rf, const struct rank_file *f, size_t n)
{
    size_t lo = 0, hi = rf->no;

    while (lo < hi) { /* the first offer of this rank */
        size_t mid = lo + (hi - lo) / 2;
        if (rf->o[mid].rank < f[0].rank)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (size_t i = lo; i < rf->no && rf->o[i].rank == f[0].rank; i++) {
        struct offer *o = &rf->o[i];
        size_t m = 0;
        while (m < n && m < o->n && o->files[m] == rf->v[f[m].k].file)
            m++;
        if (m == n && m == o->n)
            return o;
    }
    return NULL;
}

/* What reanalyse writes for a rank of ProfilerSteps (the only ranks whose
 * files a reader joins), from the reader's analyses. Its steps are not
 * dropped: every stored step of such a rank is a ProfilerStep (its files'
 * and the analyses' own), so reanalyse's drop (keep_profiler) deletes
 * nothing, and 1,024 such statements were a tenth of rank 0's finish. */
static int store_offer(struct mrg_writer *w, struct offer *o, struct hm_err *err)
{
    int rc;

    o->res[0].rank = o->res[1].rank = o->rank;
    rc = mrg_writer_add_analysis(w, &o->res[0], "hta", err);
    if (rc == 0)
        rc = mrg_writer_add_analysis(w, &o->res[1], "all_steps", err);
    return rc;
}

/* A rank with a joined file: its run in finish's index, and its first
 * joined file. Ranks are finished in the order of that file, the order
 * their rows were always stored in. */
struct joined_rank {
    size_t first_joined, run, n;
};

static int cmp_first_joined(const void *a, const void *b)
{
    size_t x = ((const struct joined_rank *)a)->first_joined, y = ((const struct joined_rank *)b)->first_joined;
    return x < y ? -1 : x > y;
}

int mrg_rank_files_finish(struct mrg_rank_files *rf, struct mrg_writer *w, struct hm_err *err)
{
    struct rank_file *ix;
    struct joined_rank *todo;
    size_t nt = 0;
    int rc = 0;

    if (!rf || rf->n == 0)
        return 0;
    ix = malloc(rf->n * sizeof *ix);
    todo = malloc(rf->n * sizeof *todo);
    if (!ix || !todo) {
        free(ix);
        free(todo);
        return hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");
    }
    for (size_t k = 0; k < rf->n; k++)
        ix[k] = (struct rank_file){rf->v[k].rank, k};
    qsort(ix, rf->n, sizeof *ix, cmp_rank_file);
    if (rf->no)   /* qsort's array may not be NULL, even of no elements */
        qsort(rf->o, rf->no, sizeof *rf->o, cmp_offer);
    for (size_t a = 0, b; a < rf->n; a = b) {
        size_t first = SIZE_MAX;
        for (b = a; b < rf->n && ix[b].rank == ix[a].rank; b++)
            if (rf->v[ix[b].k].joined && ix[b].k < first)
                first = ix[b].k;
        if (first != SIZE_MAX)
            todo[nt++] = (struct joined_rank){first, a, b - a};
    }
    qsort(todo, nt, sizeof *todo, cmp_first_joined);
    for (size_t t = 0; t < nt && rc == 0; t++) {
        const struct rank_file *f = ix + todo[t].run;
        struct offer *o = offer_for(rf, f, todo[t].n);
        if (o) {
            rc = store_offer(w, o, err);
            rf->offered++;
        } else {
            rc = reanalyse(rf, w, f->rank, err);
            rf->read_back++;
        }
    }
    free(ix);
    free(todo);
    return rc;
}

void mrg_rank_files_counts(const struct mrg_rank_files *rf, size_t *offered, size_t *read_back)
{
    *offered = rf ? rf->offered : 0;
    *read_back = rf ? rf->read_back : 0;
}

void mrg_rank_files_free(struct mrg_rank_files *rf)
{
    if (!rf)
        return;
    for (size_t k = 0; k < rf->n; k++)
        free(rf->v[k].steps);
    for (size_t k = 0; k < rf->no; k++) {
        free(rf->o[k].files);
        an_rank_result_clear(&rf->o[k].res[0]);
        an_rank_result_clear(&rf->o[k].res[1]);
    }
    free(rf->v);
    free(rf->o);
    free(rf);
}

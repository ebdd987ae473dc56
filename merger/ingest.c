/* Offline ingest driver: a pool of parser threads feeding the one writer.
 *
 * File i goes through slot i % window. A parser claims the next file only
 * while it is fewer than `window` files ahead of the writer, which bounds
 * memory to about `window` parsed batches plus the JSON buffers being
 * parsed, and makes that slot free; so the slots, like the rest of the
 * pool, do not grow with the number of files. The writer (the calling
 * thread) takes slots in order, checks the rank, and stores the batch and
 * its analyses. */
#include "ingest.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "analysis/hta.h"
#include "collector/sources/kineto_json/kineto_json.h"
#include "common/batch.h"
#include "ingest_int.h"
#include "analysis/cross_rank.h"
#include "store/writer.h"
#include "common/monotime.h"
#include "common/strtab.h"
#include "rank_files.h"

struct pool {
    char *const *files;          /* borrowed */
    size_t nfiles;
    const struct mrg_ingest_opts *opts;
    struct mrg_slot *slots;      /* owned, window of them: file i uses slots[i % window] */
    size_t next;                 /* next file to claim */
    size_t written;              /* files the writer has consumed */
    size_t window;
    int stop;
    pthread_mutex_t mu;
    pthread_cond_t cv;
};

/* Parses and analyses one file into its slot, outside the lock. */
static void parse_one(struct pool *p, size_t i)
{
    struct mrg_slot *s = &p->slots[i % p->window];
    struct src_kineto_opts ko = {.keep_args = p->opts->keep_args};
    struct an_options hta = {0}, all = {.all_steps = 1};

    hm_err_clear(&s->err);
    s->rc = src_kineto_read(p->files[i], &ko, &s->batch, &s->err);
    if (s->rc == 0) {
        struct an_options modes[2] = {hta, all};
        s->rc = an_hta_run_modes(s->batch, modes, 2, s->res, &s->err);
        s->analysed = s->rc == 0;
        if (s->rc != 0 && !s->err.file[0])
            snprintf(s->err.file, sizeof s->err.file, "%s", p->files[i]);
    }
}

static void *parser_main(void *arg)
{
    struct pool *p = arg;

    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->stop && p->next < p->nfiles && p->next >= p->written + p->window)
            pthread_cond_wait(&p->cv, &p->mu);
        if (p->stop || p->next >= p->nfiles)
            break;
        size_t i = p->next++;
        p->slots[i % p->window].state = 1;
        pthread_mutex_unlock(&p->mu);
        parse_one(p, i);
        pthread_mutex_lock(&p->mu);
        p->slots[i % p->window].state = 2;
        pthread_cond_broadcast(&p->cv);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

static int default_jobs(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    /* The writer thread is busy too: leave it one core. */
    /* The writer is the bottleneck beyond a few parsers, and each parser in
     * flight holds a decompressed file: more would only cost memory. */
    return n > 4 ? 3 : n > 2 ? (int)n - 1 : 1;
}

static int claim_rank(struct rank_map *m, int rank, size_t file, size_t *prev)
{
    if ((size_t)rank >= m->cap) {
        size_t ncap = (size_t)rank * 2 + 16;
        size_t *o = realloc(m->owner, ncap * sizeof *o);
        if (!o)
            return HM_ENOMEM;
        memset(o + m->cap, 0, (ncap - m->cap) * sizeof *o);
        m->owner = o;
        m->cap = ncap;
    }
    if (m->owner[rank]) {
        *prev = m->owner[rank] - 1;
        return HM_EDUP;
    }
    m->owner[rank] = file + 1;
    return 0;
}

/* Decides the rank of a parsed file, or fails with a message naming it. */
static int resolve_rank(struct mrg_store *p, size_t i, struct hm_batch *b, struct hm_err *err)
{
    struct rank_map *ranks = &p->ranks;
    size_t prev = 0;
    int rc;

    if (b->info.rank == HM_NONE) {
        if (p->nfiles != 1)
            return hm_err_set(err, HM_EFORMAT, p->files[i], -1,
                              "no distributedInfo.rank and no rank in the file name "
                              "(name it rank-N.json or pass one file at a time)");
        b->info.rank = 0; /* HTA's rule for a lone trace without a rank */
        b->info.rank_source = hm_batch_intern(b, "default", 7);
    }
    if (b->info.rank < 0)
        return hm_err_set(err, HM_EFORMAT, p->files[i], -1, "negative rank %d", b->info.rank);
    rc = claim_rank(ranks, b->info.rank, i, &prev);
    if (rc == HM_EDUP) /* 1: more files of the rank (rank_files.h) */
        return mrg_rank_files_join(&p->rfiles, i, b, p->files, err);
    return rc ? rc : mrg_rank_files_note(&p->rfiles, i, b);
}

static void count_batch(struct mrg_ingest_stats *st, const struct hm_batch *b, const char *path)
{
    struct stat sb;

    st->slices += b->slices.n;
    st->collectives += b->collectives.n;
    st->counters += b->counters.n;
    for (int k = 0; k < HM_SKIP__COUNT; k++)
        st->skipped += b->info.skipped[k];
    if (stat(path, &sb) == 0)
        st->bytes_in += (uint64_t)sb.st_size;
}

/* --- Clock guess ------------------------------------------------------------
 * Clock refinement re-times every row of a rank whose clock it corrects,
 * which costs about as much as writing the rows. So before a rank is
 * written, its correction is guessed the way refinement will find it: the
 * rank's NxN collectives timed by their GPU rows are matched with the
 * reference rank's (the first one stored) by (pg, seq), or else by their
 * order within (pg, op, size, step), and the exit differences go through
 * the same fit. The rows are written with the guess; refinement undoes it
 * before deciding anything and re-times only ranks guessed wrong, so a
 * wrong guess costs what refinement cost without one. */

static int cmp_guess_order(const void *pa, const void *pb)
{
    const struct mrg_guess_call *a = pa, *b = pb;
    if (a->group != b->group)
        return a->group < b->group ? -1 : 1;
    if (a->enter != b->enter)
        return a->enter < b->enter ? -1 : 1;
    return (a->idx > b->idx) - (a->idx < b->idx);
}

static int cmp_guess_key(const void *pa, const void *pb)
{
    const struct mrg_guess_call *a = pa, *b = pb;
    return (a->key > b->key) - (a->key < b->key);
}

static const char *bstr(const struct hm_batch *b, hm_strid id)
{
    const char *t = id ? hm_batch_str(b, id) : NULL;
    return t ? t : "";
}

static uint64_t hash_text(const char *s)
{
    return hm_hash_bytes(s, strlen(s));
}

/* b's NxN GPU-timed calls, keyed; *out owned by the caller. */
static int guess_calls(const struct hm_batch *b, struct mrg_guess_call **out, size_t *nout)
{
    int64_t base = b->info.base_time_ns != HM_NONE ? b->info.base_time_ns : 0;
    struct mrg_guess_call *v = malloc((b->collectives.n + 1) * sizeof *v);
    size_t n = 0;
    char op[128], key[768];

    if (!v)
        return HM_ENOMEM;
    for (size_t i = 0; i < b->collectives.n; i++) {
        const struct hm_collective *c = &b->collectives.v[i];
        const struct hm_slice *s = c->slice < b->slices.n ? &b->slices.v[c->slice] : NULL;
        const char *pg = bstr(b, c->pg_name), *comm = bstr(b, c->comms_id);
        struct mrg_guess_call *g = &v[n];
        if (!s || s->track >= b->tracks.n || b->tracks.v[s->track].kind != HM_TRACK_GPU_STREAM)
            continue;
        xr_op_normalise(bstr(b, c->op), op, sizeof op);
        if (!op[0] || !strcmp(op, "wait") || !xr_op_is_nxn(op))
            continue;
        *g = (struct mrg_guess_call){0, 0, s->ts + base, s->ts + s->dur + base, i};
        if (c->seq != HM_NONE && (pg[0] || comm[0])) {
            snprintf(key, sizeof key, "%s|%s|%lld", pg[0] ? "pg" : "comm", pg[0] ? pg : comm,
                     (long long)c->seq);
            g->key = hash_text(key);
        } else {
            snprintf(key, sizeof key, "order|%s|%s|%lld|%d", pg, op, (long long)c->in_nelems,
                     (int)s->iteration);
            g->group = hash_text(key) | 1;
        }
        n++;
    }
    qsort(v, n, sizeof *v, cmp_guess_order);
    for (size_t i = 0, k = 0; i < n; i++) {
        k = i > 0 && v[i].group == v[i - 1].group ? k + 1 : 0;
        if (v[i].group) {
            snprintf(key, sizeof key, "%llx#%zu", (unsigned long long)v[i].group, k);
            v[i].key = hash_text(key);
        }
    }
    qsort(v, n, sizeof *v, cmp_guess_key);
    *out = v;
    *nout = n;
    return 0;
}

/* Guesses b's correction against the reference (b becomes the reference
 * when there is none yet) and hands it to the writer. */
static int guess_shift(struct mrg_store *p, const struct hm_batch *b, struct hm_err *err)
{
    struct mrg_clock_guess *g = &p->guess;
    struct mrg_guess_call *v = NULL;
    double *xs = NULL, *ys = NULL;
    int64_t *ex = NULL, x0 = INT64_MAX, shift = 0;
    size_t n = 0, m = 0;
    int rc;

    if (!g->on || b->info.rank == g->ref)
        return 0;
    if ((rc = guess_calls(b, &v, &n)))
        return hm_err_set(err, rc, NULL, -1, "out of memory");
    if (g->ref < 0 && n > 0) {
        g->ref = b->info.rank;
        g->calls = v;
        g->n = n;
        return 0;
    }
    xs = malloc((n + 1) * sizeof *xs);
    ys = malloc((n + 1) * sizeof *ys);
    ex = malloc((n + 1) * sizeof *ex);
    rc = xs && ys && ex ? 0 : HM_ENOMEM;
    /* A reference above this rank is not the one refinement will take. */
    for (size_t i = 0; rc == 0 && g->ref >= 0 && g->ref < b->info.rank && i < n; i++) {
        struct mrg_guess_call *q = bsearch(&v[i], g->calls, g->n, sizeof *q, cmp_guess_key);
        if (!q)
            continue;
        ex[m] = v[i].exit;
        ys[m++] = (double)(q->exit - v[i].exit);
        x0 = v[i].exit < x0 ? v[i].exit : x0;
    }
    for (size_t i = 0; i < m; i++)
        xs[i] = (double)(ex[i] - x0);
    if (rc == 0)
        rc = xr_clock_guess(xs, ys, m, &shift);
    if (rc == 0 && shift != 0)
        rc = mrg_writer_set_time_shift(p->w, b->info.rank, shift, err);
    else if (rc)
        rc = hm_err_set(err, rc, NULL, -1, "out of memory");
    free(v);
    free(xs);
    free(ys);
    free(ex);
    return rc;
}

int mrg_store_slot(struct mrg_store *p, size_t i, struct mrg_slot *s, struct hm_err *err)
{
    struct mrg_writer *w = p->w;
    struct mrg_ingest_stats *st = p->st;
    int rc = s->rc;

    if (rc == 0 && !s->analysed) {
        struct an_options modes[2] = {{.all_steps = 0}, {.all_steps = 1}};
        p->analyse_s -= hm_mono_s();
        rc = an_hta_run_modes(s->batch, modes, 2, s->res, &s->err);
        p->analyse_s += hm_mono_s();
        p->analysed_here++;
        s->analysed = rc == 0;
    }
    if (rc == 0)
        rc = resolve_rank(p, i, s->batch, &s->err);
    int more = rc == 1; /* another file of a stored rank: analysed at the end */
    if (more)
        rc = 0;
    if (rc == 0) {
        s->res[0].rank = s->res[1].rank = s->batch->info.rank;
        rc = more ? 0 : guess_shift(p, s->batch, &s->err);
        if (rc == 0)
            rc = mrg_writer_add_batch(w, s->batch, &s->err);
        if (rc == 0 && !more)
            rc = mrg_writer_add_analysis(w, &s->res[0], "hta", &s->err);
        if (rc == 0 && !more)
            rc = mrg_writer_add_analysis(w, &s->res[1], "all_steps", &s->err);
        if (rc == 0) {
            count_batch(st, s->batch, p->files[i]);
            st->ranks += !more;
        }
    }
    if (rc != 0) {
        char line[1200];
        st->files_failed++;
        /* SQLite failures are never per-file: the output itself is at risk. */
        if (!p->opts->keep_going || rc == HM_ESQL || rc == HM_ENOMEM || rc == HM_EIO) {
            *err = s->err;
            return rc;
        }
        fprintf(stderr, "htamerge: skipping %s\n", hm_err_line(&s->err, line, sizeof line));
    }
    st->files++;
    return 0;
}

void mrg_release_slot(struct mrg_slot *s)
{
    hm_batch_free(s->batch);
    s->batch = NULL;
    free(s->raw);
    s->raw = NULL;
    an_rank_result_clear(&s->res[0]);
    an_rank_result_clear(&s->res[1]);
}

static uint64_t total_bytes(char *const *files, size_t n)
{
    uint64_t t = 0;
    struct stat sb;
    for (size_t i = 0; i < n; i++)
        if (stat(files[i], &sb) == 0)
            t += (uint64_t)sb.st_size;
    return t;
}

int mrg_ingest_write_meta(struct mrg_writer *w, const struct mrg_ingest_opts *opts, const char *created_by,
                          struct hm_err *err)
{
    char when[64];
    time_t t = time(NULL);
    struct tm tm;
    int rc;

    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&t, &tm));
    rc = mrg_writer_set_meta(w, "created_by", created_by, err);
    if (rc == 0)
        rc = mrg_writer_set_meta(w, "created_at", when, err);
    if (rc == 0 && opts->command_line)
        rc = mrg_writer_set_meta(w, "command_line", opts->command_line, err);
    if (rc == 0)
        rc = mrg_writer_set_meta(w, "run_status", "complete", err);
    return rc;
}

/* The writer loop: consumes slots in order until all files are stored. */
static int drain(struct pool *p, struct mrg_writer *w, struct mrg_ingest_stats *st,
                 uint64_t total, struct hm_err *err)
{
    struct mrg_store store = {.files = p->files, .nfiles = p->nfiles, .opts = p->opts, .w = w, .st = st,
                              .guess = {.on = 1, .ref = -1}};
    int rc = 0;
    double t_busy = 0;

    for (size_t i = 0; i < p->nfiles && rc == 0; i++) {
        struct mrg_slot *s = &p->slots[i % p->window];
        pthread_mutex_lock(&p->mu);
        while (s->state != 2)
            pthread_cond_wait(&p->cv, &p->mu);
        pthread_mutex_unlock(&p->mu);
        t_busy -= hm_mono_s();
        rc = mrg_store_slot(&store, i, s, err);
        if (s->batch)
            st->bytes_json += s->batch->source_bytes;
        mrg_release_slot(s);
        t_busy += hm_mono_s();
        pthread_mutex_lock(&p->mu);
        s->state = 0;   /* free for file i + window */
        p->written = i + 1;
        if (rc != 0)
            p->stop = 1;
        pthread_cond_broadcast(&p->cv);
        pthread_mutex_unlock(&p->mu);
        if (p->opts->progress && rc == 0)
            p->opts->progress(p->opts->progress_ctx, st, total, 0);
    }
    if (rc == 0)
        rc = mrg_rank_files_finish(store.rfiles, w, err);
    mrg_rank_files_free(store.rfiles);
    free(store.ranks.owner);
    free(store.guess.calls);
    if (getenv("HTAMERGE_STATS"))
        fprintf(stderr, "htamerge-stats: ingest writer busy while parsing %.3f s\n", t_busy);
    return rc;
}

/* HTAMERGE_STATS=1 prints each phase's wall time (for the benchmarks). */
static void phase_done(const char *what, double *since)
{
    double now = hm_mono_s();

    if (getenv("HTAMERGE_STATS"))
        fprintf(stderr, "htamerge-stats: ingest %-22s %.3f s\n", what, now - *since);
    *since = now;
}

int mrg_ingest(char *const *files, size_t nfiles, const struct mrg_ingest_opts *opts,
               struct mrg_ingest_stats *stats, struct hm_err *err)
{
    struct pool p = {.files = files, .nfiles = nfiles, .opts = opts};
    struct xr_view view = {0};
    struct mrg_writer *w = NULL;
    pthread_t *th = NULL;
    int njobs = opts->jobs > 0 ? opts->jobs : default_jobs(), started = 0, rc;
    double t0 = hm_mono_s(), t_phase = t0;
    uint64_t total = total_bytes(files, nfiles);

    memset(stats, 0, sizeof *stats);
    if (nfiles == 0)
        return hm_err_set(err, HM_EEMPTY, NULL, -1, "no trace files to ingest");
    if ((size_t)njobs > nfiles)
        njobs = (int)nfiles;
    p.window = (size_t)njobs + 1;
    p.slots = calloc(p.window, sizeof *p.slots);
    th = calloc((size_t)njobs, sizeof *th);
    if (!p.slots || !th) {
        rc = hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");
        goto out_free;
    }
    w = mrg_writer_open(opts->output, err);
    if (!w) {
        rc = err->code ? err->code : HM_EIO;
        goto out_free;
    }
    /* The analyses' view of the slices, gathered as they are written. */
    view.spill = xr_view_spill_for(opts->output);
    mrg_writer_set_slice_tap(w, xr_view_tap, &view);
    pthread_mutex_init(&p.mu, NULL);
    pthread_cond_init(&p.cv, NULL);
    for (; started < njobs; started++)
        if (pthread_create(&th[started], NULL, parser_main, &p) != 0)
            break;
    if (started == 0) {
        rc = hm_err_set(err, HM_ENOMEM, NULL, -1, "cannot start parser threads");
        goto out_abort;
    }
    rc = drain(&p, w, stats, total, err);
    phase_done("parse and write", &t_phase);
    if (rc == 0 && stats->ranks == 0)
        rc = hm_err_set(err, HM_EFORMAT, NULL, -1, "none of the %zu files could be read", nfiles);
    if (rc == 0)
        rc = mrg_ingest_write_meta(w, opts, "htamerge ingest", err);
    mrg_writer_set_slice_tap(w, NULL, NULL);
    if (rc == 0)
        rc = xr_finish_view(w, NULL, &view, err);
    xr_view_free(&view);
    phase_done("cross-rank analyses", &t_phase);

out_abort:
    pthread_mutex_lock(&p.mu);
    p.stop = 1;
    pthread_cond_broadcast(&p.cv);
    pthread_mutex_unlock(&p.mu);
    for (int i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    for (size_t i = 0; i < p.window; i++)
        mrg_release_slot(&p.slots[i]);
    pthread_mutex_destroy(&p.mu);
    pthread_cond_destroy(&p.cv);
    if (rc == 0)
        rc = mrg_writer_finish(w, err);
    else
        mrg_writer_abort(w);
    phase_done("indexes and close", &t_phase);
out_free:
    xr_view_free(&view);
    free(th);
    free(p.slots);
    stats->seconds = hm_mono_s() - t0;
    if (opts->progress)
        opts->progress(opts->progress_ctx, stats, total, 1);
    return rc;
}

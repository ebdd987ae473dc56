/* Can one writer keep up with many ranks? Drives the writer (store/writer.h)
 * the way rank 0 of a parallel ingest or live run does, with one real trace
 * file as the template of every rank's data: the file is parsed once, then
 * written as rank 0..N-1, round after round (each round shifted in time and
 * step number, as the next steps of a live run would be). Measures each
 * round's wall and CPU time (rows/s, seconds per profiled step of all
 * ranks), peak RSS, and the closing (indexes) at the end. Does not parse
 * per rank (readers do that elsewhere) nor run the cross-rank analyses.
 *
 * usage: bench_writer_scale -o OUT.db -n RANKS [-r ROUNDS] [-s STEPS] [-a] [-T] TEMPLATE
 *   -s  keep only the template's first STEPS profiled steps (what falls in
 *       their time): one round is then STEPS steps of every rank
 *   -a  also run each batch's per-rank analyses (rank 0 of a parallel
 *       ingest does) and store them
 *   -T  no slice tap (ingest taps the slices for the cross-rank view)
 * Output: "key value" lines, then one line per round. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "analysis/cross_rank.h"
#include "analysis/hta.h"
#include "collector/sources/kineto_json/kineto_json.h"
#include "common/batch.h"
#include "common/err.h"
#include "store/writer.h"

struct opts {
    const char *out, *tmpl;
    int ranks, rounds, steps, analyse, tap;
};

static double wall_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static long rss_mb(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss / 1024;
}

static int die(const char *what, const struct hm_err *err)
{
    char line[1200];
    fprintf(stderr, "bench_writer_scale: %s: %s\n", what, hm_err_line(err, line, sizeof line));
    return 1;
}

static int parse_opts(int argc, char **argv, struct opts *o)
{
    int c;

    *o = (struct opts){.rounds = 1, .tap = 1};
    while ((c = getopt(argc, argv, "o:n:r:s:aT")) != -1) {
        switch (c) {
        case 'o': o->out = optarg; break;
        case 'n': o->ranks = atoi(optarg); break;
        case 'r': o->rounds = atoi(optarg); break;
        case 's': o->steps = atoi(optarg); break;
        case 'a': o->analyse = 1; break;
        case 'T': o->tap = 0; break;
        default: return -1;
        }
    }
    o->tmpl = optind < argc ? argv[optind] : NULL;
    return o->out && o->tmpl && o->ranks > 0 && o->rounds > 0 ? 0 : -1;
}

/* Keeps what lies in the first nsteps steps: slices and counters in
 * their time, the collectives and steps of the slices kept. */
static void trim(struct hm_batch *b, size_t nsteps)
{
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    size_t n = 0, *map = malloc((b->slices.n + 1) * sizeof *map);

    if (!map || nsteps == 0 || nsteps >= b->steps.n) {
        free(map);
        return;
    }
    for (size_t i = 0; i < nsteps; i++) {
        lo = b->steps.v[i].ts < lo ? b->steps.v[i].ts : lo;
        hi = b->steps.v[i].ts + b->steps.v[i].dur > hi ? b->steps.v[i].ts + b->steps.v[i].dur : hi;
    }
    for (size_t i = 0; i < b->slices.n; i++) {
        int in = b->slices.v[i].ts >= lo && b->slices.v[i].ts < hi;
        map[i] = in ? n : (size_t)-1;
        if (in)
            b->slices.v[n++] = b->slices.v[i];
    }
    b->slices.n = n;
    n = 0;
    for (size_t i = 0; i < b->collectives.n; i++)
        if (map[b->collectives.v[i].slice] != (size_t)-1) {
            b->collectives.v[n] = b->collectives.v[i];
            b->collectives.v[n++].slice = (uint32_t)map[b->collectives.v[i].slice];
        }
    b->collectives.n = n;
    for (size_t i = 0; i < nsteps; i++)
        if (b->steps.v[i].slice != HM_STEP_NO_SLICE)
            b->steps.v[i].slice = map[b->steps.v[i].slice] == (size_t)-1 ? HM_STEP_NO_SLICE
                                                                         : (uint32_t)map[b->steps.v[i].slice];
    b->steps.n = nsteps;
    n = 0;
    for (size_t i = 0; i < b->counters.n; i++)
        if (b->counters.v[i].ts >= lo && b->counters.v[i].ts < hi)
            b->counters.v[n++] = b->counters.v[i];
    b->counters.n = n;
    free(map);
}

/* The template's extent: time span (ns) and how many steps it holds. */
static void extent(const struct hm_batch *b, int64_t *span, int64_t *steps)
{
    int64_t lo = INT64_MAX, hi = INT64_MIN;

    for (size_t i = 0; i < b->slices.n; i++) {
        lo = b->slices.v[i].ts < lo ? b->slices.v[i].ts : lo;
        hi = b->slices.v[i].ts + b->slices.v[i].dur > hi ? b->slices.v[i].ts + b->slices.v[i].dur : hi;
    }
    *span = hi > lo ? hi - lo + 1000 : 1000;
    *steps = b->steps.n ? (int64_t)b->steps.n : 1;
}

/* Moves the template on by one round: later in time, later steps and
 * collective sequence numbers, as the same ranks' next steps would be. */
static void next_round(struct hm_batch *b, int64_t span, int64_t steps)
{
    for (size_t i = 0; i < b->slices.n; i++) {
        b->slices.v[i].ts += span;
        if (b->slices.v[i].iteration != HM_NONE)
            b->slices.v[i].iteration += (int32_t)steps;
    }
    for (size_t i = 0; i < b->counters.n; i++)
        b->counters.v[i].ts += span;
    for (size_t i = 0; i < b->steps.n; i++) {
        b->steps.v[i].ts += span;
        b->steps.v[i].number += steps;
    }
    for (size_t i = 0; i < b->collectives.n; i++)
        if (b->collectives.v[i].seq != HM_NONE)
            b->collectives.v[i].seq += (int64_t)b->collectives.n;
}

/* One rank's batch of a round, as rank 0 stores it. */
static int write_rank(struct mrg_writer *w, struct hm_batch *b, int rank, int analyse, struct hm_err *err)
{
    struct an_options modes[2] = {{.all_steps = 0}, {.all_steps = 1}};
    struct an_rank_result res[2];
    int rc;

    b->info.rank = rank;
    memset(res, 0, sizeof res);
    if (analyse && (rc = an_hta_run_modes(b, modes, 2, res, err)) != 0)
        return rc;
    rc = mrg_writer_add_batch(w, b, err);
    if (rc == 0 && analyse) {
        res[0].rank = res[1].rank = rank;
        rc = mrg_writer_add_analysis(w, &res[0], "hta", err);
        if (rc == 0)
            rc = mrg_writer_add_analysis(w, &res[1], "all_steps", err);
    }
    an_rank_result_clear(&res[0]);
    an_rank_result_clear(&res[1]);
    return rc;
}

int main(int argc, char **argv)
{
    struct src_kineto_opts ko = {.keep_args = 1};
    struct xr_view view = {0};
    struct hm_batch *b = NULL;
    struct hm_err err;
    struct opts o;
    int64_t span, steps;
    double t0, c0, total_w = 0, total_c = 0;

    if (parse_opts(argc, argv, &o) != 0) {
        fprintf(stderr, "usage: bench_writer_scale -o OUT.db -n RANKS [-r ROUNDS] [-s STEPS] [-a] [-T] TEMPLATE\n");
        return 2;
    }
    hm_err_clear(&err);
    if (src_kineto_read(o.tmpl, &ko, &b, &err) != 0)
        return die(o.tmpl, &err);
    double json_per_slice = b->slices.n ? (double)b->source_bytes / (double)b->slices.n : 0.0;
    trim(b, (size_t)o.steps);
    extent(b, &span, &steps);
    uint64_t rows = b->slices.n + b->collectives.n + b->counters.n;
    printf("ranks %d\nrounds %d\nanalyse %d\ntap %d\nrows_per_rank_round %llu\nsteps_per_round %lld\n"
           "rows_per_rank_step %.1f\njson_bytes_per_slice %.1f\n",
           o.ranks, o.rounds, o.analyse, o.tap, (unsigned long long)rows, (long long)steps, (double)rows / steps,
           json_per_slice);
    struct mrg_writer *w = mrg_writer_open(o.out, &err);
    if (!w)
        return die("open", &err);
    if (o.tap)
        mrg_writer_set_slice_tap(w, xr_view_tap, &view);
    printf("round rows wall_s cpu_s rows_per_s rows_per_cpu_s s_per_step peak_rss_MB\n");
    for (int k = 0; k < o.rounds; k++) {
        t0 = wall_s();
        c0 = cpu_s();
        for (int r = 0; r < o.ranks; r++)
            if (write_rank(w, b, r, o.analyse, &err) != 0)
                return die("write", &err);
        double dw = wall_s() - t0, dc = cpu_s() - c0, n = (double)rows * o.ranks;
        total_w += dw;
        total_c += dc;
        printf("%d %.0f %.2f %.2f %.0f %.0f %.3f %ld\n", k, n, dw, dc, n / dw, n / dc, dw / (double)steps,
               rss_mb());
        fflush(stdout);
        next_round(b, span, steps);
    }
    mrg_writer_set_slice_tap(w, NULL, NULL);
    xr_view_free(&view);
    t0 = wall_s();
    if (mrg_writer_finish(w, &err) != 0)
        return die("finish", &err);
    double n_all = (double)rows * o.ranks * o.rounds, fin = wall_s() - t0;
    printf("write_wall_s %.2f\nwrite_cpu_s %.2f\nrows %.0f\nrows_per_s %.0f\nrows_per_cpu_s %.0f\n"
           "finish_s %.2f\nrows_per_s_with_finish %.0f\npeak_rss_MB %ld\n",
           total_w, total_c, n_all, n_all / total_w, n_all / total_c, fin, n_all / (total_w + fin), rss_mb());
    hm_batch_free(b);
    return 0;
}

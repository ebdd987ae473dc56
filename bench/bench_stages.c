/* Where ingest time goes: the calls `htamerge ingest` makes (merger/ingest.c),
 * made on ONE thread, one file after another, with each stage timed:
 *   read     src_kineto_read (load, inflate, parse, build the batch)
 *   analyse  an_hta_run twice (all_steps, then hta), as ingest does
 *   insert   mrg_writer_add_batch + mrg_writer_add_analysis x2 (SQLite rows)
 *   free     hm_batch_free + an_rank_result_clear
 *   finish   mrg_writer_finish (dimension tables, indexes, views, ANALYZE,
 *            COMMIT, fsync, rename)
 * The real ingest overlaps read+analyse (worker threads) with insert (the
 * calling thread), so its wall time is about max(read+analyse over the
 * workers, insert) + finish; this harness shows each term.
 *
 * usage: bench_stages -o OUT.db FILE...
 * Output: one "key value" per line (seconds), read by bench/run.sh. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "analysis/hta.h"
#include "collector/sources/kineto_json/kineto_json.h"
#include "common/batch.h"
#include "common/err.h"
#include "store/writer.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int die(const struct hm_err *err)
{
    char line[1200];
    fprintf(stderr, "bench_stages: %s\n", hm_err_line(err, line, sizeof line));
    return 1;
}

int main(int argc, char **argv)
{
    const char *out = NULL;
    int first = 1;
    double t_read = 0, t_an = 0, t_ins = 0, t_free = 0, t_fin, t0 = now_s();
    uint64_t bytes = 0, slices = 0;
    struct hm_err err;

    if (argc > 2 && !strcmp(argv[1], "-o")) {
        out = argv[2];
        first = 3;
    }
    if (!out || first >= argc) {
        fprintf(stderr, "usage: bench_stages -o OUT.db FILE...\n");
        return 2;
    }
    hm_err_clear(&err);
    struct mrg_writer *w = mrg_writer_open(out, &err);
    if (!w)
        return die(&err);
    double t_open = now_s() - t0;

    for (int i = first; i < argc; i++) {
        struct hm_batch *b = NULL;
        struct src_kineto_opts ko = {.keep_args = 1};
        struct an_options hta = {0}, all = {.all_steps = 1};
        struct an_rank_result res[2];
        double a = now_s();

        memset(res, 0, sizeof res);
        if (src_kineto_read(argv[i], &ko, &b, &err) != 0)
            return die(&err);
        double bt = now_s();
        if (an_hta_run(b, &all, &res[1], &err) != 0 || an_hta_run(b, &hta, &res[0], &err) != 0)
            return die(&err);
        double c = now_s();
        if (b->info.rank == HM_NONE)
            b->info.rank = i - first;
        res[0].rank = res[1].rank = b->info.rank;
        if (mrg_writer_add_batch(w, b, &err) != 0 ||
            mrg_writer_add_analysis(w, &res[0], "hta", &err) != 0 ||
            mrg_writer_add_analysis(w, &res[1], "all_steps", &err) != 0)
            return die(&err);
        double d = now_s();
        bytes += b->source_bytes;
        slices += b->slices.n;
        hm_batch_free(b);
        an_rank_result_clear(&res[0]);
        an_rank_result_clear(&res[1]);
        double e = now_s();
        t_read += bt - a;
        t_an += c - bt;
        t_ins += d - c;
        t_free += e - d;
    }
    double f0 = now_s();
    if (mrg_writer_finish(w, &err) != 0)
        return die(&err);
    t_fin = now_s() - f0;

    printf("files %d\n", argc - first);
    printf("json_bytes %llu\n", (unsigned long long)bytes);
    printf("slices %llu\n", (unsigned long long)slices);
    printf("open_s %.3f\n", t_open);
    printf("read_s %.3f\n", t_read);
    printf("analyse_s %.3f\n", t_an);
    printf("insert_s %.3f\n", t_ins);
    printf("free_s %.3f\n", t_free);
    printf("finish_s %.3f\n", t_fin);
    printf("total_s %.3f\n", now_s() - t0);
    return 0;
}

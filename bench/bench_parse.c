/* Parse-only benchmark: src_kineto_read on one trace file, N times, on one
 * thread. Reports MB/s of decompressed JSON (the batch's source_bytes) per
 * second of wall time, for the median and the best run, plus the CPU time
 * the process used (to check that it really is one core). The batch is freed
 * outside the timed region. cpu_median_mb_s divides by the process CPU time
 * of the run instead of its wall time: on a busy machine it is the steadier
 * figure (time waiting for a core is not counted).
 *
 * usage: bench_parse [-n N] [--no-args] FILE
 *   FILE plain .json isolates JSON parsing; .json.gz adds inflating.
 * Output: one "key value" per line (read by bench/run.sh). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "collector/sources/kineto_json/kineto_json.h"
#include "common/batch.h"
#include "common/err.h"

static double clock_s(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    int n = 5, keep_args = 1;
    const char *path = NULL;

    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-n") && i + 1 < argc)
            n = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--no-args"))
            keep_args = 0;
        else if (argv[i][0] != '-' && !path)
            path = argv[i];
        else {
            fprintf(stderr, "usage: bench_parse [-n N] [--no-args] FILE\n");
            return 2;
        }
    }
    if (!path || n < 1) {
        fprintf(stderr, "usage: bench_parse [-n N] [--no-args] FILE\n");
        return 2;
    }

    double *wall = calloc((size_t)n, sizeof *wall), *cpu = calloc((size_t)n, sizeof *cpu);
    double cpu_total = 0, free_total = 0;
    uint64_t bytes = 0, slices = 0;
    struct src_kineto_opts opts = {.keep_args = keep_args};

    if (!wall || !cpu)
        return 1;
    for (int i = 0; i < n; i++) {
        struct hm_batch *b = NULL;
        struct hm_err err;
        char line[1200];

        hm_err_clear(&err);
        double c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID), t0 = clock_s(CLOCK_MONOTONIC);
        int rc = src_kineto_read(path, &opts, &b, &err);
        double t1 = clock_s(CLOCK_MONOTONIC), c1 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
        if (rc != 0) {
            fprintf(stderr, "bench_parse: %s\n", hm_err_line(&err, line, sizeof line));
            return 1;
        }
        wall[i] = t1 - t0;
        cpu[i] = c1 - c0;
        cpu_total += c1 - c0;
        bytes = b->source_bytes;
        slices = b->slices.n;
        double f0 = clock_s(CLOCK_MONOTONIC);
        hm_batch_free(b);
        free_total += clock_s(CLOCK_MONOTONIC) - f0;
    }
    qsort(wall, (size_t)n, sizeof *wall, cmp_double);
    qsort(cpu, (size_t)n, sizeof *cpu, cmp_double);
    double med = n % 2 ? wall[n / 2] : 0.5 * (wall[n / 2 - 1] + wall[n / 2]);
    double cmed = n % 2 ? cpu[n / 2] : 0.5 * (cpu[n / 2 - 1] + cpu[n / 2]);
    printf("file %s\n", path);
    printf("runs %d\n", n);
    printf("json_bytes %llu\n", (unsigned long long)bytes);
    printf("slices %llu\n", (unsigned long long)slices);
    printf("median_s %.4f\n", med);
    printf("best_s %.4f\n", wall[0]);
    printf("median_mb_s %.1f\n", bytes / 1e6 / med);
    printf("best_mb_s %.1f\n", bytes / 1e6 / wall[0]);
    printf("cpu_median_s %.4f\n", cmed);
    printf("cpu_median_mb_s %.1f\n", bytes / 1e6 / cmed);
    printf("cpu_per_wall %.2f\n", cpu_total / (n * med));
    printf("free_s %.4f\n", free_total / n);
    free(wall);
    free(cpu);
    return 0;
}

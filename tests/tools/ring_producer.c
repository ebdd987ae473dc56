/* ring_producer: a stand-in for the injection library on the producer side
 * of the shared-memory ring. It attaches to the ring named by $HTAMERGE_RING
 * (created by the collector), defines a few strings, and writes N synthetic
 * HM_RING_SLICE records from T threads, as a training process would. It
 * prints one summary line; dropped records are not an error (the ring
 * counts them for the collector).
 *
 *   ring_producer [--records N] [--threads T] [--strings S]
 *
 * Exit: 0 done, 1 cannot attach, 2 bad command line. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/record.h"
#include "common/shm_ring.h"

struct job {
    struct hm_ring *ring;   /* borrowed */
    uint64_t first, count;  /* record numbers first .. first+count-1 */
    uint32_t strings;
    uint64_t written, dropped;
};

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

static void *produce(void *arg)
{
    struct job *j = arg;
    struct hm_ring_slice s;
    int64_t t0 = now_ns();

    memset(&s, 0, sizeof s);
    s.kind = HM_TRACK_CPU_THREAD;
    s.cat = HM_CAT_USER_ANNOTATION;
    s.pid = (int32_t)getpid();
    s.tid = gettid();
    s.bytes = HM_NONE;
    for (uint64_t i = 0; i < j->count; i++) {
        uint64_t n = j->first + i;
        s.ts = t0 + (int64_t)i * 1000;
        s.dur = 500;
        s.correlation = (int64_t)n;
        s.name = 1 + (uint32_t)(n % j->strings);
        if (hm_ring_write(j->ring, HM_RING_SLICE, &s, sizeof s) == 0)
            j->written++;
        else
            j->dropped++;
        if ((i & 0xffff) == 0)
            hm_ring_heartbeat(j->ring);
    }
    return NULL;
}

static int define_strings(struct hm_ring *ring, uint32_t n)
{
    for (uint32_t id = 1; id <= n; id++) {
        char text[64];
        struct hm_ring_string h;
        int len = snprintf(text, sizeof text, "ring_producer_op_%u", id - 1);
        h.id = id;
        h.len = (uint32_t)len;
        if (hm_ring_write2(ring, HM_RING_STRING, &h, sizeof h, text, (uint32_t)len) != 0)
            return -1;
    }
    return 0;
}

static int parse_args(int argc, char **argv, uint64_t *records, int *threads, uint32_t *strings)
{
    /* Every option takes one value: step over the pair. */
    for (int i = 1; i < argc; i += 2) {
        char *end = NULL;
        unsigned long long v;
        if (i + 1 >= argc)
            return -1;
        v = strtoull(argv[i + 1], &end, 10);
        if (!*argv[i + 1] || *end || v == 0)
            return -1;
        if (!strcmp(argv[i], "--records"))
            *records = v;
        else if (!strcmp(argv[i], "--threads") && v <= 256)
            *threads = (int)v;
        else if (!strcmp(argv[i], "--strings") && v <= 100000)
            *strings = (uint32_t)v;
        else
            return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    uint64_t records = 1000, written = 0, dropped = 0;
    uint32_t strings = 4;
    int threads = 1;
    const char *name = getenv("HTAMERGE_RING");
    struct hm_err err;
    struct hm_ring *ring;
    pthread_t th[256];
    struct job jobs[256];

    if (parse_args(argc, argv, &records, &threads, &strings) != 0) {
        fputs("usage: ring_producer [--records N] [--threads T] [--strings S]\n", stderr);
        return 2;
    }
    ring = name ? hm_ring_attach(name, &err) : NULL;
    if (!ring) {
        fprintf(stderr, "ring_producer: %s\n", name ? err.msg : "HTAMERGE_RING is not set");
        return 1;
    }
    if (define_strings(ring, strings) != 0)
        fputs("ring_producer: warning: a string definition was dropped\n", stderr);
    for (int t = 0; t < threads; t++) {
        uint64_t share = records / (uint64_t)threads + ((uint64_t)t < records % (uint64_t)threads);
        jobs[t] = (struct job){ .ring = ring, .count = share, .strings = strings,
                                .first = t ? jobs[t - 1].first + jobs[t - 1].count : 0 };
        pthread_create(&th[t], NULL, produce, &jobs[t]);
    }
    for (int t = 0; t < threads; t++) {
        pthread_join(th[t], NULL);
        written += jobs[t].written;
        dropped += jobs[t].dropped;
    }
    hm_ring_heartbeat(ring);
    printf("ring_producer: %llu written, %llu dropped, %d threads\n",
           (unsigned long long)written, (unsigned long long)dropped, threads);
    hm_ring_close(ring);
    return 0;
}

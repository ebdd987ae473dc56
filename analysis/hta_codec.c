/* Per-rank analysis results <-> bytes (hta_codec.h). Layout: "HMA", a
 * version byte, u64 n, then each result's fields in struct order; every
 * integer 8 bytes little-endian (int fields too: simpler than varints,
 * and a few hundred bytes a rank), doubles their IEEE-754 bits, a kernel
 * name a u64 length + bytes, each vector a u64 count. The layout is
 * written once (xfer_result) and walked in either direction, so encoder
 * and decoder cannot disagree. It does not run the analyses (hta.c) nor
 * send anything (the collector and merger do). */
#include "hta_codec.h"

#include <stdlib.h>
#include <string.h>

enum { CODEC_VERSION = 1, HEAD_LEN = 4 };

/* One walk over the bytes: writing (p grows) or reading (p borrowed). */
struct io {
    int reading;
    uint8_t *p;   /* writing: owned, grows; reading: the message */
    size_t n;     /* writing: bytes written; reading: message length */
    size_t cap;
    size_t at;    /* reading: the next byte */
    int bad;      /* reading: ran past the end, or a count that cannot fit */
    int oom;
};

static int failed(const struct io *io) { return io->bad || io->oom; }

static void xfer_u64(struct io *io, uint64_t *v)
{
    if (failed(io))
        return;
    if (io->reading) {
        if (io->n - io->at < 8) {
            io->bad = 1;
            return;
        }
        *v = 0;
        for (int i = 0; i < 8; i++)
            *v |= (uint64_t)io->p[io->at++] << (8 * i);
        return;
    }
    if (hm_vec_reserve((void **)&io->p, &io->cap, io->n + 8, 1)) {
        io->oom = 1;
        return;
    }
    for (int i = 0; i < 8; i++)
        io->p[io->n++] = (uint8_t)(*v >> (8 * i));
}

static void xfer_i64(struct io *io, int64_t *v)
{
    uint64_t u = (uint64_t)*v;
    xfer_u64(io, &u);
    if (io->reading)
        *v = (int64_t)u;
}

static void xfer_int(struct io *io, int *v)
{
    int64_t w = *v;
    xfer_i64(io, &w);
    if (io->reading)
        *v = (int)w;
}

static void xfer_f64(struct io *io, double *d)
{
    uint64_t u;
    memcpy(&u, d, sizeof u);
    xfer_u64(io, &u);
    if (io->reading)
        memcpy(d, &u, sizeof u);
}

/* A vector's count; reading, room for that many records of at least
 * min_bytes each, never more than the bytes left could hold (so a broken
 * count allocates nothing large). Returns the count, 0 once failed. */
static size_t xfer_count(struct io *io, size_t n, void **v, size_t *cap, size_t elem, size_t min_bytes)
{
    uint64_t c = n;

    xfer_u64(io, &c);
    if (failed(io) || !io->reading)
        return failed(io) ? 0 : n;
    if (c > (io->n - io->at) / min_bytes) {
        io->bad = 1;
        return 0;
    }
    if (hm_vec_reserve(v, cap, c ? (size_t)c : 1, elem)) {
        io->oom = 1;
        return 0;
    }
    memset(*v, 0, (size_t)c * elem);
    return (size_t)c;
}

#define XFER_COUNT(io, vec, min) xfer_count((io), (vec).n, (void **)&(vec).v, &(vec).cap, sizeof *(vec).v, (min))

static void xfer_name(struct io *io, char **s)
{
    uint64_t len = *s ? strlen(*s) : 0;

    xfer_u64(io, &len);
    if (failed(io))
        return;
    if (!io->reading) {
        if (hm_vec_reserve((void **)&io->p, &io->cap, io->n + len, 1)) {
            io->oom = 1;
            return;
        }
        memcpy(io->p + io->n, *s, len);
        io->n += len;
        return;
    }
    if (len > io->n - io->at) {
        io->bad = 1;
        return;
    }
    if (!(*s = malloc(len + 1))) {
        io->oom = 1;
        return;
    }
    memcpy(*s, io->p + io->at, len);
    (*s)[len] = '\0';
    io->at += len;
}

static void xfer_kernel(struct io *io, struct an_kernel *k)
{
    xfer_name(io, &k->name);
    xfer_int(io, &k->kclass);
    xfer_i64(io, &k->count);
    xfer_i64(io, &k->sum_us);
    xfer_i64(io, &k->min_us);
    xfer_i64(io, &k->max_us);
    xfer_f64(io, &k->mean_us);
    xfer_f64(io, &k->std_us);
}

static void xfer_step(struct io *io, struct an_step *s)
{
    xfer_i64(io, &s->number);
    xfer_i64(io, &s->ts_ns);
    xfer_i64(io, &s->dur_ns);
    xfer_i64(io, &s->gpu_busy_us);
    xfer_i64(io, &s->kernel_count);
    xfer_int(io, &s->dropped);
    xfer_int(io, &s->source);
}

/* A vector read keeps n at the records fully read, so a failed read
 * frees exactly what it allocated (an_rank_result_clear). */
static void xfer_result(struct io *io, struct an_rank_result *r)
{
    size_t c;

    xfer_int(io, &r->rank);
    xfer_int(io, &r->has_gpu);
    xfer_i64(io, &r->temporal.idle_us);
    xfer_i64(io, &r->temporal.compute_us);
    xfer_i64(io, &r->temporal.non_compute_us);
    xfer_i64(io, &r->temporal.kernel_us);
    xfer_f64(io, &r->temporal.idle_pct);
    xfer_f64(io, &r->temporal.compute_pct);
    xfer_f64(io, &r->temporal.non_compute_pct);
    xfer_i64(io, &r->overlap.comm_us);
    xfer_i64(io, &r->overlap.overlap_us);
    xfer_f64(io, &r->overlap.overlap_pct);
    for (int k = 0; k < AN_KCLASS__COUNT; k++)
        xfer_i64(io, &r->kclass_us[k]);
    xfer_i64(io, &r->comp_overlap_comm_us);
    for (int k = 0; k < 8; k++)
        xfer_i64(io, &r->label_us[k]);
    c = XFER_COUNT(io, r->idle, 4 * 8);
    for (size_t i = 0; i < c && !failed(io); i++) {
        struct an_idle *d = &r->idle.v[i];
        xfer_i64(io, &d->stream);
        xfer_i64(io, &d->host_wait_us);
        xfer_i64(io, &d->kernel_wait_us);
        xfer_i64(io, &d->other_us);
        r->idle.n = io->reading ? i + 1 : r->idle.n;
    }
    c = XFER_COUNT(io, r->kernels, 8 * 8);
    for (size_t i = 0; i < c && !failed(io); i++) {
        xfer_kernel(io, &r->kernels.v[i]);
        r->kernels.n = io->reading && r->kernels.v[i].name ? i + 1 : r->kernels.n;
    }
    c = XFER_COUNT(io, r->steps, 7 * 8);
    for (size_t i = 0; i < c && !failed(io); i++) {
        xfer_step(io, &r->steps.v[i]);
        r->steps.n = io->reading ? i + 1 : r->steps.n;
    }
}

int an_results_encode(const struct an_rank_result *r, int n, uint8_t **buf, size_t *len)
{
    struct io io = {0};
    uint64_t count = (uint64_t)n;

    /* The walk takes non-const pointers; writing only reads through them
     * (every xfer_ stores into a field only when reading). */
    if (hm_vec_reserve((void **)&io.p, &io.cap, HEAD_LEN, 1) == 0) {
        memcpy(io.p, "HMA", 3);
        io.p[3] = CODEC_VERSION;
        io.n = HEAD_LEN;
    } else {
        io.oom = 1;
    }
    xfer_u64(&io, &count);
    for (int i = 0; i < n; i++)
        xfer_result(&io, (struct an_rank_result *)&r[i]);
    if (io.oom) {
        free(io.p);
        *buf = NULL;
        *len = 0;
        return HM_ENOMEM;
    }
    *buf = io.p;
    *len = io.n;
    return 0;
}

int an_results_decode(const uint8_t *buf, size_t len, struct an_rank_result *out, int n, struct hm_err *err)
{
    struct io io = {.reading = 1, .p = (uint8_t *)buf, .n = len, .at = HEAD_LEN};
    uint64_t count = 0;

    memset(out, 0, (size_t)n * sizeof *out);
    if (len < HEAD_LEN || memcmp(buf, "HMA", 3) != 0 || buf[3] != CODEC_VERSION)
        return hm_err_set(err, HM_EFORMAT, NULL, 0, "analysis results: not version %d of this format",
                          CODEC_VERSION);
    xfer_u64(&io, &count);
    if (!io.bad && count != (uint64_t)n)
        return hm_err_set(err, HM_EFORMAT, NULL, HEAD_LEN, "analysis results: %llu, expected %d",
                          (unsigned long long)count, n);
    for (int i = 0; i < n && !failed(&io); i++)
        xfer_result(&io, &out[i]);
    if (!failed(&io) && io.at != len)
        io.bad = 1;
    if (!failed(&io))
        return 0;
    for (int i = 0; i < n; i++)
        an_rank_result_clear(&out[i]);
    if (io.oom)
        return hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");
    return hm_err_set(err, HM_EFORMAT, NULL, (int64_t)io.at, "analysis results: malformed");
}

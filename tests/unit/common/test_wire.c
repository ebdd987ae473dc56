/* Tests for common/wire.c: exact round trips (every record kind, extreme
 * values, empty and large batches), version and flag handling, and the
 * fault twin: truncations, byte flips, hand-built malformed sections with
 * the offsets they must report, and checksum mismatches. */
#include "test.h"

#include <math.h>
#include <stdint.h>
#include <zlib.h>

#include "common/batch.h"
#include "common/err.h"
#include "common/wire.h"

/* ---- Helpers ---- */

static uint64_t rng_state = 0x9e3779b97f4a7c15u;

static uint64_t rnd(void)
{
    /* xorshift64*: fixed seed, so every run tests the same inputs. */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 2685821657736338717u;
}

static hm_strid S(struct hm_batch *b, const char *s)
{
    return hm_batch_intern(b, s, strlen(s));
}

static int same_double(double a, double b)
{
    return memcmp(&a, &b, sizeof a) == 0;
}

static int info_diff(const struct hm_rank_info *a, const struct hm_rank_info *b)
{
    int d = a->rank != b->rank || a->world_size != b->world_size ||
            a->base_time_ns != b->base_time_ns || a->pid != b->pid ||
            a->rank_source != b->rank_source || a->backend != b->backend ||
            a->hostname != b->hostname || a->source_file != b->source_file ||
            a->pg_config != b->pg_config || a->device_props != b->device_props ||
            a->nccl_version != b->nccl_version || a->trace_meta != b->trace_meta ||
            a->flags != b->flags;
    for (int i = 0; i < HM_SKIP__COUNT; i++)
        d += a->skipped[i] != b->skipped[i];
    return d;
}

/* Compares two batches field by field (strings by id and by bytes);
 * returns the number of differences. */
static int batch_diff(const struct hm_batch *a, const struct hm_batch *b)
{
    int d = 0;
    uint32_t ns = hm_strtab_count(a->strings);

    d += ns != hm_strtab_count(b->strings);
    for (uint32_t i = 0; i < ns && !d; i++) {
        size_t la, lb;
        const char *sa = hm_strtab_get(a->strings, i, &la), *sb = hm_strtab_get(b->strings, i, &lb);
        d += la != lb || memcmp(sa, sb, la) != 0;
    }
    d += info_diff(&a->info, &b->info);
    d += a->source_bytes != b->source_bytes;
    d += a->tracks.n != b->tracks.n || a->slices.n != b->slices.n ||
         a->collectives.n != b->collectives.n || a->counters.n != b->counters.n ||
         a->steps.n != b->steps.n;
    if (d)
        return d;
    for (size_t i = 0; i < a->tracks.n; i++) {
        const struct hm_track *x = &a->tracks.v[i], *y = &b->tracks.v[i];
        d += x->kind != y->kind || x->pid != y->pid || x->tid != y->tid || x->name != y->name;
    }
    for (size_t i = 0; i < a->slices.n; i++) {
        const struct hm_slice *x = &a->slices.v[i], *y = &b->slices.v[i];
        d += x->ts != y->ts || x->dur != y->dur || x->correlation != y->correlation ||
             x->external_id != y->external_id || x->bytes != y->bytes || x->track != y->track ||
             x->name != y->name || x->cat_name != y->cat_name || x->args != y->args ||
             x->cat != y->cat || x->flags != y->flags || x->iteration != y->iteration;
    }
    for (size_t i = 0; i < a->collectives.n; i++) {
        const struct hm_collective *x = &a->collectives.v[i], *y = &b->collectives.v[i];
        d += x->slice != y->slice || x->op != y->op || x->pg_name != y->pg_name ||
             x->pg_desc != y->pg_desc || x->pg_ranks != y->pg_ranks || x->dtype != y->dtype ||
             x->comms_id != y->comms_id || x->seq != y->seq || x->in_nelems != y->in_nelems ||
             x->out_nelems != y->out_nelems || x->group_size != y->group_size;
    }
    for (size_t i = 0; i < a->counters.n; i++) {
        const struct hm_counter *x = &a->counters.v[i], *y = &b->counters.v[i];
        d += x->ts != y->ts || !same_double(x->value, y->value) || x->name != y->name ||
             x->device != y->device;
    }
    for (size_t i = 0; i < a->steps.n; i++) {
        const struct hm_step *x = &a->steps.v[i], *y = &b->steps.v[i];
        d += x->number != y->number || x->ts != y->ts || x->dur != y->dur || x->slice != y->slice;
    }
    return d;
}

/* Encodes then decodes b; returns the decoded batch (NULL on failure). */
static struct hm_batch *round_trip(const struct hm_batch *b, size_t *enc_len)
{
    struct hm_err err;
    struct hm_batch *out = NULL;
    uint8_t *buf;
    size_t len;
    int rc;

    hm_err_clear(&err);
    rc = hm_wire_encode(b, &buf, &len, &err);
    CHECK_EQ_INT(rc, 0);
    if (rc)
        return NULL;
    if (enc_len)
        *enc_len = len;
    rc = hm_wire_decode(buf, len, &out, &err);
    CHECK_EQ_INT(rc, 0);
    if (rc)
        fprintf(stderr, "decode: offset %lld: %s\n", (long long)err.offset, err.msg);
    free(buf);
    return out;
}

/* A small batch with every record kind and every field set, including
 * HM_NONE, negative and extreme values, NaN and infinities. */
static struct hm_batch *full_batch(void)
{
    struct hm_batch *b = hm_batch_new();
    struct hm_rank_info *in = &b->info;
    struct hm_slice *s;
    struct hm_collective *c;
    struct hm_counter *k;
    struct hm_step *st;
    const double vals[] = { 0.0, -0.0, 1.5e300, -4.9e-324, NAN, -NAN, INFINITY, -INFINITY, 42.25 };
    const int64_t ts[] = { 1700000000000000000, INT64_MIN, INT64_MAX, -5, 0, INT64_MAX, INT64_MIN };

    in->rank = 3;
    in->world_size = 8;
    in->base_time_ns = INT64_MIN;
    in->pid = INT64_MAX;
    in->rank_source = S(b, "distributedInfo");
    in->backend = S(b, "nccl");
    in->hostname = S(b, "node-07");
    in->source_file = S(b, "/traces/rank3.pt.trace.json.gz");
    in->pg_config = S(b, "[{\"pg_name\":\"0\"}]");
    in->device_props = 0;
    in->nccl_version = S(b, "2.21.5");
    in->trace_meta = hm_batch_intern(b, "bin\0ary\xff", 8);
    in->flags = HM_INFO_F_FRACTIONAL_TS | 0x80000000u;
    b->source_bytes = UINT64_MAX - 1;
    for (int i = 0; i < HM_SKIP__COUNT; i++)
        in->skipped[i] = i == 2 ? UINT64_MAX : (uint64_t)i * 1000 + 1;

    hm_batch_track(b, HM_TRACK_CPU_THREAD, 4242, 4242);
    hm_batch_track(b, HM_TRACK_GPU_STREAM, 0, 7);
    hm_batch_track(b, UINT32_MAX, INT64_MIN, INT64_MAX);
    b->tracks.v[0].name = S(b, "python main thread");
    b->tracks.v[1].name = S(b, "stream 7");

    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) {
        s = HM_VEC_PUSH(b->slices);
        s->ts = ts[i];
        s->dur = i == 3 ? INT64_MAX : i == 4 ? -1 : (int64_t)i * 1000;
        s->correlation = i % 2 ? HM_NONE : INT64_MIN + (int64_t)i;
        s->external_id = i % 3 ? HM_NONE : (int64_t)i * 77;
        s->bytes = i == 5 ? INT64_MAX : HM_NONE;
        s->track = (uint32_t)(i % 3);
        s->name = S(b, i % 2 ? "ncclDevKernel_AllReduce_Sum_f32_RING_LL" : "aten::mm");
        s->cat_name = S(b, i % 2 ? "kernel" : "cpu_op");
        s->cat = i % 2 ? HM_CAT_KERNEL : HM_CAT_CPU_OP;
        s->flags = i == 3 ? UINT16_MAX : i % 2 ? HM_SLICE_F_STREAM_ARG : 0;
        s->args = i == 0 ? 0 : S(b, "{\"Input Dims\":[[2,3]],\"Seq\":17}");
        s->iteration = i == 6 ? INT32_MIN : i == 5 ? INT32_MAX : HM_NONE;
    }
    c = HM_VEC_PUSH(b->collectives);
    c->slice = 1;
    c->op = S(b, "allreduce");
    c->pg_name = S(b, "0");
    c->pg_desc = S(b, "default_pg");
    c->pg_ranks = S(b, "[0, 1, 2, 3, 4, 5, 6, 7]");
    c->dtype = S(b, "Float");
    c->comms_id = 0;
    c->seq = 17;
    c->in_nelems = INT64_MAX;
    c->out_nelems = HM_NONE;
    c->group_size = 8;
    c = HM_VEC_PUSH(b->collectives);
    c->slice = 6;
    c->seq = INT64_MIN;
    c->in_nelems = c->out_nelems = c->group_size = HM_NONE;

    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) {
        k = HM_VEC_PUSH(b->counters);
        k->ts = i % 2 ? INT64_MIN + (int64_t)i : 1000 - (int64_t)i * 300;
        k->value = vals[i];
        k->name = S(b, i % 2 ? "Total Reserved" : "Total Allocated");
        k->device = i == 0 ? -1 : i == 1 ? INT32_MIN : i == 2 ? INT32_MAX : (int32_t)i;
    }
    st = HM_VEC_PUSH(b->steps);
    st->number = 5;
    st->ts = 1700000000000000000;
    st->dur = 123456789;
    st->slice = 0;
    st = HM_VEC_PUSH(b->steps);
    st->number = INT64_MIN;
    st->ts = INT64_MAX;
    st->dur = INT64_MIN;
    st->slice = 6;
    return b;
}

/* ---- Round trips ---- */

static void test_full_round_trip(void)
{
    struct hm_batch *b = full_batch(), *out;
    size_t len = 0;

    out = round_trip(b, &len);
    CHECK(out != NULL);
    if (out) {
        CHECK_EQ_INT(batch_diff(b, out), 0);
        CHECK_EQ_INT(out->info.rank, 3);
        CHECK(isnan(out->counters.v[4].value));
        CHECK(isinf(out->counters.v[7].value) && out->counters.v[7].value < 0);
        CHECK(signbit(out->counters.v[1].value));
        CHECK_EQ_INT(out->slices.v[1].ts, INT64_MIN);
        CHECK_EQ_INT(out->slices.v[2].ts, INT64_MAX);
        CHECK_EQ_INT(out->slices.v[6].iteration, INT32_MIN);
        CHECK_STR(hm_batch_str(out, out->info.hostname), "node-07");
        CHECK_EQ_INT(out->info.skipped[2], UINT64_MAX);
        CHECK_STR(hm_batch_str(out, out->collectives.v[0].pg_ranks), "[0, 1, 2, 3, 4, 5, 6, 7]");
    }
    hm_batch_free(out);
    hm_batch_free(b);
}

/* Strings appended without dedup (args JSON) may repeat a text, interned
 * or appended: the ids and texts survive a round trip. */
static void test_appended_round_trip(void)
{
    struct hm_batch *b = full_batch(), *out;
    const char *args = "{\"External id\":7}";
    hm_strid a1 = hm_strtab_append(b->strings, args, strlen(args));
    hm_strid a2 = hm_strtab_append(b->strings, args, strlen(args));
    hm_strid named = S(b, "node-07");
    hm_strid a3 = hm_strtab_append(b->strings, "node-07", 7);
    hm_strid i1 = S(b, args);

    CHECK(a1 != a2 && a2 != i1 && a1 != i1 && a3 != named);
    CHECK_EQ_INT(named, b->info.hostname);   /* interning still finds the interned copy */
    b->slices.v[0].args = a1;
    b->slices.v[1].args = a2;
    b->slices.v[2].args = i1;
    b->slices.v[3].args = a3;
    out = round_trip(b, NULL);
    CHECK(out != NULL);
    if (out) {
        CHECK_EQ_INT(batch_diff(b, out), 0);
        CHECK_STR(hm_batch_str(out, out->slices.v[1].args), args);
        CHECK_STR(hm_batch_str(out, out->slices.v[3].args), "node-07");
        /* Appended strings are appended again, unhashed (1.1's flags):
         * the decoded table interns to the interned copy, as the writer's. */
        CHECK(hm_strtab_appended(out->strings, a1) && hm_strtab_appended(out->strings, a3));
        CHECK(!hm_strtab_appended(out->strings, i1) && !hm_strtab_appended(out->strings, named));
        CHECK_EQ_INT(S(out, args), i1);
        CHECK_EQ_INT(S(out, "node-07"), named);
    }
    hm_batch_free(out);
    hm_batch_free(b);
}

/* 1.1's string flags: bytes after the strings, which a 1.0 message may
 * not have, and which must hold a bit for every string. */
static void fix_crc(uint8_t *buf, size_t len);

static void test_string_flags(void)
{
    struct hm_batch *b = full_batch(), *out = NULL;
    struct hm_err err;
    uint8_t *buf = NULL;
    size_t len = 0;

    hm_strtab_append(b->strings, "{\"a\":1}", 7);
    CHECK_EQ_INT(hm_wire_encode(b, &buf, &len, &err), 0);
    CHECK_EQ_INT(buf[4], 1);
    buf[4] = 0; /* the same bytes from a 1.0 writer: the flags are extra bytes */
    fix_crc(buf, len);
    CHECK_EQ_INT(hm_wire_decode(buf, len, &out, &err), HM_EFORMAT);
    CHECK_CONTAINS(err.msg, "strings: unexpected bytes at the end of a section");
    CHECK(out == NULL);
    free(buf);
    hm_batch_free(b);

    b = hm_batch_new(); /* one string, appended: its section is uv 1 | uv 1 "x" | flags 0x01 */
    hm_strtab_append(b->strings, "x", 1);
    CHECK_EQ_INT(hm_wire_encode(b, &buf, &len, &err), 0);
    size_t at = 0;
    for (size_t i = HM_WIRE_HEADER_SIZE; i + 4 < len && !at; i++)
        if (buf[i] == 1 && buf[i + 1] == 4 && buf[i + 2] == 1 && buf[i + 3] == 1 && buf[i + 4] == 'x')
            at = i;
    CHECK(at && buf[at + 5] == 1);
    if (at) {
        buf[at + 1] = 3; /* the section ends before its flags: a 1.1 reader sees none */
        memmove(buf + at + 5, buf + at + 6, len - at - 6);
        len--;
        uint64_t payload = 0;
        for (int i = 0; i < 8; i++)
            payload |= (uint64_t)buf[16 + i] << (8 * i);
        payload--;
        for (int i = 0; i < 8; i++)
            buf[16 + i] = (uint8_t)(payload >> (8 * i));
        fix_crc(buf, len);
        CHECK_EQ_INT(hm_wire_decode(buf, len, &out, &err), 0);
        CHECK(out && !hm_strtab_appended(out->strings, 1) && !strcmp(hm_batch_str(out, 1), "x"));
    }
    hm_batch_free(out);
    free(buf);
    hm_batch_free(b);
}

static void test_empty_round_trip(void)
{
    struct hm_batch *b = hm_batch_new(), *out;
    struct hm_wire_header h;
    struct hm_err err;
    uint8_t *buf;
    size_t len = 0;

    out = round_trip(b, &len);
    CHECK(out != NULL);
    if (out)
        CHECK_EQ_INT(batch_diff(b, out), 0);
    if (out)
        CHECK_EQ_INT(out->info.rank, HM_NONE);
    CHECK(len < 80);
    hm_batch_free(out);

    CHECK_EQ_INT(hm_wire_encode(b, &buf, &len, &err), 0);
    CHECK_EQ_INT(hm_wire_peek(buf, len, &h, &err), 0);
    CHECK_EQ_INT(h.major, HM_WIRE_MAJOR);
    CHECK_EQ_INT(h.minor, HM_WIRE_MINOR);
    CHECK_EQ_INT(h.rank, HM_NONE);
    CHECK_EQ_INT(h.total_len, len);
    CHECK_EQ_INT(h.header_len, HM_WIRE_HEADER_SIZE);
    free(buf);
    hm_batch_free(b);
}

/* A large batch shaped like a real trace: many tracks and names, mostly
 * increasing times, realistic durations and ids, a few odd values. */
static struct hm_batch *big_batch(size_t nslices)
{
    struct hm_batch *b = hm_batch_new();
    hm_strid names[2000];
    char buf[64];
    int64_t ts = 1700000000000000000, corr = 1000000;

    b->info.rank = 5;
    for (int i = 0; i < 2000; i++) {
        int n = snprintf(buf, sizeof buf, "void at::native::kernel_%d<float, %d>()", i, i % 7);
        names[i] = hm_batch_intern(b, buf, (size_t)n);
    }
    for (int i = 0; i < 24; i++)
        hm_batch_track(b, i % 3 ? HM_TRACK_GPU_STREAM : HM_TRACK_CPU_THREAD, 1234, 7 + i);
    for (size_t i = 0; i < nslices; i++) {
        struct hm_slice *s = HM_VEC_PUSH(b->slices);
        uint64_t r = rnd();
        ts += (int64_t)(r % 20000) - (r % 50 == 0 ? 300000 : 0); /* some go back */
        s->ts = r % 100000 == 7 ? INT64_MIN : ts;
        s->dur = (int64_t)(rnd() % 60000);
        s->track = (uint32_t)(r >> 40) % 24;
        s->name = names[(r >> 20) % 2000];
        s->cat_name = (hm_strid)((r >> 12) % 5);
        s->cat = (uint16_t)((r >> 8) % HM_CAT__COUNT);
        s->flags = hm_cat_is_gpu(s->cat) ? HM_SLICE_F_STREAM_ARG : 0;
        s->args = r % 10 == 0 ? names[r % 2000] : 0;
        s->correlation = r % 4 ? corr++ : HM_NONE;
        s->external_id = r % 3 ? (int64_t)(r % 500000) : HM_NONE;
        s->bytes = r % 17 == 0 ? (int64_t)(r >> 33) : HM_NONE;
        s->iteration = (int32_t)(i / 5000);
    }
    for (size_t i = 0; i < nslices / 20; i++) {
        struct hm_collective *c = HM_VEC_PUSH(b->collectives);
        c->slice = (uint32_t)(rnd() % nslices);
        c->op = names[rnd() % 2000];
        c->pg_name = names[1];
        c->seq = (int64_t)i;
        c->in_nelems = (int64_t)(rnd() % 100000000);
        c->out_nelems = c->in_nelems;
        c->group_size = 8;
    }
    for (size_t i = 0; i < nslices / 20; i++) {
        struct hm_counter *k = HM_VEC_PUSH(b->counters);
        k->ts = ts - (int64_t)(rnd() % 1000000);
        k->value = (double)(rnd() >> 11) * 0x1p-53 * 8e10;
        k->name = names[2 + i % 2];
        k->device = (int32_t)(i % 9) - 1;
    }
    for (size_t i = 0; i < 40; i++) {
        struct hm_step *st = HM_VEC_PUSH(b->steps);
        st->number = (int64_t)i;
        st->ts = 1700000000000000000 + (int64_t)i * 100000000;
        st->dur = 99000000;
        st->slice = (uint32_t)(rnd() % nslices);
    }
    return b;
}

static void test_big_round_trip(void)
{
    enum { N = 200000 };
    struct hm_batch *b = big_batch(N), *out;
    size_t len = 0;

    out = round_trip(b, &len);
    CHECK(out != NULL);
    if (out)
        CHECK_EQ_INT(batch_diff(b, out), 0);
    fprintf(stderr, "big batch: %d slices (+%d other records), %zu bytes, %.1f bytes per slice\n",
            N, N / 10, len, (double)len / N);
    CHECK(len < (size_t)N * 25);
    hm_batch_free(out);
    hm_batch_free(b);
}

/* ---- Encoder checks ---- */

static void test_encode_refuses_dangling(void)
{
    struct hm_batch *b = full_batch();
    struct hm_err err;
    uint8_t *buf = (uint8_t *)&err;
    size_t len = 1;

    b->slices.v[2].track = (uint32_t)b->tracks.n;
    CHECK_EQ_INT(hm_wire_encode(b, &buf, &len, &err), HM_EINVAL);
    CHECK(buf == NULL);
    CHECK_EQ_INT(len, 0);
    b->slices.v[2].track = 0;
    b->collectives.v[1].pg_desc = hm_strtab_count(b->strings);
    CHECK_EQ_INT(hm_wire_encode(b, &buf, &len, &err), HM_EINVAL);
    b->collectives.v[1].pg_desc = 0;
    b->steps.v[0].slice = (uint32_t)b->slices.n;
    CHECK_EQ_INT(hm_wire_encode(b, &buf, &len, &err), HM_EINVAL);
    CHECK_CONTAINS(err.msg, "step 0");
    b->steps.v[0].slice = 0;
    CHECK_EQ_INT(hm_wire_encode(b, &buf, &len, &err), 0);
    free(buf);
    hm_batch_free(b);
}

/* ---- Hand-built messages ---- */

struct msg {
    uint8_t b[4096];
    size_t n;
};

static void m_bytes(struct msg *m, const void *p, size_t n)
{
    memcpy(m->b + m->n, p, n);
    m->n += n;
}

static void m_uv(struct msg *m, uint64_t v)
{
    while (v >= 0x80) {
        m->b[m->n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    m->b[m->n++] = (uint8_t)v;
}

static void m_sv(struct msg *m, int64_t v)
{
    m_uv(m, ((uint64_t)v << 1) ^ (v < 0 ? UINT64_MAX : 0));
}

/* Appends section (id, body) to a payload; returns the payload offset of
 * the body. */
static size_t m_section(struct msg *payload, uint64_t id, const struct msg *body)
{
    size_t at;
    m_uv(payload, id);
    m_uv(payload, body->n);
    at = payload->n;
    m_bytes(payload, body->b, body->n);
    return at;
}

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

/* Frames a payload as a message with a correct checksum; returns a
 * malloc'd buffer of exactly *len bytes (so ASan sees any overread). */
static uint8_t *m_frame(const struct msg *payload, uint32_t nsec, uint8_t minor, uint8_t flags,
                        uint16_t hdr_len, size_t *len)
{
    uint8_t *buf;
    uint64_t plen = payload->n;

    *len = hdr_len + payload->n + 4;
    buf = calloc(1, *len);
    memcpy(buf, "HMB", 3);
    buf[3] = HM_WIRE_MAJOR;
    buf[4] = minor;
    buf[5] = flags;
    buf[6] = (uint8_t)hdr_len;
    buf[7] = (uint8_t)(hdr_len >> 8);
    put32(buf + 8, 2);
    put32(buf + 12, nsec);
    put32(buf + 16, (uint32_t)plen);
    put32(buf + 20, (uint32_t)(plen >> 32));
    memcpy(buf + hdr_len, payload->b, payload->n);
    put32(buf + hdr_len + payload->n, (uint32_t)crc32(0, buf, (uInt)(hdr_len + payload->n)));
    return buf;
}

/* Recomputes the trailer after a test edited a message. */
static void fix_crc(uint8_t *buf, size_t len)
{
    put32(buf + len - 4, (uint32_t)crc32(0, buf, (uInt)(len - 4)));
}

/* Section bodies of a tiny valid batch: strings "a","b" (ids 1,2), one
 * track, two slices, one collective, one counter, one step. */
struct parts {
    struct msg strings, info, tracks, slices, colls, counters, steps;
};

static void parts_init(struct parts *p)
{
    memset(p, 0, sizeof *p);
    m_uv(&p->strings, 2);
    m_uv(&p->strings, 1);
    m_bytes(&p->strings, "a", 1);
    m_uv(&p->strings, 1);
    m_bytes(&p->strings, "b", 1);
    m_sv(&p->info, 8);
    m_sv(&p->info, -1);
    m_sv(&p->info, 99);
    for (int i = 0; i < 8; i++)
        m_uv(&p->info, i % 3);
    m_uv(&p->info, 1);     /* flags */
    m_uv(&p->info, 4096);  /* source_bytes: 2 bytes */
    m_uv(&p->info, 0);
    m_uv(&p->tracks, 1);
    m_uv(&p->tracks, 0), m_sv(&p->tracks, 1), m_sv(&p->tracks, 2), m_uv(&p->tracks, 1);
    m_uv(&p->slices, 2);
    for (int i = 0; i < 2; i++) {
        m_sv(&p->slices, 10), m_sv(&p->slices, 50), m_uv(&p->slices, 0), m_uv(&p->slices, 1);
        m_uv(&p->slices, 2), m_uv(&p->slices, 4), m_uv(&p->slices, 1), m_uv(&p->slices, 0);
        m_sv(&p->slices, -1);
        m_sv(&p->slices, -1), m_sv(&p->slices, -1), m_sv(&p->slices, 3);
    }
    m_uv(&p->colls, 1);
    m_uv(&p->colls, 1);
    for (int i = 0; i < 6; i++)
        m_uv(&p->colls, 2);
    for (int i = 0; i < 4; i++)
        m_sv(&p->colls, 7);
    m_uv(&p->counters, 1);
    m_sv(&p->counters, 5);
    m_bytes(&p->counters, "\0\0\0\0\0\0\xf0\x3f", 8); /* 1.0 */
    m_uv(&p->counters, 1);
    m_sv(&p->counters, -1);
    m_uv(&p->steps, 1);
    m_sv(&p->steps, 4), m_sv(&p->steps, 50), m_sv(&p->steps, 10), m_uv(&p->steps, 1);
}

/* Decodes a message framed from the parts (in order, with an optional
 * extra section after the k-th); returns the code and the reported
 * offset. body_at[i] is the message offset of section i's body. */
static int decode_parts(const struct parts *p, uint8_t minor, int64_t *offset, size_t body_at[7],
                        struct hm_err *err)
{
    const struct msg *secs[7] = { &p->strings, &p->info, &p->tracks, &p->slices,
                                  &p->colls, &p->counters, &p->steps };
    struct msg payload = { .n = 0 };
    struct hm_batch *out = NULL;
    uint8_t *buf;
    size_t len;
    int rc;

    for (int i = 0; i < 7; i++)
        body_at[i] = HM_WIRE_HEADER_SIZE + m_section(&payload, (uint64_t)i + 1, secs[i]);
    buf = m_frame(&payload, 7, minor, 0, HM_WIRE_HEADER_SIZE, &len);
    hm_err_clear(err);
    rc = hm_wire_decode(buf, len, &out, err);
    *offset = err->offset;
    if (rc == 0) {
        CHECK(out != NULL);
        CHECK_EQ_INT(out->slices.n, 2);
        CHECK_EQ_INT(out->info.rank, 2);
    } else {
        CHECK(out == NULL);
    }
    hm_batch_free(out);
    free(buf);
    return rc;
}

/* Each malformed field is reported as a format error at its own offset. */
static void test_bad_fields(void)
{
    struct parts p;
    struct hm_err err;
    size_t at[7];
    int64_t off;

    parts_init(&p);
    CHECK_EQ_INT(decode_parts(&p, 0, &off, at, &err), 0);

    /* slice 1's track (count byte, 12-byte slice 0, field 3) = 1 of 1 */
    parts_init(&p);
    p.slices.b[1 + 12 + 2] = 1;
    CHECK_EQ_INT(decode_parts(&p, 0, &off, at, &err), HM_EFORMAT);
    CHECK_EQ_INT(off, at[3] + 1 + 12 + 2);
    CHECK_CONTAINS(err.msg, "slices: slice track index out of range");

    parts_init(&p); /* slice 0's name = 3 of 3 strings */
    p.slices.b[1 + 3] = 3;
    CHECK_EQ_INT(decode_parts(&p, 0, &off, at, &err), HM_EFORMAT);
    CHECK_EQ_INT(off, at[3] + 1 + 3);
    CHECK_CONTAINS(err.msg, "string id out of range");

    parts_init(&p); /* slice 1's iteration does not fit 32 bits */
    p.slices.n -= 1;
    m_sv(&p.slices, (int64_t)INT32_MAX + 1);
    CHECK_EQ_INT(decode_parts(&p, 0, &off, at, &err), HM_EFORMAT);
    CHECK_EQ_INT(off, at[3] + 1 + 12 + 11);

    parts_init(&p); /* collective's slice = 2 of 2 */
    p.colls.b[1] = 2;
    CHECK_EQ_INT(decode_parts(&p, 0, &off, at, &err), HM_EFORMAT);
    CHECK_EQ_INT(off, at[4] + 1);
    CHECK_CONTAINS(err.msg, "collective slice index out of range");

    parts_init(&p); /* step's slice = 2 of 2 */
    p.steps.b[4] = 2;
    CHECK_EQ_INT(decode_parts(&p, 0, &off, at, &err), HM_EFORMAT);
    CHECK_EQ_INT(off, at[6] + 4);
    CHECK_CONTAINS(err.msg, "steps: step slice index out of range");

    parts_init(&p); /* counter's name = 3 */
    p.counters.b[1 + 1 + 8] = 3;
    CHECK_EQ_INT(decode_parts(&p, 0, &off, at, &err), HM_EFORMAT);
    CHECK_EQ_INT(off, at[5] + 10);

    parts_init(&p); /* track name = 9 */
    p.tracks.b[4] = 9;
    CHECK_EQ_INT(decode_parts(&p, 0, &off, at, &err), HM_EFORMAT);
    CHECK_EQ_INT(off, at[2] + 4);

    parts_init(&p); /* info's first string id (after 1+1+2 bytes of numbers) = 3 of 3 */
    p.info.b[4] = 3;
    CHECK_EQ_INT(decode_parts(&p, 0, &off, at, &err), HM_EFORMAT);
    CHECK_EQ_INT(off, at[1] + 4);
    CHECK_CONTAINS(err.msg, "info: rank info string id out of range");

    parts_init(&p); /* counter device = 2^31 */
    p.counters.n -= 1;
    m_sv(&p.counters, (int64_t)INT32_MAX + 1);
    CHECK_EQ_INT(decode_parts(&p, 0, &off, at, &err), HM_EFORMAT);
    CHECK_EQ_INT(off, at[5] + 11);
}

static void test_bad_strings(void)
{
    struct parts p;
    struct hm_err err;
    size_t at[7];
    int64_t off;

    parts_init(&p); /* "a","a": a repeat (appended strings) is legal */
    p.strings.b[4] = 'a';
    CHECK_EQ_INT(decode_parts(&p, 0, &off, at, &err), 0);

    parts_init(&p); /* an empty string after id 0 */
    memset(&p.strings, 0, sizeof p.strings);
    m_uv(&p.strings, 2), m_uv(&p.strings, 1), m_bytes(&p.strings, "a", 1), m_uv(&p.strings, 0);
    m_uv(&p.strings, 0);
    CHECK_EQ_INT(decode_parts(&p, 0, &off, at, &err), HM_EFORMAT);
    CHECK_EQ_INT(off, at[0] + 3);

    parts_init(&p); /* second string's length runs past the section */
    p.strings.b[3] = 2;
    CHECK_EQ_INT(decode_parts(&p, 0, &off, at, &err), HM_EFORMAT);
    CHECK_EQ_INT(off, at[0] + 3);

    parts_init(&p); /* binary strings with NULs round trip */
    memset(&p.strings, 0, sizeof p.strings);
    m_uv(&p.strings, 2), m_uv(&p.strings, 2), m_bytes(&p.strings, "a\0", 2);
    m_uv(&p.strings, 1), m_bytes(&p.strings, "a", 1);
    CHECK_EQ_INT(decode_parts(&p, 0, &off, at, &err), 0);
}

/* Declared counts and lengths that do not fit are refused before any
 * allocation; varints longer than 64 bits are refused. */
static void test_bad_lengths(void)
{
    struct parts p;
    struct hm_err err;
    size_t at[7];
    int64_t off;

    parts_init(&p); /* 2^40 slices in a section of 23 bytes */
    memset(&p.slices, 0, sizeof p.slices);
    m_uv(&p.slices, (uint64_t)1 << 40);
    CHECK_EQ_INT(decode_parts(&p, 0, &off, at, &err), HM_EFORMAT);
    CHECK_EQ_INT(off, at[3]);
    CHECK_CONTAINS(err.msg, "record count");

    parts_init(&p); /* UINT64_MAX skipped-count entries */
    p.info.n -= 1;
    m_uv(&p.info, UINT64_MAX);
    CHECK_EQ_INT(decode_parts(&p, 0, &off, at, &err), HM_EFORMAT);
    CHECK_EQ_INT(off, at[1] + 15);

    parts_init(&p); /* an 11-byte varint */
    memset(&p.tracks, 0, sizeof p.tracks);
    m_uv(&p.tracks, 1);
    m_bytes(&p.tracks, "\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 11);
    m_sv(&p.tracks, 1), m_sv(&p.tracks, 2), m_uv(&p.tracks, 1);
    CHECK_EQ_INT(decode_parts(&p, 0, &off, at, &err), HM_EFORMAT);
    CHECK_EQ_INT(off, at[2] + 1);
    CHECK_CONTAINS(err.msg, "overflows");

    parts_init(&p); /* a 10-byte varint of 2^64 and more */
    memset(&p.tracks, 0, sizeof p.tracks);
    m_uv(&p.tracks, 1);
    m_bytes(&p.tracks, "\xff\xff\xff\xff\xff\xff\xff\xff\xff\x02", 10);
    m_sv(&p.tracks, 1), m_sv(&p.tracks, 2), m_uv(&p.tracks, 1);
    CHECK_EQ_INT(decode_parts(&p, 0, &off, at, &err), HM_EFORMAT);
    CHECK_EQ_INT(off, at[2] + 1);
    CHECK_CONTAINS(err.msg, "overflows");

    parts_init(&p); /* a 10-byte varint of 2^64-1 is fine for pid */
    memset(&p.tracks, 0, sizeof p.tracks);
    m_uv(&p.tracks, 1), m_uv(&p.tracks, 0), m_uv(&p.tracks, UINT64_MAX), m_sv(&p.tracks, 2);
    m_uv(&p.tracks, 1);
    CHECK_EQ_INT(decode_parts(&p, 0, &off, at, &err), 0);

    parts_init(&p); /* two slices cannot fit in 21 bytes */
    p.slices.n -= 3;
    CHECK_EQ_INT(decode_parts(&p, 0, &off, at, &err), HM_EFORMAT);
    CHECK_EQ_INT(off, at[3]);
    CHECK_CONTAINS(err.msg, "record count");

    parts_init(&p); /* one slice with wide fields, cut short by its section */
    memset(&p.slices, 0, sizeof p.slices);
    m_uv(&p.slices, 1), m_sv(&p.slices, 1000000), m_sv(&p.slices, 1000000);
    m_uv(&p.slices, 0), m_uv(&p.slices, 1), m_uv(&p.slices, 2), m_uv(&p.slices, 4);
    m_uv(&p.slices, 0), m_uv(&p.slices, 0), m_sv(&p.slices, -1), m_sv(&p.slices, -1);
    /* no bytes, no iteration */
    CHECK_EQ_INT(decode_parts(&p, 0, &off, at, &err), HM_EFORMAT);
    CHECK_EQ_INT(off, at[3] + p.slices.n);
    CHECK_CONTAINS(err.msg, "slices: record runs past the end of its section");

    parts_init(&p); /* a counter whose value is cut to 7 bytes by its section */
    memset(&p.counters, 0, sizeof p.counters);
    m_uv(&p.counters, 1), m_sv(&p.counters, (int64_t)1 << 40);
    m_bytes(&p.counters, "\0\0\0\0\0\0\xf0", 7);
    CHECK_EQ_INT(decode_parts(&p, 0, &off, at, &err), HM_EFORMAT);
    CHECK_EQ_INT(off, at[5] + 7);
    CHECK_CONTAINS(err.msg, "counters: record runs past the end of its section");

    parts_init(&p); /* trailing bytes in a section: refused from minor 0 ... */
    m_uv(&p.steps, 5);
    CHECK_EQ_INT(decode_parts(&p, 0, &off, at, &err), HM_EFORMAT);
    CHECK_EQ_INT(off, at[6] + p.steps.n - 1);
    /* ... skipped from a newer minor (fields appended by a later version) */
    CHECK_EQ_INT(decode_parts(&p, HM_WIRE_MINOR + 1, &off, at, &err), 0);
}

/* Section order, repetition, unknown ids, section counts, header length
 * and flags. */
static void test_sections(void)
{
    struct parts p;
    struct msg pay = { .n = 0 }, unknown = { .n = 0 };
    struct hm_batch *out = NULL;
    struct hm_err err;
    uint8_t *buf;
    size_t len, at;
    int rc;

    parts_init(&p);
    m_bytes(&unknown, "future", 6);
    m_section(&pay, 1, &p.strings);
    m_section(&pay, 200, &unknown);   /* unknown: skipped */
    m_section(&pay, 4, &p.slices);    /* refers to track 0: no tracks yet */
    buf = m_frame(&pay, 3, 0, 0, HM_WIRE_HEADER_SIZE, &len);
    CHECK_EQ_INT(hm_wire_decode(buf, len, &out, &err), HM_EFORMAT);
    CHECK_CONTAINS(err.msg, "track index");
    free(buf);

    pay.n = 0;
    m_section(&pay, 1, &p.strings);
    m_section(&pay, 200, &unknown);
    m_section(&pay, 3, &p.tracks);
    at = HM_WIRE_HEADER_SIZE + pay.n;
    m_section(&pay, 1, &p.strings);   /* out of order */
    buf = m_frame(&pay, 4, 0, 0, HM_WIRE_HEADER_SIZE, &len);
    CHECK_EQ_INT(hm_wire_decode(buf, len, &out, &err), HM_EFORMAT);
    CHECK_EQ_INT(err.offset, at);
    CHECK_CONTAINS(err.msg, "out of order");
    free(buf);

    /* the same, but declared as 3 sections: bytes after the last one */
    buf = m_frame(&pay, 3, 0, 0, HM_WIRE_HEADER_SIZE, &len);
    CHECK_EQ_INT(hm_wire_decode(buf, len, &out, &err), HM_EFORMAT);
    CHECK_EQ_INT(err.offset, at);
    free(buf);

    /* declared as 5: fewer sections than declared */
    pay.n = at - HM_WIRE_HEADER_SIZE;
    buf = m_frame(&pay, 5, 0, 0, HM_WIRE_HEADER_SIZE, &len);
    CHECK_EQ_INT(hm_wire_decode(buf, len, &out, &err), HM_EFORMAT);
    CHECK_EQ_INT(err.offset, len - 4);
    free(buf);

    /* 3 sections with an unknown one: fine, rank comes from the header */
    buf = m_frame(&pay, 3, 0, 0x10, HM_WIRE_HEADER_SIZE, &len); /* advisory flag */
    rc = hm_wire_decode(buf, len, &out, &err);
    CHECK_EQ_INT(rc, 0);
    if (out) {
        CHECK_EQ_INT(out->info.rank, 2);
        CHECK_EQ_INT(out->tracks.n, 1);
        CHECK_STR(hm_batch_str(out, 2), "b");
    }
    hm_batch_free(out);
    out = NULL;
    free(buf);

    /* a required flag we do not know */
    buf = m_frame(&pay, 3, 0, 0x01, HM_WIRE_HEADER_SIZE, &len);
    CHECK_EQ_INT(hm_wire_decode(buf, len, &out, &err), HM_EVERSION);
    CHECK_EQ_INT(err.offset, 5);
    free(buf);

    /* a longer header: accepted from a newer minor only */
    buf = m_frame(&pay, 3, HM_WIRE_MINOR + 1, 0, HM_WIRE_HEADER_SIZE + 8, &len);
    CHECK_EQ_INT(hm_wire_decode(buf, len, &out, &err), 0);
    hm_batch_free(out);
    out = NULL;
    free(buf);
    buf = m_frame(&pay, 3, HM_WIRE_MINOR, 0, HM_WIRE_HEADER_SIZE + 8, &len);
    CHECK_EQ_INT(hm_wire_decode(buf, len, &out, &err), HM_EFORMAT);
    free(buf);
    buf = m_frame(&pay, 3, HM_WIRE_MINOR, 0, HM_WIRE_HEADER_SIZE - 1, &len);
    CHECK_EQ_INT(hm_wire_decode(buf, len, &out, &err), HM_EFORMAT);
    CHECK_EQ_INT(err.offset, 6);
    free(buf);
    CHECK(out == NULL);
}

/* ---- Header, version, checksum ---- */

static void test_version_and_peek(void)
{
    struct hm_batch *b = full_batch(), *out = NULL;
    struct hm_wire_header h;
    struct hm_err err;
    uint8_t *buf;
    size_t len;

    CHECK_EQ_INT(hm_wire_encode(b, &buf, &len, &err), 0);
    CHECK_EQ_INT(hm_wire_peek(buf, HM_WIRE_HEADER_SIZE, &h, &err), 0);
    CHECK_EQ_INT(h.rank, 3);
    CHECK_EQ_INT(h.total_len, len);
    CHECK_EQ_INT(h.payload_len, len - HM_WIRE_HEADER_SIZE - HM_WIRE_TRAILER_SIZE);
    CHECK_EQ_INT(h.section_count, 7);

    CHECK_EQ_INT(hm_wire_peek(buf, 10, &h, &err), HM_EFORMAT);
    CHECK_EQ_INT(err.offset, 10);
    CHECK_EQ_INT(hm_wire_peek(buf, 0, &h, &err), HM_EFORMAT);
    CHECK_EQ_INT(hm_wire_peek((const uint8_t *)"HMX", 3, &h, &err), HM_EFORMAT);
    CHECK_EQ_INT(err.offset, 0);
    CHECK_EQ_INT(hm_wire_peek((const uint8_t *)"{\"traceEvents\": []}", 19, &h, &err), HM_EFORMAT);
    CHECK_CONTAINS(err.msg, "magic");

    buf[3] = HM_WIRE_MAJOR + 1; /* another major: refused before the checksum */
    CHECK_EQ_INT(hm_wire_peek(buf, len, &h, &err), HM_EVERSION);
    CHECK_EQ_INT(hm_wire_decode(buf, len, &out, &err), HM_EVERSION);
    CHECK_EQ_INT(err.offset, 3);
    CHECK(out == NULL);
    CHECK_EQ_INT(hm_wire_decode(buf, 4, &out, &err), HM_EVERSION);
    buf[3] = 0;
    CHECK_EQ_INT(hm_wire_decode(buf, len, &out, &err), HM_EVERSION);
    buf[3] = HM_WIRE_MAJOR;

    buf[4] = HM_WIRE_MINOR + 3; /* a newer minor of our major is read */
    fix_crc(buf, len);
    CHECK_EQ_INT(hm_wire_decode(buf, len, &out, &err), 0);
    if (out)
        CHECK_EQ_INT(batch_diff(b, out), 0);
    hm_batch_free(out);
    free(buf);
    hm_batch_free(b);
}

static void test_checksum(void)
{
    struct hm_batch *b = full_batch(), *out = NULL;
    struct hm_err err;
    uint8_t *buf, *big;
    size_t len;

    CHECK_EQ_INT(hm_wire_encode(b, &buf, &len, &err), 0);
    buf[len / 2] ^= 0x20;
    CHECK_EQ_INT(hm_wire_decode(buf, len, &out, &err), HM_EFORMAT);
    CHECK_CONTAINS(err.msg, "checksum mismatch");
    CHECK_EQ_INT(err.offset, len - 4);
    CHECK_EQ_INT(err.rank, 3);
    buf[len / 2] ^= 0x20;
    buf[len - 1] ^= 0x01; /* the trailer itself */
    CHECK_EQ_INT(hm_wire_decode(buf, len, &out, &err), HM_EFORMAT);
    CHECK_CONTAINS(err.msg, "checksum mismatch");
    buf[len - 1] ^= 0x01;
    buf[9] ^= 0x01; /* the rank in the header is covered too */
    CHECK_EQ_INT(hm_wire_decode(buf, len, &out, &err), HM_EFORMAT);
    buf[9] ^= 0x01;

    /* a trailing byte */
    big = malloc(len + 1);
    memcpy(big, buf, len);
    big[len] = 0;
    CHECK_EQ_INT(hm_wire_decode(big, len + 1, &out, &err), HM_EFORMAT);
    CHECK_EQ_INT(err.offset, len);
    CHECK_EQ_INT(hm_wire_decode(buf, len, &out, &err), 0);
    hm_batch_free(out);
    free(big);
    free(buf);
    hm_batch_free(b);
}

/* ---- Fault twin: truncation and corruption ---- */

static void test_truncation(void)
{
    struct hm_batch *b = full_batch(), *out = NULL;
    struct hm_err err;
    uint8_t *buf;
    size_t len;
    int bad = 0;

    CHECK_EQ_INT(hm_wire_encode(b, &buf, &len, &err), 0);
    CHECK_EQ_INT(hm_wire_decode(NULL, 0, &out, &err), HM_EFORMAT);
    for (size_t k = 0; k < len; k++) {
        uint8_t *cut = malloc(k ? k : 1);
        int rc;
        memcpy(cut, buf, k);
        rc = hm_wire_decode(k ? cut : NULL, k, &out, &err);
        if (rc != HM_EFORMAT || out != NULL || err.offset < 0 || err.offset > (int64_t)k) {
            fprintf(stderr, "truncated to %zu: rc %d offset %lld\n", k, rc, (long long)err.offset);
            bad++;
        }
        hm_batch_free(out);
        out = NULL;
        free(cut);
    }
    CHECK_EQ_INT(bad, 0);
    free(buf);
    hm_batch_free(b);
}

/* Flips random bytes, with and without repairing the checksum (repairing
 * it reaches the section parsers). Decoding must fail cleanly or succeed;
 * whatever it accepts must be a valid batch, so it must re-encode. */
static void test_flips(void)
{
    struct hm_batch *b = full_batch(), *out = NULL;
    struct hm_err err;
    uint8_t *buf, *copy, *re;
    size_t len, relen;
    int bad = 0, ok = 0, ok_unfixed = 0;

    CHECK_EQ_INT(hm_wire_encode(b, &buf, &len, &err), 0);
    copy = malloc(len);
    for (int it = 0; it < 6000; it++) {
        int fix = it % 2, rc;
        memcpy(copy, buf, len);
        for (int n = 1 + (int)(rnd() % 3); n > 0; n--)
            copy[rnd() % (len - (fix ? 4 : 0))] ^= (uint8_t)(1 + rnd() % 255);
        if (fix)
            fix_crc(copy, len);
        rc = hm_wire_decode(copy, len, &out, &err);
        if (rc == 0) {
            ok++;
            ok_unfixed += !fix;
            if (hm_wire_encode(out, &re, &relen, &err) != 0)
                bad++;
            else
                free(re);
        } else if ((rc != HM_EFORMAT && rc != HM_EVERSION) || out || err.offset < 0 ||
                   err.offset > (int64_t)len) {
            bad++;
        }
        hm_batch_free(out);
        out = NULL;
    }
    fprintf(stderr, "byte flips: %d of 6000 decoded\n", ok);
    CHECK_EQ_INT(bad, 0);
    CHECK_EQ_INT(ok_unfixed, 0);
    free(copy);
    free(buf);
    hm_batch_free(b);
}

int main(void)
{
    test_full_round_trip();
    test_appended_round_trip();
    test_string_flags();
    test_empty_round_trip();
    test_big_round_trip();
    test_encode_refuses_dangling();
    test_bad_fields();
    test_bad_strings();
    test_bad_lengths();
    test_sections();
    test_version_and_peek();
    test_checksum();
    test_truncation();
    test_flips();
    return hm_test_done();
}

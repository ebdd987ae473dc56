/* Wire format: encodes a batch into one checksummed byte message and
 * decodes it back with every length and index checked. It does not send,
 * spool or route messages (the collector and merger do); hm_wire_peek lets
 * them size and route a message from its fixed header.
 *
 * Layout, version 1.1 (a durable interface: change it only as described
 * under "Versions"). "uv" is an unsigned LEB128 varint of at most 10 bytes;
 * "sv" a signed integer zigzag-mapped then written as uv; "f64" the 8 bytes
 * of an IEEE-754 double, little-endian; "id" a uv string id, < the string
 * count; "u16/u32/u64/i32" fixed little-endian integers.
 *
 *   Message = header | payload (sections) | trailer
 *
 *   off   size  header field
 *   0     3     magic "HMB"
 *   3     1     major version (1); another major -> HM_EVERSION
 *   4     1     minor version (1; 1.0 lacks the string flags)
 *   5     1     flags; bits 0-3 must be understood (none in 1.0: set ->
 *               HM_EVERSION), bits 4-7 are advisory and may be ignored
 *   6     2     header_len, u16 (24 in 1.0)
 *   8     4     rank, i32 (-1 unknown)
 *   12    4     section_count, u32
 *   16    8     payload_len, u64
 *   hl    P     sections, each: uv id | uv body_len | body
 *   hl+P  4     CRC32 (zlib) of bytes [0, hl+P): header and payload, u32
 *
 *   id  section      body (n records; every section may be absent = empty)
 *   1   STRINGS      uv n | n x (uv len>0, len bytes): ids 1..n in order; a
 *                    text may repeat (strings appended without dedup, e.g.
 *                    args JSON): a reader interns each, and appends a repeat
 *                    under its own id, so ids match the writer's.
 *                    1.1 adds | ceil(n / 8) bytes of flags, string i + 1 in
 *                    bit i % 8 of byte i / 8: set when the writer appended
 *                    it (hm_strtab_append), so the reader appends it too
 *                    without hashing it (args texts are most of a batch's
 *                    string bytes and almost all unique). Absent when none
 *                    is set.
 *   2   INFO         sv world_size | sv base_time_ns | sv pid | id rank_source,
 *                    backend, hostname, source_file, pg_config, device_props,
 *                    nccl_version, trace_meta | uv flags | uv source_bytes |
 *                    uv k | k x uv skipped[i]
 *   3   TRACKS       uv n | n x (uv kind | sv pid | sv tid | id name)
 *   4   SLICES       uv n | n x (sv ts - previous slice's ts (0 first) | sv dur |
 *                    uv track | id name | id cat_name | uv cat | uv flags |
 *                    id args | sv correlation | sv external_id | sv bytes |
 *                    sv iteration)
 *   5   COLLECTIVES  uv n | n x (uv slice | id op, pg_name, pg_desc, pg_ranks,
 *                    dtype, comms_id | sv seq, in_nelems, out_nelems, group_size)
 *   6   COUNTERS     uv n | n x (sv ts - previous counter's ts | f64 value |
 *                    id name | sv device)
 *   7   STEPS        uv n | n x (sv number | sv ts - previous step's ts | sv dur |
 *                    uv slice)
 *   8   STEP_SOURCES uv n | n x uv source (enum hm_step_source of steps[i]; n =
 *                    the STEPS count). Written only when a step's source is not
 *                    0 (profiler): a reader without it takes every step as a
 *                    ProfilerStep, which is what such a batch holds.
 *
 * Records keep the batch's order. Indexes are checked: slice.track < tracks,
 * collective.slice and step.slice < slices. Pad fields are not sent. The
 * rank is in the header only; source_bytes is the batch's own field. A
 * slice category this reader does not know decodes as HM_CAT_OTHER (its
 * text is in cat_name).
 *
 * Versions. A minor version may add header bytes (header_len grows), new
 * section ids (every reader skips ids it does not know) and bytes after the
 * records of a known section (e.g. a column for a new field). A reader skips
 * extra header and section bytes only from a newer minor; from its own or
 * an older one they are a format error. Skip reasons are append-only and k
 * says how many follow, so adding one needs no new version (a reader
 * ignores counts past the reasons it knows). Anything else is a new major
 * version. Known sections appear at most once, in increasing id order, so
 * strings precede what refers to them.
 */
#include "wire.h"

#include <stdlib.h>
#include <string.h>
#include <libdeflate.h>

enum {
    SEC_STRINGS = 1,
    SEC_INFO,
    SEC_TRACKS,
    SEC_SLICES,
    SEC_COLLECTIVES,
    SEC_COUNTERS,
    SEC_STEPS,
    SEC_STEP_SOURCES,
    SEC__END
};

/* Tripwires: a record struct that grows needs its new field on the wire
 * (encoder, decoder, the layout above and test_wire.c's comparison). They
 * catch growth only, not a field put into existing padding. */
_Static_assert(sizeof(struct hm_track) == 32, "hm_track changed: update wire.c");
_Static_assert(sizeof(struct hm_slice) == 64, "hm_slice changed: update wire.c");
_Static_assert(sizeof(struct hm_collective) == 64, "hm_collective changed: update wire.c");
_Static_assert(sizeof(struct hm_counter) == 32, "hm_counter changed: update wire.c");
_Static_assert(sizeof(struct hm_step) == 32, "hm_step changed: update wire.c");
_Static_assert(sizeof(struct hm_rank_info) == 64 + 8 * HM_SKIP__COUNT,
               "hm_rank_info changed: update wire.c");

#define MAX_UV 10          /* bytes of the longest varint */
#define REC_ROOM 128       /* room any one fixed record needs (<= 12 fields) */

static const char *const sec_names[SEC__END] = {
    "header", "strings", "info", "tracks", "slices", "collectives", "counters", "steps",
    "step sources",
};

/* ---- Integer coding, shared by both directions ---- */

/* Zigzag of a two's-complement value held in a uint64_t (deltas are
 * computed modulo 2^64 so that no subtraction can overflow). */
static inline uint64_t zigzag_u(uint64_t u)
{
    return (u << 1) ^ (0 - (u >> 63));
}

static inline uint64_t zigzag(int64_t x)
{
    return zigzag_u((uint64_t)x);
}

static inline uint64_t unzigzag(uint64_t z)
{
    return (z >> 1) ^ (0 - (z & 1));
}

/* Two's-complement reinterpretation without implementation-defined casts. */
static inline int64_t u2i(uint64_t u)
{
    return u <= INT64_MAX ? (int64_t)u : -(int64_t)(~u) - 1;
}

static inline int32_t u2i32(uint32_t u)
{
    return u <= INT32_MAX ? (int32_t)u : -(int32_t)(~u) - 1;
}

static inline void put_le(uint8_t *p, uint64_t v, int n)
{
    for (int i = 0; i < n; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static inline uint64_t get_le(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = 0; i < n; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

static inline uint8_t *put_uv(uint8_t *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

static inline uint8_t *put_sv(uint8_t *p, int64_t v)
{
    return put_uv(p, zigzag(v));
}

static inline uint8_t *put_f64(uint8_t *p, double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    put_le(p, u, 8);
    return p + 8;
}

/* CRC-32 as zlib's crc32 computes it (the layout's "CRC32 (zlib)"), by
 * libdeflate's, which uses the CPU's carry-less multiply: 4x faster here,
 * and it ran over every byte rank 0 receives (half of its decoding). */
static uint32_t crc_of(const uint8_t *p, size_t n)
{
    return libdeflate_crc32(0, p, n);
}

/* ==== Encoding ==== */

/* The growing output buffer. */
struct wb {
    uint8_t *base; /* owned until handed to the caller */
    size_t len, cap;
};

static int wb_grow(struct wb *w, size_t need)
{
    size_t cap = w->cap ? w->cap : 256;
    uint8_t *p;

    if (need > SIZE_MAX - w->len)
        return HM_ENOMEM;
    while (cap - w->len < need) {
        if (cap > SIZE_MAX / 2)
            return HM_ENOMEM;
        cap *= 2;
    }
    p = realloc(w->base, cap);
    if (!p)
        return HM_ENOMEM;
    w->base = p;
    w->cap = cap;
    return 0;
}

static inline int wb_room(struct wb *w, size_t need)
{
    return w->cap - w->len >= need ? 0 : wb_grow(w, need);
}

/* Starts a section: writes its id and leaves MAX_UV bytes for the body
 * length, which sec_end fills in once the body is known. */
static int sec_begin(struct wb *w, unsigned id, size_t *len_at)
{
    if (wb_room(w, 2 * MAX_UV))
        return HM_ENOMEM;
    w->len = (size_t)(put_uv(w->base + w->len, id) - w->base);
    *len_at = w->len;
    w->len += MAX_UV;
    return 0;
}

/* Ends a section: writes the body length and slides the body down over
 * the unused length bytes (one memmove per section). */
static void sec_end(struct wb *w, size_t len_at)
{
    size_t body = len_at + MAX_UV, blen = w->len - body, n;
    uint8_t tmp[MAX_UV];

    n = (size_t)(put_uv(tmp, blen) - tmp);
    memmove(w->base + len_at + n, w->base + body, blen);
    memcpy(w->base + len_at, tmp, n);
    w->len -= MAX_UV - n;
}

static int enc_strings(struct wb *w, const struct hm_batch *b, struct hm_err *err)
{
    uint32_t n = hm_strtab_count(b->strings);
    size_t flags_at;
    int any = 0;

    (void)err;
    if (wb_room(w, MAX_UV))
        return HM_ENOMEM;
    w->len = (size_t)(put_uv(w->base + w->len, n - 1) - w->base);
    for (uint32_t id = 1; id < n; id++) {
        size_t len;
        const char *s = hm_strtab_get(b->strings, id, &len);
        if (wb_room(w, MAX_UV + len))
            return HM_ENOMEM;
        w->len = (size_t)(put_uv(w->base + w->len, len) - w->base);
        memcpy(w->base + w->len, s, len);
        w->len += len;
    }
    /* 1.1: which strings were appended unhashed, so the reader appends
     * them too instead of hashing them (none appended: no bytes). */
    if (wb_room(w, (size_t)n / 8 + 1))
        return HM_ENOMEM;
    flags_at = w->len;
    memset(w->base + flags_at, 0, (size_t)n / 8 + 1);
    for (uint32_t id = 1; id < n; id++)
        if (hm_strtab_appended(b->strings, id)) {
            w->base[flags_at + (id - 1) / 8] |= (uint8_t)(1u << ((id - 1) % 8));
            any = 1;
        }
    if (any)
        w->len += ((size_t)n - 1 + 7) / 8;
    return 0;
}

static int enc_info(struct wb *w, const struct hm_batch *b, struct hm_err *err)
{
    const struct hm_rank_info *in = &b->info;
    const hm_strid ids[] = { in->rank_source, in->backend, in->hostname, in->source_file,
                             in->pg_config, in->device_props, in->nccl_version, in->trace_meta };
    uint32_t nstr = hm_strtab_count(b->strings);
    uint8_t *p;

    if (wb_room(w, (3 + 8 + 3 + HM_SKIP__COUNT) * MAX_UV))
        return HM_ENOMEM;
    p = w->base + w->len;
    p = put_sv(p, in->world_size);
    p = put_sv(p, in->base_time_ns);
    p = put_sv(p, in->pid);
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
        if (ids[i] >= nstr)
            return hm_err_set(err, HM_EINVAL, NULL, -1,
                              "wire: rank info string %u of %u", ids[i], nstr);
        p = put_uv(p, ids[i]);
    }
    p = put_uv(p, in->flags);
    p = put_uv(p, b->source_bytes);
    p = put_uv(p, HM_SKIP__COUNT);
    for (int i = 0; i < HM_SKIP__COUNT; i++)
        p = put_uv(p, in->skipped[i]);
    w->len = (size_t)(p - w->base);
    return 0;
}

static int enc_tracks(struct wb *w, const struct hm_batch *b, struct hm_err *err)
{
    uint32_t nstr = hm_strtab_count(b->strings);
    uint8_t *p;

    if (wb_room(w, MAX_UV))
        return HM_ENOMEM;
    w->len = (size_t)(put_uv(w->base + w->len, b->tracks.n) - w->base);
    for (size_t i = 0; i < b->tracks.n; i++) {
        const struct hm_track *t = &b->tracks.v[i];
        if (t->name >= nstr)
            return hm_err_set(err, HM_EINVAL, NULL, -1, "wire: track %zu: string %u of %u",
                              i, t->name, nstr);
        if (wb_room(w, REC_ROOM))
            return HM_ENOMEM;
        p = w->base + w->len;
        p = put_uv(p, t->kind);
        p = put_sv(p, t->pid);
        p = put_sv(p, t->tid);
        p = put_uv(p, t->name);
        w->len = (size_t)(p - w->base);
    }
    return 0;
}

static int enc_slices(struct wb *w, const struct hm_batch *b, struct hm_err *err)
{
    uint32_t nstr = hm_strtab_count(b->strings);
    uint64_t prev = 0;
    uint8_t *p;

    if (wb_room(w, MAX_UV))
        return HM_ENOMEM;
    w->len = (size_t)(put_uv(w->base + w->len, b->slices.n) - w->base);
    for (size_t i = 0; i < b->slices.n; i++) {
        const struct hm_slice *s = &b->slices.v[i];
        if (s->track >= b->tracks.n || s->name >= nstr || s->cat_name >= nstr || s->args >= nstr)
            return hm_err_set(err, HM_EINVAL, NULL, -1,
                              "wire: slice %zu refers to a missing track or string", i);
        if (wb_room(w, REC_ROOM))
            return HM_ENOMEM;
        p = w->base + w->len;
        p = put_uv(p, zigzag_u((uint64_t)s->ts - prev));
        prev = (uint64_t)s->ts;
        p = put_sv(p, s->dur);
        p = put_uv(p, s->track);
        p = put_uv(p, s->name);
        p = put_uv(p, s->cat_name);
        p = put_uv(p, s->cat);
        p = put_uv(p, s->flags);
        p = put_uv(p, s->args);
        p = put_sv(p, s->correlation);
        p = put_sv(p, s->external_id);
        p = put_sv(p, s->bytes);
        p = put_sv(p, s->iteration);
        w->len = (size_t)(p - w->base);
    }
    return 0;
}

static int enc_collectives(struct wb *w, const struct hm_batch *b, struct hm_err *err)
{
    uint32_t nstr = hm_strtab_count(b->strings);
    uint8_t *p;

    if (wb_room(w, MAX_UV))
        return HM_ENOMEM;
    w->len = (size_t)(put_uv(w->base + w->len, b->collectives.n) - w->base);
    for (size_t i = 0; i < b->collectives.n; i++) {
        const struct hm_collective *c = &b->collectives.v[i];
        const hm_strid ids[] = { c->op, c->pg_name, c->pg_desc, c->pg_ranks, c->dtype, c->comms_id };
        if (c->slice >= b->slices.n)
            return hm_err_set(err, HM_EINVAL, NULL, -1, "wire: collective %zu: slice %u of %zu",
                              i, c->slice, b->slices.n);
        if (wb_room(w, REC_ROOM))
            return HM_ENOMEM;
        p = w->base + w->len;
        p = put_uv(p, c->slice);
        for (int k = 0; k < 6; k++) {
            if (ids[k] >= nstr)
                return hm_err_set(err, HM_EINVAL, NULL, -1, "wire: collective %zu: string %u of %u",
                                  i, ids[k], nstr);
            p = put_uv(p, ids[k]);
        }
        p = put_sv(p, c->seq);
        p = put_sv(p, c->in_nelems);
        p = put_sv(p, c->out_nelems);
        p = put_sv(p, c->group_size);
        w->len = (size_t)(p - w->base);
    }
    return 0;
}

static int enc_counters(struct wb *w, const struct hm_batch *b, struct hm_err *err)
{
    uint32_t nstr = hm_strtab_count(b->strings);
    uint64_t prev = 0;
    uint8_t *p;

    if (wb_room(w, MAX_UV))
        return HM_ENOMEM;
    w->len = (size_t)(put_uv(w->base + w->len, b->counters.n) - w->base);
    for (size_t i = 0; i < b->counters.n; i++) {
        const struct hm_counter *c = &b->counters.v[i];
        if (c->name >= nstr)
            return hm_err_set(err, HM_EINVAL, NULL, -1, "wire: counter %zu: string %u of %u",
                              i, c->name, nstr);
        if (wb_room(w, REC_ROOM))
            return HM_ENOMEM;
        p = w->base + w->len;
        p = put_uv(p, zigzag_u((uint64_t)c->ts - prev));
        prev = (uint64_t)c->ts;
        p = put_f64(p, c->value);
        p = put_uv(p, c->name);
        p = put_sv(p, c->device);
        w->len = (size_t)(p - w->base);
    }
    return 0;
}

static int enc_steps(struct wb *w, const struct hm_batch *b, struct hm_err *err)
{
    uint64_t prev = 0;
    uint8_t *p;

    if (wb_room(w, MAX_UV))
        return HM_ENOMEM;
    w->len = (size_t)(put_uv(w->base + w->len, b->steps.n) - w->base);
    for (size_t i = 0; i < b->steps.n; i++) {
        const struct hm_step *s = &b->steps.v[i];
        if (s->slice >= b->slices.n)
            return hm_err_set(err, HM_EINVAL, NULL, -1, "wire: step %zu: slice %u of %zu",
                              i, s->slice, b->slices.n);
        if (wb_room(w, REC_ROOM))
            return HM_ENOMEM;
        p = w->base + w->len;
        p = put_sv(p, s->number);
        p = put_uv(p, zigzag_u((uint64_t)s->ts - prev));
        prev = (uint64_t)s->ts;
        p = put_sv(p, s->dur);
        p = put_uv(p, s->slice);
        w->len = (size_t)(p - w->base);
    }
    return 0;
}

/* Whether the batch needs SEC_STEP_SOURCES: a step of a source other than
 * the profiler (absent otherwise, so such messages are as before). */
static int has_step_sources(const struct hm_batch *b)
{
    for (size_t i = 0; i < b->steps.n; i++)
        if (b->steps.v[i].source != HM_STEP_PROFILER)
            return 1;
    return 0;
}

static int enc_step_sources(struct wb *w, const struct hm_batch *b, struct hm_err *err)
{
    (void)err;
    if (wb_room(w, MAX_UV + b->steps.n * MAX_UV))
        return HM_ENOMEM;
    w->len = (size_t)(put_uv(w->base + w->len, b->steps.n) - w->base);
    for (size_t i = 0; i < b->steps.n; i++)
        w->len = (size_t)(put_uv(w->base + w->len, b->steps.v[i].source) - w->base);
    return 0;
}

typedef int (*enc_fn)(struct wb *, const struct hm_batch *, struct hm_err *);

static const enc_fn encoders[SEC__END] = {
    [SEC_STRINGS] = enc_strings,         [SEC_INFO] = enc_info,
    [SEC_TRACKS] = enc_tracks,           [SEC_SLICES] = enc_slices,
    [SEC_COLLECTIVES] = enc_collectives, [SEC_COUNTERS] = enc_counters,
    [SEC_STEPS] = enc_steps,             [SEC_STEP_SOURCES] = enc_step_sources,
};

/* A first guess at the message size, so that most encodes never realloc. */
static size_t size_guess(const struct hm_batch *b)
{
    return 256 + hm_strtab_bytes(b->strings) + b->tracks.n * 16 + b->slices.n * 24 +
           b->collectives.n * 24 + b->counters.n * 16 + b->steps.n * 12;
}

static void put_header(struct wb *w, const struct hm_batch *b, uint32_t nsec)
{
    uint8_t *h = w->base;

    memcpy(h, "HMB", 3);
    h[3] = HM_WIRE_MAJOR;
    h[4] = HM_WIRE_MINOR;
    h[5] = 0;
    put_le(h + 6, HM_WIRE_HEADER_SIZE, 2);
    put_le(h + 8, (uint32_t)b->info.rank, 4);
    put_le(h + 12, nsec, 4);
    put_le(h + 16, w->len - HM_WIRE_HEADER_SIZE, 8);
}

int hm_wire_encode(const struct hm_batch *b, uint8_t **buf, size_t *len, struct hm_err *err)
{
    struct wb w = { 0 };
    size_t len_at;
    int rc;

    *buf = NULL;
    *len = 0;
    if (b->slices.n > UINT32_MAX || b->tracks.n > UINT32_MAX)
        return hm_err_set(err, HM_EINVAL, NULL, -1, "wire: batch has more than 2^32 slices or tracks");
    if (wb_grow(&w, size_guess(b)))
        goto nomem;
    w.len = HM_WIRE_HEADER_SIZE;
    for (unsigned id = SEC_STRINGS; id < SEC__END; id++) {
        if (id == SEC_STEP_SOURCES && !has_step_sources(b))
            continue;
        if (sec_begin(&w, id, &len_at))
            goto nomem;
        rc = encoders[id](&w, b, err);
        if (rc == HM_ENOMEM)
            goto nomem;
        if (rc)
            goto fail;
        sec_end(&w, len_at);
    }
    if (wb_room(&w, HM_WIRE_TRAILER_SIZE))
        goto nomem;
    put_header(&w, b, SEC__END - SEC_STRINGS - !has_step_sources(b));
    put_le(w.base + w.len, crc_of(w.base, w.len), 4);
    *buf = w.base;
    *len = w.len + HM_WIRE_TRAILER_SIZE;
    return 0;

nomem:
    rc = hm_err_set(err, HM_ENOMEM, NULL, -1, "wire: out of memory encoding a batch");
fail:
    free(w.base);
    return rc;
}

/* ==== Decoding ==== */

/* A bounded reader. The first problem is remembered (where and why) and
 * makes every later read fail, so record loops check once per record. */
struct rd {
    const uint8_t *p, *end;
    const uint8_t *bad;    /* first problem, NULL if none */
    const char *why;       /* static text of the first problem */
};

static uint64_t rd_fail(struct rd *r, const uint8_t *at, const char *why)
{
    if (!r->bad) {
        r->bad = at;
        r->why = why;
    }
    r->p = r->end;
    return 0;
}

static uint64_t rd_uv_slow(struct rd *r)
{
    const uint8_t *p = r->p;
    uint64_t v = 0;

    for (unsigned shift = 0; shift < 64; shift += 7) {
        if (p == r->end)
            return rd_fail(r, r->p, "record runs past the end of its section");
        if (shift == 63 && *p > 1)
            return rd_fail(r, r->p, "varint overflows 64 bits");
        v |= (uint64_t)(*p & 0x7f) << shift;
        if (*p++ < 0x80) {
            r->p = p;
            return v;
        }
    }
    return rd_fail(r, r->p, "varint overflows 64 bits"); /* not reached */
}

static inline uint64_t rd_uv(struct rd *r)
{
    if (r->p < r->end && *r->p < 0x80)
        return *r->p++;
    return rd_uv_slow(r);
}

static inline int64_t rd_sv(struct rd *r)
{
    return u2i(unzigzag(rd_uv(r)));
}

static inline int32_t rd_s32(struct rd *r)
{
    const uint8_t *at = r->p;
    int64_t v = rd_sv(r);

    if (v < INT32_MIN || v > INT32_MAX)
        return (int32_t)rd_fail(r, at, "value does not fit 32 bits");
    return (int32_t)v;
}

/* Reads an unsigned value that must be <= max (a narrower field). */
static inline uint64_t rd_umax(struct rd *r, uint64_t max, const char *why)
{
    const uint8_t *at = r->p;
    uint64_t v = rd_uv(r);

    if (v > max)
        return rd_fail(r, at, why);
    return v;
}

/* Reads an index that must be < n (a string id, track or slice). */
static inline uint32_t rd_ref(struct rd *r, uint64_t n, const char *why)
{
    const uint8_t *at = r->p;
    uint64_t v = rd_uv(r);

    if (v >= n)
        return (uint32_t)rd_fail(r, at, why);
    return (uint32_t)v;
}

static inline double rd_f64(struct rd *r)
{
    uint64_t u;
    double d;

    if (r->end - r->p < 8)
        return (double)rd_fail(r, r->p, "record runs past the end of its section");
    u = get_le(r->p, 8);
    r->p += 8;
    memcpy(&d, &u, sizeof d);
    return d;
}

/* Reads a record count and checks that the section can hold that many
 * records of at least min_bytes each, so a declared count never makes us
 * allocate more than a small multiple of the input. */
static size_t rd_count(struct rd *r, size_t min_bytes, uint64_t max)
{
    const uint8_t *at = r->p;
    uint64_t n = rd_uv(r);

    if (n > (uint64_t)(r->end - r->p) / min_bytes || n > max)
        return (size_t)rd_fail(r, at, "record count larger than its section");
    return (size_t)n;
}

/* Decoder state: the batch being built and what the sections may refer to. */
struct dec {
    struct hm_batch *b;   /* owned until returned */
    uint32_t nstr;        /* string count so far (1 until STRINGS) */
    int newer;            /* the writer's minor is newer than ours */
    uint8_t minor;        /* the writer's minor */
};

/* Allocates a zeroed array of n records for a vec being decoded. */
#define DEC_ALLOC(vec, count) \
    ((count) == 0 ? 0 : ((vec).v = calloc((count), sizeof *(vec).v)) ? ((vec).cap = (count), 0) : HM_ENOMEM)

/* 1.1's flags after the string records (enc_strings): NULL when absent
 * (a 1.0 writer, or nothing appended), else n bits, string i + 1 in bit i. */
static const uint8_t *dec_string_flags(struct rd *r, const struct dec *d, size_t n)
{
    const uint8_t *flags = r->p;

    if (r->p == r->end || d->minor < 1)
        return NULL;
    if ((size_t)(r->end - r->p) < (n + 7) / 8) {
        rd_fail(r, r->p, "string flags cut short");
        return NULL;
    }
    r->p += (n + 7) / 8;
    return flags;
}

static int dec_strings(struct rd *r, struct dec *d)
{
    size_t n = rd_count(r, 2, UINT32_MAX - 2);
    const uint8_t *first = r->p, *flags;

    /* The records, then their flags: a first pass finds where they end. */
    for (size_t i = 0; i < n && !r->bad; i++) {
        const uint8_t *at = r->p;
        uint64_t len = rd_uv(r);
        if (r->bad)
            break;
        if (len == 0 || len > (uint64_t)(r->end - r->p)) {
            rd_fail(r, at, len ? "string runs past the end of its section" : "empty string after id 0");
            break;
        }
        r->p += len;
    }
    if (r->bad)
        return 0;
    flags = dec_string_flags(r, d, n);
    if (r->bad)
        return 0;
    const uint8_t *end = r->p;
    r->p = first;
    for (size_t i = 0; i < n; i++) {
        size_t len = (size_t)rd_uv(r);
        hm_strid id;
        if (flags && (flags[i / 8] >> (i % 8) & 1)) {
            id = hm_strtab_append(d->b->strings, (const char *)r->p, len);
        } else {
            id = hm_strtab_intern(d->b->strings, (const char *)r->p, len);
            /* A repeat (the writer's table held an appended copy): a new
             * id of its own, so that ids match the writer's. */
            if (id != UINT32_MAX && id != i + 1)
                id = hm_strtab_append(d->b->strings, (const char *)r->p, len);
        }
        if (id == UINT32_MAX)
            return HM_ENOMEM;
        r->p += len;
    }
    r->p = end;
    d->nstr = hm_strtab_count(d->b->strings);
    return 0;
}

static int dec_info(struct rd *r, struct dec *d)
{
    struct hm_rank_info *in = &d->b->info;
    hm_strid *ids[] = { &in->rank_source, &in->backend, &in->hostname, &in->source_file,
                        &in->pg_config, &in->device_props, &in->nccl_version, &in->trace_meta };
    const char *bad_id = "rank info string id out of range";
    size_t k;

    in->world_size = rd_s32(r);
    in->base_time_ns = rd_sv(r);
    in->pid = rd_sv(r);
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++)
        *ids[i] = rd_ref(r, d->nstr, bad_id);
    in->flags = (uint32_t)rd_umax(r, UINT32_MAX, "rank info flags do not fit 32 bits");
    d->b->source_bytes = rd_uv(r);
    k = rd_count(r, 1, UINT64_MAX);
    for (size_t i = 0; i < k; i++) {
        uint64_t v = rd_uv(r);
        if (i < HM_SKIP__COUNT)
            in->skipped[i] = v;
    }
    return 0;
}

static int dec_tracks(struct rd *r, struct dec *d)
{
    size_t n = rd_count(r, 4, UINT32_MAX);

    if (DEC_ALLOC(d->b->tracks, n))
        return HM_ENOMEM;
    for (size_t i = 0; i < n && !r->bad; i++) {
        struct hm_track *t = &d->b->tracks.v[i];
        t->kind = (uint32_t)rd_umax(r, UINT32_MAX, "track kind does not fit 32 bits");
        t->pid = rd_sv(r);
        t->tid = rd_sv(r);
        t->name = rd_ref(r, d->nstr, "track name string id out of range");
        d->b->tracks.n = i + 1;
    }
    return 0;
}

static int dec_slices(struct rd *r, struct dec *d)
{
    size_t n = rd_count(r, 12, UINT32_MAX);
    uint64_t ntracks = d->b->tracks.n, nstr = d->nstr, ts = 0;
    const char *bad_id = "slice string id out of range";

    if (DEC_ALLOC(d->b->slices, n))
        return HM_ENOMEM;
    for (size_t i = 0; i < n && !r->bad; i++) {
        struct hm_slice *s = &d->b->slices.v[i];
        uint64_t cat;
        ts += unzigzag(rd_uv(r));
        s->ts = u2i(ts);
        s->dur = rd_sv(r);
        s->track = rd_ref(r, ntracks, "slice track index out of range");
        s->name = rd_ref(r, nstr, bad_id);
        s->cat_name = rd_ref(r, nstr, bad_id);
        cat = rd_umax(r, UINT16_MAX, "slice category does not fit 16 bits");
        /* A category added after this reader was built is "other"; its
         * text is still in cat_name. */
        s->cat = cat < HM_CAT__COUNT ? (uint16_t)cat : HM_CAT_OTHER;
        s->flags = (uint16_t)rd_umax(r, UINT16_MAX, "slice flags do not fit 16 bits");
        s->args = rd_ref(r, nstr, bad_id);
        s->correlation = rd_sv(r);
        s->external_id = rd_sv(r);
        s->bytes = rd_sv(r);
        s->iteration = rd_s32(r);
        d->b->slices.n = i + 1;
    }
    return 0;
}

static int dec_collectives(struct rd *r, struct dec *d)
{
    size_t n = rd_count(r, 11, UINT32_MAX);
    const char *bad_id = "collective string id out of range";

    if (DEC_ALLOC(d->b->collectives, n))
        return HM_ENOMEM;
    for (size_t i = 0; i < n && !r->bad; i++) {
        struct hm_collective *c = &d->b->collectives.v[i];
        c->slice = rd_ref(r, d->b->slices.n, "collective slice index out of range");
        c->op = rd_ref(r, d->nstr, bad_id);
        c->pg_name = rd_ref(r, d->nstr, bad_id);
        c->pg_desc = rd_ref(r, d->nstr, bad_id);
        c->pg_ranks = rd_ref(r, d->nstr, bad_id);
        c->dtype = rd_ref(r, d->nstr, bad_id);
        c->comms_id = rd_ref(r, d->nstr, bad_id);
        c->seq = rd_sv(r);
        c->in_nelems = rd_sv(r);
        c->out_nelems = rd_sv(r);
        c->group_size = rd_sv(r);
        d->b->collectives.n = i + 1;
    }
    return 0;
}

static int dec_counters(struct rd *r, struct dec *d)
{
    size_t n = rd_count(r, 11, UINT32_MAX);
    uint64_t ts = 0;

    if (DEC_ALLOC(d->b->counters, n))
        return HM_ENOMEM;
    for (size_t i = 0; i < n && !r->bad; i++) {
        struct hm_counter *c = &d->b->counters.v[i];
        ts += unzigzag(rd_uv(r));
        c->ts = u2i(ts);
        c->value = rd_f64(r);
        c->name = rd_ref(r, d->nstr, "counter name string id out of range");
        c->device = rd_s32(r);
        d->b->counters.n = i + 1;
    }
    return 0;
}

static int dec_steps(struct rd *r, struct dec *d)
{
    size_t n = rd_count(r, 4, UINT32_MAX);
    uint64_t ts = 0;

    if (DEC_ALLOC(d->b->steps, n))
        return HM_ENOMEM;
    for (size_t i = 0; i < n && !r->bad; i++) {
        struct hm_step *s = &d->b->steps.v[i];
        s->number = rd_sv(r);
        ts += unzigzag(rd_uv(r));
        s->ts = u2i(ts);
        s->dur = rd_sv(r);
        s->slice = rd_ref(r, d->b->slices.n, "step slice index out of range");
        s->source = HM_STEP_PROFILER;
        memset(s->pad, 0, sizeof s->pad);
        d->b->steps.n = i + 1;
    }
    return 0;
}

static int dec_step_sources(struct rd *r, struct dec *d)
{
    size_t n = rd_count(r, 1, UINT32_MAX);

    if (!r->bad && n != d->b->steps.n) {
        rd_fail(r, r->p, "step sources do not match the steps");
        return 0;
    }
    for (size_t i = 0; i < n && !r->bad; i++) {
        uint64_t v = rd_uv(r);
        d->b->steps.v[i].source = (uint8_t)(v < HM_STEP__COUNT ? v : HM_STEP_INFERRED);
    }
    return 0;
}

typedef int (*dec_fn)(struct rd *, struct dec *);

static const dec_fn decoders[SEC__END] = {
    [SEC_STRINGS] = dec_strings,         [SEC_INFO] = dec_info,
    [SEC_TRACKS] = dec_tracks,           [SEC_SLICES] = dec_slices,
    [SEC_COLLECTIVES] = dec_collectives, [SEC_COUNTERS] = dec_counters,
    [SEC_STEPS] = dec_steps,             [SEC_STEP_SOURCES] = dec_step_sources,
};

/* Decodes one section whose header r is at; leaves r after its body.
 * Returns 0 (format problems are left in r) or HM_ENOMEM. */
static int dec_section(struct rd *r, struct dec *d, uint64_t *last_id, const char **name)
{
    const uint8_t *at = r->p, *end = r->end;
    uint64_t id = rd_uv(r), blen = rd_uv(r);
    int rc;

    *name = "payload";
    if (r->bad)
        return 0;
    if (blen > (uint64_t)(r->end - r->p)) {
        rd_fail(r, at, "section runs past the end of the payload");
        return 0;
    }
    if (id == 0 || id >= SEC__END) {      /* a newer minor's section: skip it */
        r->p += blen;
        return 0;
    }
    if (id <= *last_id) {
        rd_fail(r, at, "section repeated or out of order");
        return 0;
    }
    *last_id = id;
    *name = sec_names[id];
    r->end = r->p + blen;
    rc = decoders[id](r, d);
    if (!r->bad && r->p != r->end && !d->newer)
        rd_fail(r, r->p, "unexpected bytes at the end of a section");
    r->p = r->end;
    r->end = end;
    return rc;
}

/* Checks that buf holds exactly the message h describes and that its
 * checksum matches. */
static int dec_frame(const uint8_t *buf, size_t len, const struct hm_wire_header *h,
                     struct hm_err *err)
{
    size_t body = (size_t)(h->total_len - HM_WIRE_TRAILER_SIZE);

    if (len < h->total_len)
        return hm_err_set(err, HM_EFORMAT, NULL, (int64_t)len,
                          "wire: truncated batch: %zu of %llu bytes", len,
                          (unsigned long long)h->total_len);
    if (len > h->total_len)
        return hm_err_set(err, HM_EFORMAT, NULL, (int64_t)h->total_len,
                          "wire: %zu bytes after the end of the batch",
                          len - (size_t)h->total_len);
    if (h->header_len > HM_WIRE_HEADER_SIZE && h->minor <= HM_WIRE_MINOR)
        return hm_err_set(err, HM_EFORMAT, NULL, 6, "wire: header length %u for version %u.%u",
                          h->header_len, h->major, h->minor);
    if (crc_of(buf, body) != (uint32_t)get_le(buf + body, 4))
        return hm_err_set(err, HM_EFORMAT, NULL, (int64_t)body, "wire: checksum mismatch");
    return 0;
}

/* Decodes the payload of a framed, checksummed message into d->b. */
static int dec_payload(const uint8_t *buf, const struct hm_wire_header *h, struct dec *d,
                       struct hm_err *err)
{
    struct rd r = { buf + h->header_len, buf + h->header_len + h->payload_len, NULL, NULL };
    const char *name = "header";
    uint64_t last_id = 0;

    for (uint32_t i = 0; i < h->section_count && !r.bad; i++) {
        if (r.p == r.end) {
            rd_fail(&r, r.p, "fewer sections than the header declares");
            break;
        }
        if (dec_section(&r, d, &last_id, &name))
            return hm_err_set(err, HM_ENOMEM, NULL, r.p - buf, "wire: out of memory decoding a batch");
    }
    if (!r.bad && r.p != r.end)
        rd_fail(&r, r.p, "bytes after the last section");
    if (r.bad)
        return hm_err_set(err, HM_EFORMAT, NULL, r.bad - buf, "wire: %s: %s", name, r.why);
    return 0;
}

int hm_wire_decode(const uint8_t *buf, size_t len, struct hm_batch **out, struct hm_err *err)
{
    struct hm_wire_header h;
    struct dec d = { 0 };
    int rc;

    *out = NULL;
    rc = hm_wire_peek(buf, len, &h, err);
    if (!rc)
        rc = dec_frame(buf, len, &h, err);
    if (rc)
        goto fail;
    d.b = hm_batch_new();
    if (!d.b) {
        rc = hm_err_set(err, HM_ENOMEM, NULL, -1, "wire: out of memory decoding a batch");
        goto fail;
    }
    d.nstr = 1;
    d.newer = h.minor > HM_WIRE_MINOR;
    d.minor = h.minor;
    d.b->info.rank = h.rank;
    rc = dec_payload(buf, &h, &d, err);
    if (rc)
        goto fail;
    *out = d.b;
    return 0;

fail:
    if (err)
        err->rank = h.rank; /* -1 until the header is read */
    hm_batch_free(d.b);
    return rc;
}

int hm_wire_peek(const uint8_t *buf, size_t len, struct hm_wire_header *h, struct hm_err *err)
{
    memset(h, 0, sizeof *h);
    h->rank = HM_NONE;
    if (len == 0)
        return hm_err_set(err, HM_EFORMAT, NULL, 0, "wire: empty buffer");
    if (memcmp(buf, "HMB", len < 3 ? len : 3) != 0)
        return hm_err_set(err, HM_EFORMAT, NULL, 0, "wire: not a htamerge batch (bad magic)");
    if (len >= 4 && buf[3] != HM_WIRE_MAJOR)
        return hm_err_set(err, HM_EVERSION, NULL, 3,
                          "wire: batch format version %u.x, this build reads %u.x",
                          buf[3], HM_WIRE_MAJOR);
    if (len < HM_WIRE_HEADER_SIZE)
        return hm_err_set(err, HM_EFORMAT, NULL, (int64_t)len,
                          "wire: truncated header: %zu of %d bytes", len, HM_WIRE_HEADER_SIZE);
    h->major = buf[3];
    h->minor = buf[4];
    h->flags = buf[5];
    h->header_len = (uint16_t)get_le(buf + 6, 2);
    h->rank = u2i32((uint32_t)get_le(buf + 8, 4));
    h->section_count = (uint32_t)get_le(buf + 12, 4);
    h->payload_len = get_le(buf + 16, 8);
    if (h->flags & 0x0f)
        return hm_err_set(err, HM_EVERSION, NULL, 5, "wire: unknown required flags 0x%02x",
                          h->flags & 0x0f);
    if (h->header_len < HM_WIRE_HEADER_SIZE)
        return hm_err_set(err, HM_EFORMAT, NULL, 6, "wire: header length %u is below %d",
                          h->header_len, HM_WIRE_HEADER_SIZE);
    if (h->payload_len > (uint64_t)SIZE_MAX / 2)
        return hm_err_set(err, HM_EFORMAT, NULL, 16, "wire: payload length %llu is not plausible",
                          (unsigned long long)h->payload_len);
    h->total_len = h->header_len + h->payload_len + HM_WIRE_TRAILER_SIZE;
    return 0;
}

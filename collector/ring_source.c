/* Ring records -> batch records. One batch is built at a time; a string
 * table keyed by ring id keeps the texts for the whole run. */
#include "ring_source.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/shm_ring.h"
#include "common/monotime.h"

enum { BATCH_RECORDS = 50000, FLUSH_MS = 200 };

struct idmap {                 /* ring string id -> id in names */
    uint32_t *keys, *vals;     /* owned; key 0 = empty */
    uint32_t cap, n;
};

struct col_ring {
    struct hm_ring *ring;      /* owned */
    int rank;
    struct hm_strtab *names;   /* owned: texts by ring id, for the whole run */
    struct idmap map;
    struct hm_batch *b;        /* owned, being built; NULL when empty */
    hm_strid *bmap;            /* owned: names id -> b's id, 0 = not yet */
    uint32_t bmap_cap;
    int64_t started_ms;
    uint64_t reported_dropped, reported_lost;
    HM_VEC(char *) trace_files; /* owned paths from HM_RING_TRACE_FILE, FIFO from tf_head */
    size_t tf_head;
};

static uint32_t *idmap_slot(struct idmap *m, uint32_t key)
{
    uint32_t i = (key * 2654435761u) & (m->cap - 1);
    while (m->keys[i] && m->keys[i] != key)
        i = (i + 1) & (m->cap - 1);
    return &m->keys[i];
}

static int idmap_put(struct idmap *m, uint32_t key, uint32_t val)
{
    if ((m->n + 1) * 2 > m->cap) {
        struct idmap g = {calloc(m->cap * 2, 4), calloc(m->cap * 2, 4), m->cap * 2, 0};
        if (!g.keys || !g.vals) {
            free(g.keys);
            free(g.vals);
            return HM_ENOMEM;
        }
        for (uint32_t i = 0; i < m->cap; i++)
            if (m->keys[i]) {
                uint32_t *k = idmap_slot(&g, m->keys[i]);
                *k = m->keys[i];
                g.vals[k - g.keys] = m->vals[i];
                g.n++;
            }
        free(m->keys);
        free(m->vals);
        *m = g;
    }
    uint32_t *k = idmap_slot(m, key);
    if (!*k)
        m->n++;
    *k = key;
    m->vals[k - m->keys] = val;
    return 0;
}

static uint32_t idmap_get(struct idmap *m, uint32_t key)
{
    uint32_t *k;
    if (!key)
        return 0;
    k = idmap_slot(m, key);
    return *k ? m->vals[k - m->keys] : 0;
}

struct col_ring *col_ring_new(const char *name, size_t bytes, int rank, struct hm_err *err)
{
    struct col_ring *r = calloc(1, sizeof *r);

    if (!r || !(r->names = hm_strtab_new())) {
        free(r);
        hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");
        return NULL;
    }
    r->rank = rank;
    r->map.cap = 1024;
    r->map.keys = calloc(r->map.cap, 4);
    r->map.vals = calloc(r->map.cap, 4);
    r->ring = hm_ring_create(name, bytes, err);
    if (!r->ring || !r->map.keys || !r->map.vals) {
        col_ring_free(r);
        return NULL;
    }
    return r;
}

void col_ring_free(struct col_ring *r)
{
    if (!r)
        return;
    hm_ring_close(r->ring);
    hm_strtab_free(r->names);
    hm_batch_free(r->b);
    free(r->map.keys);
    free(r->map.vals);
    free(r->bmap);
    for (size_t i = r->tf_head; i < r->trace_files.n; i++)
        free(r->trace_files.v[i]);
    HM_VEC_FREE(r->trace_files);
    free(r);
}

/* The C++ runtime's demangler (libstdc++, linked by collector/CMakeLists.txt;
 * the C++ ABI gives it C linkage). */
extern char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

/* Interns a ring string; a mangled C++ name ("_Z39ncclDevKernel_...", as
 * CUPTI gives kernel names when the profiled process has no demangler of
 * its own) is stored demangled, as Kineto stores it. */
static hm_strid intern_ring_text(struct col_ring *r, const char *text, size_t len)
{
    char buf[4096], *plain;
    int status = -1;
    hm_strid id;

    if (len < 3 || text[0] != '_' || text[1] != 'Z' || len >= sizeof buf)
        return hm_strtab_intern(r->names, text, len);
    memcpy(buf, text, len);
    buf[len] = '\0';
    plain = __cxa_demangle(buf, NULL, NULL, &status);
    id = status == 0 && plain ? hm_strtab_intern(r->names, plain, strlen(plain))
                              : hm_strtab_intern(r->names, text, len);
    free(plain);
    return id;
}

/* The batch id of a ring string id (0 if unknown or none). */
static hm_strid str_of(struct col_ring *r, uint32_t ring_id)
{
    uint32_t nid = idmap_get(&r->map, ring_id);
    size_t len;
    const char *s;

    if (!nid)
        return 0;
    if (nid >= r->bmap_cap) {
        uint32_t cap = r->bmap_cap ? r->bmap_cap : 256;
        while (cap <= nid)
            cap *= 2;
        hm_strid *v = realloc(r->bmap, cap * sizeof *v);
        if (!v)
            return 0;
        memset(v + r->bmap_cap, 0, (cap - r->bmap_cap) * sizeof *v);
        r->bmap = v;
        r->bmap_cap = cap;
    }
    if (!r->bmap[nid]) {
        s = hm_strtab_get(r->names, nid, &len);
        r->bmap[nid] = hm_batch_intern(r->b, s, len);
    }
    return r->bmap[nid];
}

/* A new slice on track (kind, pid, tid) with the fields every record type
 * has; NULL when out of memory. */
static struct hm_slice *new_slice(struct col_ring *r, uint32_t kind, int64_t pid, int64_t tid,
                                  int64_t ts, int64_t dur, uint32_t ring_name, enum hm_cat cat)
{
    int64_t t = hm_batch_track(r->b, kind, pid, tid);
    struct hm_slice *s = t >= 0 ? HM_VEC_PUSH(r->b->slices) : NULL;
    const char *cn = hm_cat_name(cat);

    if (!s)
        return NULL;
    /* The injection library puts the launches it rebuilds from kernels'
     * queued times on thread 0 (no real thread has that id): the timeline
     * and exports then say what that track is. */
    if (kind == HM_TRACK_CPU_THREAD && tid == 0 && !r->b->tracks.v[t].name)
        r->b->tracks.v[t].name = hm_batch_intern(r->b, COL_RING_LAUNCH_TRACK, strlen(COL_RING_LAUNCH_TRACK));
    s->track = (uint32_t)t;
    s->correlation = s->external_id = s->bytes = HM_NONE;
    s->iteration = HM_NONE;
    s->ts = ts;
    s->dur = dur > 0 ? dur : 0;
    s->name = str_of(r, ring_name);
    s->cat = (uint16_t)cat;
    s->cat_name = hm_batch_intern(r->b, cn, strlen(cn));
    return s;
}

static void on_slice(struct col_ring *r, const void *p, uint32_t len)
{
    struct hm_ring_slice x = {0};
    struct hm_slice *s;

    memcpy(&x, p, len < sizeof x ? len : sizeof x);
    s = new_slice(r, x.kind == HM_TRACK_GPU_STREAM ? HM_TRACK_GPU_STREAM : HM_TRACK_CPU_THREAD, x.pid,
                  x.tid, x.ts, x.dur, x.name, x.cat < HM_CAT__COUNT ? (enum hm_cat)x.cat : HM_CAT_OTHER);
    if (!s)
        return;
    s->correlation = x.correlation;
    s->bytes = x.bytes;
    s->args = str_of(r, x.args);
    s->flags = (uint16_t)x.flags;
}

/* {"domain":"NAME"} for a range of a named NVTX domain: the steps of the
 * bootstrap's hooks are the ranges "step" of domain "htamerge"
 * (analysis/step_source.h). */
static hm_strid domain_args(struct col_ring *r, uint32_t ring_domain)
{
    hm_strid d = str_of(r, ring_domain);
    const char *name = d ? hm_batch_str(r->b, d) : NULL;
    char buf[256];
    size_t n = 0;

    if (!name)
        return 0;
    n = (size_t)snprintf(buf, sizeof buf, "{\"domain\":\"");
    for (; *name && n < sizeof buf - 4; name++)
        if (*name != '"' && *name != '\\' && (unsigned char)*name >= 0x20)
            buf[n++] = *name;
    buf[n++] = '"';
    buf[n++] = '}';
    return hm_batch_intern(r->b, buf, n);
}

static void on_nvtx(struct col_ring *r, const void *p, uint32_t len)
{
    struct hm_ring_nvtx x = {0};
    struct hm_slice *s;

    memcpy(&x, p, len < sizeof x ? len : sizeof x);
    s = new_slice(r, HM_TRACK_CPU_THREAD, x.pid, x.tid, x.ts, x.dur, x.name, HM_CAT_NVTX);
    /* A producer's own args (the Python hooks name their domain there)
     * win; otherwise the domain alone, so step sources can tell ranges of
     * the htamerge domain from the program's. */
    if (s && x.args)
        s->args = str_of(r, x.args);
    else if (s && x.domain)
        s->args = domain_args(r, x.domain);
}

/* ranks.backend, which a trace file has from distributedInfo: here the
 * first collective's library says it ("nccl" from the NCCL plugin, the
 * prefix of a hooks' slice, "gloo:all_reduce", for other backends). */
static void note_backend(struct col_ring *r, const char *name, size_t len)
{
    if (!r->b->info.backend && len)
        r->b->info.backend = hm_batch_intern(r->b, name, len);
}

static void on_nccl(struct col_ring *r, const void *p, uint32_t len)
{
    struct hm_ring_nccl_coll x = {0};
    struct hm_collective *c;
    struct hm_slice *s;
    char id[32];

    memcpy(&x, p, len < sizeof x ? len : sizeof x);
    /* The plugin's GPU-side span lies inside the NCCL kernel CUPTI reports:
     * not a kernel of its own, or the kernel analyses would count the
     * communication twice. */
    s = new_slice(r, HM_TRACK_GPU_STREAM, x.device, x.stream, x.ts, x.dur, x.func, HM_CAT_COLLECTIVE_COMM);
    if (!s)
        return;
    s->flags = HM_SLICE_F_STREAM_ARG;
    note_backend(r, "nccl", 4);
    c = HM_VEC_PUSH(r->b->collectives);
    if (!c)
        return;
    snprintf(id, sizeof id, "%" PRIu64, x.comm_id);
    c->slice = (uint32_t)(r->b->slices.n - 1);
    c->op = s->name;
    c->comms_id = hm_batch_intern(r->b, id, strlen(id));
    c->dtype = str_of(r, x.dtype);
    c->seq = x.seq;
    c->in_nelems = c->out_nelems = x.count;
    c->group_size = x.nranks;
}

static void on_counter(struct col_ring *r, const void *p, uint32_t len)
{
    struct hm_ring_counter x = {0};
    struct hm_counter *c;

    memcpy(&x, p, len < sizeof x ? len : sizeof x);
    c = HM_VEC_PUSH(r->b->counters);
    if (c) {
        c->ts = x.ts;
        c->value = x.value;
        c->name = str_of(r, x.name);
        c->device = x.device;
    }
}

/* A collective the Python hooks timed on the calling thread (gloo and
 * other non-NCCL backends): a CPU slice plus its hm_collective, keyed by
 * (pg, seq) for the matcher. */
static void on_cpu_coll(struct col_ring *r, const void *p, uint32_t len)
{
    struct hm_ring_cpu_coll x = {0};
    struct hm_collective *c;
    struct hm_slice *s;

    memcpy(&x, p, len < sizeof x ? len : sizeof x);
    s = new_slice(r, HM_TRACK_CPU_THREAD, x.pid, x.tid, x.ts, x.dur, x.slice_name ? x.slice_name : x.op,
                  HM_CAT_COLLECTIVE_COMM);
    if (!s)
        return;
    s->bytes = x.bytes;
    {
        const char *title = hm_batch_str(r->b, s->name), *colon = title ? strchr(title, ':') : NULL;
        if (colon)
            note_backend(r, title, (size_t)(colon - title));
    }
    c = HM_VEC_PUSH(r->b->collectives);
    if (!c)
        return;
    memset(c, 0, sizeof *c);
    c->slice = (uint32_t)(r->b->slices.n - 1);
    c->op = str_of(r, x.op);
    c->pg_name = str_of(r, x.pg_name);
    c->pg_desc = str_of(r, x.pg_desc);
    c->pg_ranks = str_of(r, x.pg_ranks);
    c->dtype = str_of(r, x.dtype);
    c->seq = x.seq;
    c->in_nelems = c->out_nelems = x.nelems;
    c->group_size = x.group_size > 0 ? x.group_size : HM_NONE;
}

/* A trace file the program wrote where it chose: kept for
 * col_ring_take_trace_file. */
static void on_trace_file(struct col_ring *r, const void *p, uint32_t len)
{
    struct hm_ring_trace_file h;
    char **slot;
    char *path;

    if (len < sizeof h)
        return;
    memcpy(&h, p, sizeof h);
    if (!h.len || h.len > len - sizeof h || memchr((const char *)p + sizeof h, 0, h.len))
        return;
    if (!(path = strndup((const char *)p + sizeof h, h.len)))
        return;
    if (!(slot = HM_VEC_PUSH(r->trace_files))) {
        free(path);
        return;
    }
    *slot = path;
}

char *col_ring_take_trace_file(struct col_ring *r)
{
    if (r->tf_head == r->trace_files.n) {
        r->tf_head = r->trace_files.n = 0;
        return NULL;
    }
    return r->trace_files.v[r->tf_head++];
}

static int on_record(void *ctx, uint16_t type, const void *p, uint32_t len)
{
    struct col_ring *r = ctx;

    switch (type) {
    case HM_RING_STRING: {
        struct hm_ring_string h;
        if (len < sizeof h)
            return 0;
        memcpy(&h, p, sizeof h);
        if (h.id && h.len <= len - sizeof h) {
            hm_strid nid = intern_ring_text(r, (const char *)p + sizeof h, h.len);
            if (nid != UINT32_MAX)
                idmap_put(&r->map, h.id, nid);
        }
        return 0;
    }
    case HM_RING_SLICE: on_slice(r, p, len); return 0;
    case HM_RING_NVTX: on_nvtx(r, p, len); return 0;
    case HM_RING_NCCL_COLL: on_nccl(r, p, len); return 0;
    case HM_RING_COUNTER: on_counter(r, p, len); return 0;
    case HM_RING_CPU_COLL: on_cpu_coll(r, p, len); return 0;
    case HM_RING_TRACE_FILE: on_trace_file(r, p, len); return 0;
    default: return 0; /* a newer producer's record type */
    }
}

static void add_loss_counters(struct col_ring *r)
{
    struct hm_ring_stats st;
    struct timespec now;
    int64_t ts;

    hm_ring_stats(r->ring, &st);
    if (st.dropped_records == r->reported_dropped && st.lost_records == r->reported_lost)
        return;
    clock_gettime(CLOCK_REALTIME, &now);
    ts = (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
    const char *names[2] = {"htamerge/ring dropped records", "htamerge/ring lost records"};
    double vals[2] = {(double)st.dropped_records, (double)st.lost_records};
    for (int i = 0; i < 2; i++) {
        struct hm_counter *c = HM_VEC_PUSH(r->b->counters);
        if (c) {
            c->ts = ts;
            c->value = vals[i];
            c->name = hm_batch_intern(r->b, names[i], strlen(names[i]));
            c->device = -1;
        }
    }
    r->reported_dropped = st.dropped_records;
    r->reported_lost = st.lost_records;
}

struct hm_batch *col_ring_drain(struct col_ring *r, int flush, struct hm_err *err)
{
    struct hm_batch *out = NULL;
    int n;

    if (!r->b) {
        r->b = hm_batch_new();
        if (!r->b) {
            hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");
            return NULL;
        }
        r->b->info.rank = r->rank;
        r->b->info.base_time_ns = 0; /* ring times are Unix ns already */
        if (r->bmap)
            memset(r->bmap, 0, r->bmap_cap * sizeof *r->bmap);
        r->started_ms = (hm_mono_ns() / 1000000);
    }
    do
        n = hm_ring_read(r->ring, on_record, r, 4096);
    while (n > 0 && r->b->slices.n < BATCH_RECORDS);
    if (flush)
        add_loss_counters(r);
    if (r->b->slices.n + r->b->counters.n == 0)
        return NULL;
    if (flush || r->b->slices.n >= BATCH_RECORDS || (hm_mono_ns() / 1000000) - r->started_ms > FLUSH_MS) {
        out = r->b;
        r->b = NULL;
    }
    return out;
}

void col_ring_abandon(struct col_ring *r)
{
    hm_ring_abandon(r->ring);
}

void *col_ring_control(struct col_ring *r)
{
    return r ? hm_ring_control_area(r->ring) : NULL;
}

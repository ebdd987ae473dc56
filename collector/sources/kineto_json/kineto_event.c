/* One Kineto trace event into records. By phase:
 *   X  a slice on a CPU-thread or GPU-stream track, plus the collective it
 *      describes ("Collective name" args, gloo:/nccl: annotations) and the
 *      profiler step it is ("ProfilerStep#N");
 *   i  "[memory]" instants give two counters; other instants are skipped;
 *   M  thread_name / process_name are kept to name tracks at the end;
 *   anything else, and events with bad or missing values, are counted in
 *   info.skipped by reason and dropped.
 * The walk (kineto_parse.cpp) feeds it; kineto_json.c handles the top level. */
#include "kineto_json_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HAS(ev, id) ((ev)->present >> (id) & 1)
#define NOINT INT64_MIN          /* kj_tok_int default meaning "absent" */
#define MAX_DEVICE_INDEX 1024    /* a pid below this with args.stream is a GPU */

struct kj_name {
    int64_t pid, tid;
    hm_strid name;
    int is_process;             /* process_name (else thread_name) */
};

struct kj_names {
    HM_VEC(struct kj_name) v;
};

/* Names and categories repeat on almost every event: a direct-mapped cache
 * in front of the batch's string table saves hashing them byte by byte. */
#define ICACHE_SLOTS 4096

struct kj_icache {
    uint64_t hash;
    const char *s;      /* borrowed from the batch's string table */
    uint32_t len;
    hm_strid id;
    int32_t cat;        /* hm_cat_parse of the text, -1 until asked for */
};

/* Field id of ev, or NULL when the event does not have it. */
static const struct kj_tok *fld(const struct kj_event *ev, int id)
{
    return HAS(ev, id) ? &ev->f[id] : NULL;
}

static int64_t fld_int(const struct kj_event *ev, int id, int64_t def)
{
    return HAS(ev, id) ? kj_tok_int(&ev->f[id], def) : def;
}

static int tok_is(const struct kj_tok *t, const char *s, size_t n)
{
    return t && t->type == KJ_STR && t->n == n && memcmp(t->p, s, n) == 0;
}

static int skip(struct kj_builder *k, enum hm_skip_reason r)
{
    k->b->info.skipped[r]++;
    return 0;
}

/* The cache slot holding s interned; NULL when out of memory. */
static struct kj_icache *icache_get(struct kj_builder *k, const char *s, size_t n)
{
    uint64_t h = hm_hash_bytes(s, n);
    struct kj_icache *c = &k->icache[h & (ICACHE_SLOTS - 1)];

    if (c->hash == h && c->len == n && c->s && memcmp(c->s, s, n) == 0)
        return c;
    hm_strid id = hm_batch_intern(k->b, s, n);
    if (id == UINT32_MAX)
        return NULL;
    c->hash = h;
    c->s = hm_batch_str(k->b, id);
    c->len = (uint32_t)n;
    c->id = id;
    c->cat = -1;
    return c;
}

/* hm_batch_intern through the cache; UINT32_MAX when out of memory. */
static hm_strid intern_cached(struct kj_builder *k, const char *s, size_t n)
{
    struct kj_icache *c = icache_get(k, s, n);

    return c ? c->id : UINT32_MAX;
}

int kj_builder_init(struct kj_builder *k, struct hm_batch *b, int keep_args)
{
    memset(k, 0, sizeof *k);
    k->b = b;
    k->keep_args = keep_args;
    k->icache = calloc(ICACHE_SLOTS, sizeof *k->icache);
    if (!k->icache)
        return HM_ENOMEM;
    k->names = calloc(1, sizeof *k->names);
    return k->names ? 0 : HM_ENOMEM;
}

void kj_builder_fini(struct kj_builder *k)
{
    if (k->names)
        HM_VEC_FREE(k->names->v);
    free(k->names);
    free(k->scratch);
    free(k->icache);
    k->icache = NULL;
    k->names = NULL;
    k->scratch = NULL;
}

/* Bytes of JSON per slice assumed when sizing the slice array up front: a
 * pretty-printed Kineto complete event with args takes 300 to 600, a
 * compact one 150 or more, and flows and other events come between them.
 * Growing the array by doubling copied it into fresh pages at each step
 * (half the page faults of a parse); a trace with more slices still grows
 * it, and kj_builder_trim gives back what was not used. */
#define JSON_BYTES_PER_SLICE 256

void kj_builder_presize(struct kj_builder *k, size_t json_len)
{
    size_t n = json_len / JSON_BYTES_PER_SLICE;
    struct hm_slice *p;

    if (n <= k->b->slices.cap || n < 1024 || n > SIZE_MAX / sizeof *p)
        return;
    p = realloc(k->b->slices.v, n * sizeof *p);
    if (!p)
        return;   /* not needed: pushing grows it */
    k->b->slices.v = p;
    k->b->slices.cap = n;
}

void kj_builder_trim(struct kj_builder *k)
{
    size_t n = k->b->slices.n ? k->b->slices.n : 1;
    struct hm_slice *p;

    if (!k->b->slices.v || k->b->slices.cap <= n + n / 8)
        return;
    p = realloc(k->b->slices.v, n * sizeof *p);
    if (!p)
        return;
    k->b->slices.v = p;
    k->b->slices.cap = n;
}

/* The compact form of raw JSON text in k->scratch; its length, or
 * SIZE_MAX when out of memory. */
static size_t minify_json(struct kj_builder *k, const char *raw, size_t n)
{
    if (n > k->scratch_cap) {
        size_t cap = n < 4096 ? 4096 : n;
        char *p = realloc(k->scratch, cap);
        if (!p)
            return SIZE_MAX;
        k->scratch = p;
        k->scratch_cap = cap;
    }
    return kj_minify(raw, n, k->scratch);
}

hm_strid kj_builder_intern_json(struct kj_builder *k, const char *raw, size_t n)
{
    size_t m;

    if (n == 0)
        return 0;
    if ((m = minify_json(k, raw, n)) == SIZE_MAX)
        return UINT32_MAX;
    return hm_batch_intern(k->b, k->scratch, m);
}

/* A slice's args: compacted and appended, not interned. They are nearly
 * all unique (the External id and correlation differ), so hashing them
 * and probing the table would be spent for nothing; equal args text may
 * have several ids. */
static hm_strid append_args(struct kj_builder *k, const char *raw, size_t n)
{
    size_t m;

    if (n == 0)
        return 0;
    if ((m = minify_json(k, raw, n)) == SIZE_MAX)
        return UINT32_MAX;
    return hm_strtab_append(k->b->strings, k->scratch, m);
}

/* A token as text: strings unescaped, numbers and literals as written,
 * containers compacted; 0 when absent. */
static hm_strid intern_text(struct kj_builder *k, const struct kj_tok *t)
{
    if (!t)
        return 0;
    switch (t->type) {
    case KJ_STR: case KJ_NUM: case KJ_BOOL:
        return hm_batch_intern(k->b, t->p, t->n);
    case KJ_OBJ: case KJ_ARR:
        return kj_builder_intern_json(k, t->p, t->n);
    default:
        return 0;
    }
}

static uint64_t fnv64(const char *s, size_t n)
{
    uint64_t h = 14695981039346656037ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h;
}

/* Identity of a pid or tid: the integer; for a string, the whole string as
 * an integer, else its first run of digits ("stream 7" -> 7), else a hash
 * far below any real id (-2^61 .. -2^60). */
static int64_t ident(const struct kj_tok *t)
{
    int64_t v;
    size_t i, j;

    if (!t)
        return 0;
    if (t->type == KJ_NUM && kj_tok_num(t, 0, &v) == 0)
        return v;
    if (t->type == KJ_STR) {
        if (kj_num_scaled(t->p, t->n, 0, &v) == 0)
            return v;
        for (i = 0; i < t->n && (t->p[i] < '0' || t->p[i] > '9'); i++)
            ;
        for (j = i; j < t->n && t->p[j] >= '0' && t->p[j] <= '9'; j++)
            ;
        if (j > i && kj_num_scaled(t->p + i, j - i, 0, &v) == 0)
            return v;
    }
    return -(int64_t)((fnv64(t->p, t->n) >> 3) | (1ull << 60));
}

/* Track index for (kind, pid, tid), through a small cache; a new track
 * whose tid was given as text is named by that text. -1 when out of memory. */
static int64_t track_get(struct kj_builder *k, uint32_t kind, int64_t pid, int64_t tid,
                         const struct kj_tok *tid_text)
{
    uint64_t h = ((uint64_t)pid * 0x9E3779B97F4A7C15ull) ^ ((uint64_t)tid * 0xC2B2AE3D27D4EB4Full) ^ kind;
    unsigned slot = (unsigned)(h >> 58);
    size_t before = k->b->tracks.n;
    int64_t i;

    if (k->tcache[slot].index && k->tcache[slot].pid == pid && k->tcache[slot].tid == tid &&
        k->tcache[slot].kind == kind)
        return k->tcache[slot].index - 1;
    i = hm_batch_track(k->b, kind, pid, tid);
    if (i < 0 || i >= UINT32_MAX - 1)
        return -1;
    if (k->b->tracks.n > before && tid_text && tid_text->type == KJ_STR) {
        hm_strid s = hm_batch_intern(k->b, tid_text->p, tid_text->n);
        if (s == UINT32_MAX)
            return -1;
        k->b->tracks.v[i].name = s;
    }
    k->tcache[slot].pid = pid;
    k->tcache[slot].tid = tid;
    k->tcache[slot].kind = kind;
    k->tcache[slot].index = (uint32_t)i + 1;
    return i;
}

/* GPU ops (by category, or a stream arg on a device-index pid) go on the
 * stream track (device, stream); everything else on its (pid, tid) thread. */
static int64_t slice_track(struct kj_builder *k, const struct kj_event *ev, enum hm_cat cat,
                           int64_t stream)
{
    const struct kj_tok *pid = fld(ev, KJ_F_PID), *tid = fld(ev, KJ_F_TID);
    int64_t p = ident(pid), t = ident(tid), dev;
    int pid_is_num = pid && pid->type == KJ_NUM;

    if (!hm_cat_is_gpu(cat) && !(stream != NOINT && pid_is_num && p >= 0 && p < MAX_DEVICE_INDEX))
        return track_get(k, HM_TRACK_CPU_THREAD, p, t, tid);
    dev = fld_int(ev, KJ_F_A_DEVICE, NOINT);
    if (dev != NOINT)
        p = dev;
    if (stream != NOINT)
        t = stream; /* device-wide syncs say 4294967295 (-1 as uint32); HTA counts
                       them as GPU work by that value, so it stays */
    return track_get(k, HM_TRACK_GPU_STREAM, p, t, tid);
}

static int add_collective(struct kj_builder *k, const struct kj_event *ev, uint32_t slice,
                          const struct hm_slice *s)
{
    const struct kj_tok *op = fld(ev, KJ_F_A_COLL_NAME), *name = fld(ev, KJ_F_NAME);
    struct hm_collective c = {.slice = slice, .seq = HM_NONE, .in_nelems = HM_NONE,
                              .out_nelems = HM_NONE, .group_size = HM_NONE};
    struct hm_collective *dst;

    if (op && op->type == KJ_STR) {
        c.op = intern_text(k, op);
        c.pg_name = intern_text(k, fld(ev, KJ_F_A_PG_NAME));
        c.pg_desc = intern_text(k, fld(ev, KJ_F_A_PG_DESC));
        c.pg_ranks = intern_text(k, fld(ev, KJ_F_A_PG_RANKS));
        c.dtype = intern_text(k, fld(ev, KJ_F_A_DTYPE));
        c.comms_id = intern_text(k, fld(ev, KJ_F_A_COMMS_ID));
        c.seq = fld_int(ev, KJ_F_A_SEQ, HM_NONE);
        c.in_nelems = fld_int(ev, KJ_F_A_IN_NELEMS, HM_NONE);
        c.out_nelems = fld_int(ev, KJ_F_A_OUT_NELEMS, HM_NONE);
        c.group_size = fld_int(ev, KJ_F_A_GROUP_SIZE, HM_NONE);
    } else if (s->cat == HM_CAT_USER_ANNOTATION && name && name->n > 5 &&
               (memcmp(name->p, "gloo:", 5) == 0 || memcmp(name->p, "nccl:", 5) == 0)) {
        c.op = hm_batch_intern(k->b, name->p + 5, name->n - 5);
    } else {
        return 0;
    }
    if (c.op == UINT32_MAX || c.pg_name == UINT32_MAX || c.pg_desc == UINT32_MAX ||
        c.pg_ranks == UINT32_MAX || c.dtype == UINT32_MAX || c.comms_id == UINT32_MAX)
        return HM_ENOMEM;
    dst = HM_VEC_PUSH(k->b->collectives);
    if (!dst)
        return HM_ENOMEM;
    *dst = c;
    return 0;
}

/* "ProfilerStep#N" on the CPU is step N. */
static int add_step(struct kj_builder *k, const struct kj_event *ev, uint32_t slice,
                    const struct hm_slice *s)
{
    static const char prefix[] = "ProfilerStep#";
    const struct kj_tok *name = fld(ev, KJ_F_NAME);
    const size_t pl = sizeof prefix - 1;
    struct hm_step *st;
    int64_t n;

    if (s->cat != HM_CAT_USER_ANNOTATION && s->cat != HM_CAT_CPU_OP)
        return 0;
    if (!name || name->n <= pl || memcmp(name->p, prefix, pl) != 0 ||
        name->p[pl] < '0' || name->p[pl] > '9' ||
        kj_num_scaled(name->p + pl, name->n - pl, 0, &n) != 0)
        return 0;
    st = HM_VEC_PUSH(k->b->steps);
    if (!st)
        return HM_ENOMEM;
    st->number = n;
    st->ts = s->ts;
    st->dur = s->dur;
    st->slice = slice;
    return 0;
}

/* Validates an X event's times and types. Returns 0, or 1 with the event
 * counted as skipped (one reason per event, the first that applies). */
static int complete_check(struct kj_builder *k, const struct kj_event *ev, int64_t *ts, int64_t *dur)
{
    const struct kj_tok *cat = fld(ev, KJ_F_CAT), *name = fld(ev, KJ_F_NAME);
    const struct kj_tok *tts = fld(ev, KJ_F_TS), *tdur = fld(ev, KJ_F_DUR);
    int why = -1;

    if (!tdur)
        why = HM_SKIP_NO_DUR;
    else if (!cat)
        why = HM_SKIP_NO_CAT;
    else if (!tts || tts->type != KJ_NUM || tdur->type != KJ_NUM || cat->type != KJ_STR ||
             (name && name->type != KJ_STR) || kj_tok_num(tts, 3, ts) != 0 ||
             kj_tok_num(tdur, 3, dur) != 0)
        why = HM_SKIP_BAD_VALUE;
    else if (*dur < 0)
        why = HM_SKIP_NEGATIVE_DUR;
    else if (*ts > INT64_MAX - *dur)
        why = HM_SKIP_BAD_VALUE;
    if (why < 0)
        return 0;
    k->b->info.skipped[why]++;
    return 1;
}

static int on_complete(struct kj_builder *k, const struct kj_event *ev)
{
    const struct kj_tok *cat = fld(ev, KJ_F_CAT), *name = fld(ev, KJ_F_NAME);
    struct hm_slice s = {.correlation = HM_NONE, .iteration = HM_NONE};
    struct hm_slice *dst;
    struct kj_icache *cslot;
    int64_t track, stream;
    uint32_t idx;
    int rc;

    if (complete_check(k, ev, &s.ts, &s.dur))
        return 0;
    if (!(cslot = icache_get(k, cat->p, cat->n)))
        return HM_ENOMEM;
    if (cslot->cat < 0)
        cslot->cat = (int32_t)hm_cat_parse(cat->p, cat->n);
    s.cat = (uint16_t)cslot->cat;
    s.cat_name = cslot->id;
    stream = fld_int(ev, KJ_F_A_STREAM, NOINT);
    track = slice_track(k, ev, (enum hm_cat)s.cat, stream);
    s.track = (uint32_t)track;
    s.name = name ? intern_cached(k, name->p, name->n) : 0;
    if (k->keep_args && ev->args.type == KJ_OBJ)
        s.args = append_args(k, ev->args.p, ev->args.n);
    if (track < 0 || s.cat_name == UINT32_MAX || s.name == UINT32_MAX || s.args == UINT32_MAX ||
        k->b->slices.n >= UINT32_MAX - 1)
        return HM_ENOMEM;
    s.correlation = fld_int(ev, KJ_F_A_CORRELATION, HM_NONE);
    s.external_id = fld_int(ev, KJ_F_A_EXTERNAL_ID, HM_NONE);
    s.bytes = fld_int(ev, KJ_F_A_BYTES, HM_NONE);
    if (stream != NOINT)
        s.flags |= HM_SLICE_F_STREAM_ARG;
    idx = (uint32_t)k->b->slices.n;
    dst = HM_VEC_PUSH(k->b->slices);
    if (!dst)
        return HM_ENOMEM;
    *dst = s;
    if ((rc = add_collective(k, ev, idx, &s)) != 0)
        return rc;
    return add_step(k, ev, idx, &s);
}

static int push_counter(struct kj_builder *k, int64_t ts, int32_t device, hm_strid name,
                        const struct kj_tok *t)
{
    struct hm_counter *c;
    char num[64];
    char *end;
    double v;

    if (!t || t->type != KJ_NUM || t->n >= sizeof num)
        return 0;
    memcpy(num, t->p, t->n);
    num[t->n] = '\0';
    v = strtod(num, &end);
    if (*end)
        return 0;
    c = HM_VEC_PUSH(k->b->counters);
    if (!c)
        return HM_ENOMEM;
    c->ts = ts;
    c->value = v;
    c->name = name;
    c->device = device;
    return 0;
}

/* "[memory]" instants: Total Allocated and Total Reserved on a device. */
static int on_instant(struct kj_builder *k, const struct kj_event *ev)
{
    const struct kj_tok *tts = fld(ev, KJ_F_TS);
    int64_t ts, dev;
    int rc;

    if (!tok_is(fld(ev, KJ_F_NAME), "[memory]", 8))
        return skip(k, HM_SKIP_UNSUPPORTED_PH);
    if (!tts || tts->type != KJ_NUM || kj_tok_num(tts, 3, &ts) != 0)
        return skip(k, HM_SKIP_BAD_VALUE);
    dev = fld_int(ev, KJ_F_A_DEVICE_ID, -1);
    if (dev < INT32_MIN || dev > INT32_MAX)
        dev = -1;
    if (!k->s_total_alloc) {   /* interned on first use: most traces have no [memory] */
        k->s_total_alloc = hm_batch_intern(k->b, "Total Allocated", 15);
        k->s_total_reserved = hm_batch_intern(k->b, "Total Reserved", 14);
        if (k->s_total_alloc == UINT32_MAX || k->s_total_reserved == UINT32_MAX)
            return HM_ENOMEM;
    }
    if ((rc = push_counter(k, ts, (int32_t)dev, k->s_total_alloc, fld(ev, KJ_F_A_TOTAL_ALLOC))))
        return rc;
    return push_counter(k, ts, (int32_t)dev, k->s_total_reserved, fld(ev, KJ_F_A_TOTAL_RESERVED));
}

/* thread_name / process_name metadata, kept until the tracks are named. */
static int on_meta(struct kj_builder *k, const struct kj_event *ev)
{
    const struct kj_tok *name = fld(ev, KJ_F_NAME), *label = fld(ev, KJ_F_A_NAME);
    int is_process = tok_is(name, "process_name", 12);
    struct kj_name *m;
    size_t n;

    if (!(is_process || tok_is(name, "thread_name", 11)) || !label || label->type != KJ_STR)
        return 0;
    for (n = label->n; n > 0 && (label->p[n - 1] == ' ' || label->p[n - 1] == '\t'); n--)
        ;
    m = HM_VEC_PUSH(k->names->v);
    if (!m)
        return HM_ENOMEM;
    m->pid = ident(fld(ev, KJ_F_PID));
    m->tid = ident(fld(ev, KJ_F_TID));
    m->is_process = is_process;
    m->name = hm_batch_intern(k->b, label->p, n);
    return m->name == UINT32_MAX ? HM_ENOMEM : 0;
}

/* True when the event's ts is missing or written with a fraction or an
 * exponent: HTA (pandas) then holds all ts as floats and rounds them. */
static int ts_fractional(const struct kj_event *ev)
{
    const struct kj_tok *ts = fld(ev, KJ_F_TS);

    if (!ts || ts->type != KJ_NUM)
        return 1;
    for (uint32_t i = 0; i < ts->n; i++)
        if (ts->p[i] == '.' || ts->p[i] == 'e' || ts->p[i] == 'E')
            return 1;
    return 0;
}

int kj_builder_event(void *ctx, const struct kj_event *ev)
{
    struct kj_builder *k = ctx;
    const struct kj_tok *ph = fld(ev, KJ_F_PH);
    int rc;

    if (!(k->b->info.flags & HM_INFO_F_FRACTIONAL_TS) && ts_fractional(ev)) {
        k->b->info.flags |= HM_INFO_F_FRACTIONAL_TS;
        /* Flows only ever mattered for this flag: the walk may skip them now. */
        k->skip_ph['s'] = k->skip_ph['f'] = k->skip_ph['t'] = 1;
    }
    if (ev->not_object || !ph || ph->type != KJ_STR)
        return skip(k, HM_SKIP_BAD_VALUE);
    if (ph->n != 1)
        return skip(k, HM_SKIP_UNSUPPORTED_PH);
    switch (ph->p[0]) {
    case 'X': rc = on_complete(k, ev); break;
    case 'i': case 'I': rc = on_instant(k, ev); break;
    case 'M': rc = on_meta(k, ev); break;
    /* Flows link a launch to its GPU op (ac2g) or forward to backward
     * (fwdbwd); the correlation and External id on the slices already
     * carry those links, so they are understood, not lost. */
    case 's': case 'f': case 't': return 0;
    default: return skip(k, HM_SKIP_UNSUPPORTED_PH);
    }
    if (rc && !k->fatal)
        k->fatal = rc;
    return rc;
}

/* Name of one track: its thread_name (the last one given), else the text
 * its tid was given as, else "stream N" for a GPU stream, else its
 * process_name. */
static hm_strid track_name(struct kj_builder *k, const struct hm_track *t)
{
    hm_strid thread = 0, proc = 0;
    char buf[48];

    for (size_t i = 0; i < k->names->v.n; i++) {
        const struct kj_name *m = &k->names->v.v[i];
        if (m->pid != t->pid)
            continue;
        if (m->is_process)
            proc = m->name;
        else if (m->tid == t->tid)
            thread = m->name;
    }
    if (thread)
        return thread;
    if (t->name)
        return t->name;
    if (t->kind == HM_TRACK_GPU_STREAM) {
        int n = snprintf(buf, sizeof buf, "stream %lld", (long long)t->tid);
        return hm_batch_intern(k->b, buf, (size_t)n);
    }
    return proc;
}

int kj_builder_name_tracks(struct kj_builder *k)
{
    for (size_t i = 0; i < k->b->tracks.n; i++) {
        hm_strid s = track_name(k, &k->b->tracks.v[i]);
        if (s == UINT32_MAX)
            return HM_ENOMEM;
        k->b->tracks.v[i].name = s;
    }
    return 0;
}

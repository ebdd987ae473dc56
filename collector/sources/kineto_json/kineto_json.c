/* src_kineto_read: one Kineto trace file into one batch. Loads the file
 * (gz_load.c), walks it (kineto_parse.cpp) with events going to
 * kineto_event.c and top-level members handled here (distributedInfo,
 * baseTimeNanoseconds, deviceProperties, other scalars as trace_meta), then
 * names tracks and settles the rank. It does not align clocks. */
#include "kineto_json.h"
#include "kineto_json_int.h"

#include <stdlib.h>
#include <string.h>

/* State of one read: the event builder plus the top level's leftovers. */
struct kj_read {
    struct kj_builder bld;
    const struct src_kineto_opts *opts;   /* borrowed; NULL for defaults */
    char *meta;                           /* owned; trace_meta members "k":v,... */
    size_t meta_len, meta_cap;
};

#define KEY_IS(k, n, lit) ((n) == sizeof(lit) - 1 && memcmp((k), (lit), (n)) == 0)

static int meta_append(struct kj_read *r, const char *key, size_t keylen, const char *raw,
                       size_t rawlen)
{
    size_t need = r->meta_len + keylen + rawlen + 4;

    if (need > r->meta_cap) {
        size_t cap = need * 2 < 256 ? 256 : need * 2;
        char *p = realloc(r->meta, cap);
        if (!p)
            return HM_ENOMEM;
        r->meta = p;
        r->meta_cap = cap;
    }
    if (r->meta_len)
        r->meta[r->meta_len++] = ',';
    r->meta[r->meta_len++] = '"';
    memcpy(r->meta + r->meta_len, key, keylen);
    r->meta_len += keylen;
    r->meta[r->meta_len++] = '"';
    r->meta[r->meta_len++] = ':';
    memcpy(r->meta + r->meta_len, raw, rawlen);
    r->meta_len += rawlen;
    return 0;
}

static int set_str(hm_strid *dst, hm_strid s)
{
    if (s == UINT32_MAX)
        return HM_ENOMEM;
    *dst = s;
    return 0;
}

static int on_dist(struct kj_read *r, const char *key, size_t n, const struct kj_tok *v)
{
    struct hm_batch *b = r->bld.b;
    int64_t x;

    if (KEY_IS(key, n, "rank")) {
        x = kj_tok_int(v, -1);
        if (x < 0 || x > INT32_MAX)
            return 0;
        b->info.rank = (int32_t)x;
        return set_str(&b->info.rank_source, hm_batch_intern(b, "distributedInfo", 15));
    }
    if (KEY_IS(key, n, "world_size")) {
        x = kj_tok_int(v, -1);
        if (x > 0 && x <= INT32_MAX)
            b->info.world_size = (int32_t)x;
        return 0;
    }
    if (KEY_IS(key, n, "backend") && v->type == KJ_STR)
        return set_str(&b->info.backend, hm_batch_intern(b, v->p, v->n));
    if (KEY_IS(key, n, "nccl_version") && (v->type == KJ_STR || v->type == KJ_NUM))
        return set_str(&b->info.nccl_version, hm_batch_intern(b, v->p, v->n));
    if (KEY_IS(key, n, "pg_config") && (v->type == KJ_ARR || v->type == KJ_OBJ))
        return set_str(&b->info.pg_config, kj_builder_intern_json(&r->bld, v->p, v->n));
    return 0;
}

/* The sink's member callback: a top-level member or one of distributedInfo. */
static int on_member(void *ctx, enum kj_section sec, const char *key, size_t n,
                     const struct kj_tok *v, const char *raw, size_t rawlen)
{
    struct kj_read *r = ctx;
    struct hm_batch *b = r->bld.b;

    if (sec == KJ_SEC_DIST)
        return on_dist(r, key, n, v);
    if (KEY_IS(key, n, "baseTimeNanoseconds")) {
        b->info.base_time_ns = kj_tok_int(v, HM_NONE);
        return 0;
    }
    if (KEY_IS(key, n, "deviceProperties")) {
        if (v->type != KJ_ARR && v->type != KJ_OBJ)
            return 0;
        return set_str(&b->info.device_props, kj_builder_intern_json(&r->bld, v->p, v->n));
    }
    if (KEY_IS(key, n, "displayTimeUnit"))
        return 0;
    if (v->type == KJ_NUM || v->type == KJ_STR || v->type == KJ_BOOL || v->type == KJ_NULL)
        return meta_append(r, key, n, raw, rawlen);
    return 0;   /* other containers (e.g. INFO log lines) are not kept */
}

static int on_event(void *ctx, const struct kj_event *ev)
{
    return kj_builder_event(&((struct kj_read *)ctx)->bld, ev);
}

static void on_progress(void *ctx, uint64_t done)
{
    struct kj_read *r = ctx;

    r->opts->progress(r->opts->progress_ctx, done);
}

/* After the walk: track names, trace_meta, source file and rank. */
static int finish(struct kj_read *r, const char *path)
{
    struct hm_batch *b = r->bld.b;
    const char *how = "distributedInfo";
    int rc;

    kj_builder_trim(&r->bld);
    if ((rc = kj_builder_name_tracks(&r->bld)) != 0)
        return rc;
    if (r->meta_len) {
        char *p = realloc(r->meta, r->meta_len + 2);
        if (!p)
            return HM_ENOMEM;
        r->meta = p;
        memmove(p + 1, p, r->meta_len);
        p[0] = '{';
        p[r->meta_len + 1] = '}';
        if ((rc = set_str(&b->info.trace_meta, hm_batch_intern(b, p, r->meta_len + 2))) != 0)
            return rc;
    }
    if ((rc = set_str(&b->info.source_file, hm_batch_intern(b, path, strlen(path)))) != 0)
        return rc;
    if (b->info.rank == HM_NONE) {
        b->info.rank = src_kineto_rank_from_name(path);
        how = b->info.rank == HM_NONE ? "none" : "file name";
    }
    return set_str(&b->info.rank_source, hm_batch_intern(b, how, strlen(how)));
}

/* Walks buf into r's batch; fills err on failure. */
static int walk(struct kj_read *r, const struct kj_buf *buf, const char *path, struct hm_err *err)
{
    struct kj_sink sink = {.ctx = r, .event = on_event, .member = on_member,
                           .skip_ph = r->bld.skip_ph};
    struct kj_fail fail;
    int rc;

    if (r->opts && r->opts->progress)
        sink.progress = on_progress;
    rc = kj_parse(buf->data, buf->len, &sink, &fail);
    if (rc == 0)
        return 0;
    if (rc == HM_EFORMAT)
        return hm_err_set(err, rc, path, fail.offset, "%s%s%s%s", fail.msg,
                          fail.detail ? " (" : "", fail.detail ? fail.detail : "",
                          fail.detail ? ")" : "");
    if (rc == HM_ENOMEM)
        return hm_err_set(err, rc, path, -1, "out of memory while reading the trace");
    return hm_err_set(err, rc, path, -1, "reading the trace failed");
}

/* Parses a loaded buffer (taking it: it is freed before returning) into
 * a new batch; path names the file. */
static int read_buf(struct kj_buf buf, const char *path, const struct src_kineto_opts *opts,
                    struct hm_batch **out, struct hm_err *err)
{
    struct kj_read r;
    struct hm_batch *b = NULL;
    int rc;

    memset(&r, 0, sizeof r);
    r.opts = opts;
    b = hm_batch_new();
    if (!b || kj_builder_init(&r.bld, b, opts ? opts->keep_args : 1) != 0) {
        rc = hm_err_set(err, HM_ENOMEM, path, -1, "out of memory");
        goto fail;
    }
    kj_builder_presize(&r.bld, buf.len);
    rc = walk(&r, &buf, path, err);
    b->source_bytes = buf.len;
    kj_buf_free(&buf);
    if (rc != 0)
        goto fail;
    if ((rc = finish(&r, path)) != 0) {
        hm_err_set(err, rc, path, -1, "out of memory");
        goto fail;
    }
    kj_builder_fini(&r.bld);
    free(r.meta);
    *out = b;
    return 0;
fail:
    kj_buf_free(&buf);
    kj_builder_fini(&r.bld);
    free(r.meta);
    hm_batch_free(b);
    return rc;
}

int src_kineto_read(const char *path, const struct src_kineto_opts *opts,
                    struct hm_batch **out, struct hm_err *err)
{
    struct kj_buf buf;
    int rc;

    *out = NULL;
    if ((rc = kj_load(path, &buf, err)) != 0)
        return rc;
    return read_buf(buf, path, opts, out, err);
}

int src_kineto_read_mem(const void *data, size_t size, const char *name,
                        const struct src_kineto_opts *opts, struct hm_batch **out,
                        struct hm_err *err)
{
    struct kj_buf buf;
    int rc;

    *out = NULL;
    if ((rc = kj_load_mem(data, size, name, &buf, err)) != 0)
        return rc;
    return read_buf(buf, name, opts, out, err);
}

void src_kineto_release_thread_cache(void)
{
    kj_load_release_thread();
    kj_parse_release_thread();
}

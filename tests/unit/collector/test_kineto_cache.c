/* The Kineto reader's per-thread scratch (its decompressed-JSON buffer,
 * simdjson parser and decompressor, kept from one read to the next on a
 * thread): reads on a thread that keeps them give the same batches as
 * fresh ones, in any order of large and small, plain and gzip files;
 * worker threads that exit free theirs (LeakSanitizer reports it
 * otherwise); a read nested in another's progress callback works;
 * releasing the cache at any time is safe; a short file read after a long
 * one does not see the long one's leftovers; and plain files (mapped, not
 * read) whose size ends at or near a page boundary still parse. */
#include "test.h"

#include <pthread.h>
#include <unistd.h>
#include <zlib.h>

#include "collector/sources/kineto_json/kineto_json.h"

#define NFILES 5

static const char *files[NFILES];
static char paths[NFILES][4096];

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v;
    h *= 0x100000001b3ull;
    return h ^ (h >> 29);
}

static uint64_t mix_str(uint64_t h, const struct hm_batch *b, hm_strid id)
{
    const char *s = hm_batch_str(b, id);

    h = mix(h, strlen(s));
    for (; *s; s++)
        h = mix(h, (unsigned char)*s);
    return h;
}

/* A digest of everything a batch holds, strings by text (ids may differ
 * between equal batches only for appended strings, which they do not). */
static uint64_t digest(const struct hm_batch *b)
{
    uint64_t h = 14695981039346656037ull;

    h = mix(h, (uint64_t)b->info.rank);
    h = mix(h, b->info.flags);
    h = mix(h, b->source_bytes);
    for (int i = 0; i < HM_SKIP__COUNT; i++)
        h = mix(h, b->info.skipped[i]);
    h = mix_str(h, b, b->info.trace_meta);
    h = mix_str(h, b, b->info.device_props);
    h = mix_str(h, b, b->info.pg_config);
    for (size_t i = 0; i < b->tracks.n; i++) {
        const struct hm_track *t = &b->tracks.v[i];
        h = mix(mix(mix(h, t->kind), (uint64_t)t->pid), (uint64_t)t->tid);
        h = mix_str(h, b, t->name);
    }
    for (size_t i = 0; i < b->slices.n; i++) {
        const struct hm_slice *s = &b->slices.v[i];
        h = mix(mix(mix(h, (uint64_t)s->ts), (uint64_t)s->dur), (uint64_t)s->correlation);
        h = mix(mix(mix(h, (uint64_t)s->external_id), (uint64_t)s->bytes), s->track);
        h = mix(mix(h, s->cat), s->flags);
        h = mix_str(mix_str(mix_str(h, b, s->name), b, s->cat_name), b, s->args);
    }
    for (size_t i = 0; i < b->collectives.n; i++) {
        const struct hm_collective *c = &b->collectives.v[i];
        h = mix(mix(mix(h, c->slice), (uint64_t)c->seq), (uint64_t)c->in_nelems);
        h = mix_str(mix_str(h, b, c->op), b, c->pg_ranks);
    }
    for (size_t i = 0; i < b->counters.n; i++)
        h = mix(mix(h, (uint64_t)b->counters.v[i].ts), (uint64_t)b->counters.v[i].value);
    for (size_t i = 0; i < b->steps.n; i++)
        h = mix(mix(h, (uint64_t)b->steps.v[i].number), (uint64_t)b->steps.v[i].ts);
    return h;
}

/* Reads path and digests it; 0 when the read failed. */
static uint64_t read_digest(const char *path, const struct src_kineto_opts *opts, size_t *nslices)
{
    struct hm_batch *b = NULL;
    struct hm_err err;
    uint64_t d;

    hm_err_clear(&err);
    if (src_kineto_read(path, opts, &b, &err) != 0) {
        fprintf(stderr, "%s: %s\n", path, err.msg);
        return 0;
    }
    d = digest(b);
    if (nslices)
        *nslices = b->slices.n;
    hm_batch_free(b);
    return d;
}

/* Writes the decompressed text of a gzip fixture as a plain file. */
static int gunzip_to(const char *gz, const char *out)
{
    gzFile in = gzopen(gz, "rb");
    FILE *f = fopen(out, "wb");
    char buf[65536];
    int n, ok = in && f;

    while (ok && (n = gzread(in, buf, sizeof buf)) > 0)
        ok = fwrite(buf, 1, (size_t)n, f) == (size_t)n;
    if (in)
        gzclose(in);
    if (f && fclose(f) != 0)
        ok = 0;
    return ok ? 0 : -1;
}

static int write_file(const char *path, const void *data, size_t n)
{
    FILE *f;
    size_t w;

    remove(path);
    f = fopen(path, "wb");
    if (!f)
        return -1;
    w = fwrite(data, 1, n, f);
    return fclose(f) == 0 && w == n ? 0 : -1;
}

static int gzip_file(const char *path, const char *text, size_t n)
{
    gzFile f = gzopen(path, "wb6");
    int ok = f && gzwrite(f, text, (unsigned)n) == (int)n;

    if (f && gzclose(f) != Z_OK)
        ok = 0;
    return ok ? 0 : -1;
}

static void setup_files(void)
{
    static const char *gz[] = {
        "hta/nccl_parser_config/nccl_data.json.gz",    /* ~10 MB of JSON */
        "hta/trace_filter/sampled_rank-0.json.gz",
        "gloo/ddp4_none/rank-1.pt.trace.json.gz",
    };

    for (int i = 0; i < 3; i++) {
        snprintf(paths[i], sizeof paths[i], "%s", hm_fixture(gz[i]));
        files[i] = paths[i];
    }
    /* The same texts as plain files: mapped rather than inflated. */
    snprintf(paths[3], sizeof paths[3], "%s", hm_tmpfile("cache_nccl_data.json"));
    CHECK_EQ_INT(gunzip_to(files[0], paths[3]), 0);
    files[3] = paths[3];
    snprintf(paths[4], sizeof paths[4], "%s", hm_tmpfile("cache_rank-1.json"));
    CHECK_EQ_INT(gunzip_to(files[2], paths[4]), 0);
    files[4] = paths[4];
}

/* Reads every file in a few orders on this thread; each read must digest
 * as the fresh reads in ref did. Returns the number of mismatches. */
static int read_orders(const uint64_t ref[NFILES])
{
    static const int order[] = {0, 1, 0, 2, 3, 4, 3, 1, 4, 0, 2, 2, 3};
    struct src_kineto_opts opts = {.keep_args = 1};
    int bad = 0;

    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++)
        bad += read_digest(files[order[i]], &opts, NULL) != ref[order[i]];
    return bad;
}

static uint64_t ref[NFILES];

static void *worker(void *arg)
{
    int *bad = arg;

    *bad = read_orders(ref);
    return NULL;   /* the thread's cache is freed as it exits */
}

static void test_reuse(void)
{
    struct src_kineto_opts opts = {.keep_args = 1};
    pthread_t th[3];
    int bad[3] = {0, 0, 0};

    for (int i = 0; i < NFILES; i++) {
        src_kineto_release_thread_cache();   /* every reference read is a fresh one */
        ref[i] = read_digest(files[i], &opts, NULL);
        CHECK(ref[i] != 0);
    }
    CHECK(ref[0] != ref[1] && ref[0] != ref[2]);
    CHECK_EQ_INT(read_orders(ref), 0);
    for (int i = 0; i < 3; i++)
        CHECK_EQ_INT(pthread_create(&th[i], NULL, worker, &bad[i]), 0);
    for (int i = 0; i < 3; i++) {
        pthread_join(th[i], NULL);
        CHECK_EQ_INT(bad[i], 0);
    }
    src_kineto_release_thread_cache();
    src_kineto_release_thread_cache();
    CHECK_EQ_INT(read_orders(ref), 0);
}

/* A read from inside another read's progress callback (the outer read
 * holds the thread's buffer and parser: the inner one gets its own). */
struct nest {
    int done;
    uint64_t digest;
};

static void nested_progress(void *ctx, uint64_t bytes)
{
    struct nest *n = ctx;
    struct src_kineto_opts opts = {.keep_args = 1};

    (void)bytes;
    if (n->done++)
        return;
    src_kineto_release_thread_cache();   /* nothing of the outer read's may go */
    n->digest = read_digest(files[2], &opts, NULL);
}

static void test_nested(void)
{
    struct nest n = {0, 0};
    struct src_kineto_opts opts = {.keep_args = 1, .progress = nested_progress, .progress_ctx = &n};

    for (int f = 0; f < 4; f += 3) {   /* gzip, then plain */
        n.done = 0;
        n.digest = 0;
        CHECK_EQ_INT(read_digest(files[f], &opts, NULL), ref[f]);
        CHECK(n.done > 0);
        CHECK_EQ_INT(n.digest, ref[2]);
    }
    CHECK_EQ_INT(read_orders(ref), 0);
}

/* A short gzip read into the buffer a long one left behind is cut where
 * its own text ends, not where the old text did. */
static void test_leftovers(void)
{
    static const char text[] =
        "{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"a\", \"pid\": 1, "
        "\"tid\": 1, \"ts\": 1, \"dur\": 2}, {\"ph\": \"X\", \"cat\": \"cpu_op\"";
    const char *path = hm_tmpfile("cache_cut.json.gz");
    struct hm_batch *b = NULL;
    struct hm_err err;

    CHECK_EQ_INT(gzip_file(path, text, sizeof text - 1), 0);
    CHECK_EQ_INT(read_digest(files[0], NULL, NULL), ref[0]);
    hm_err_clear(&err);
    CHECK_EQ_INT(src_kineto_read(path, NULL, &b, &err), HM_EFORMAT);
    CHECK(b == NULL);
    CHECK_EQ_INT(err.offset, (int64_t)(sizeof text - 1));
    CHECK_CONTAINS(err.msg, "truncated JSON");
}

/* Plain files whose text ends exactly at, just before and just after a
 * page boundary: the padding after it comes from the rest of the last
 * page or from the zero pages mapped after it. Whole, they parse; cut by
 * one byte, they fail as truncated at their end. */
static void test_page_edges(void)
{
    static const char trace[] =
        "{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"a\", \"pid\": 1, "
        "\"tid\": 1, \"ts\": 1, \"dur\": 2, \"args\": {\"External id\": 7}}]}";
    const size_t tlen = sizeof trace - 1;
    const char *path = hm_tmpfile("cache_page.json");
    long page = sysconf(_SC_PAGESIZE);
    const long deltas[] = {-65, -64, -63, -1, 0, 1, 63, 64};
    char *text = malloc((size_t)page * 3);

    if (!text || page < 256) {
        free(text);
        return;
    }
    for (size_t i = 0; i < sizeof deltas / sizeof deltas[0]; i++) {
        for (size_t k = 1; k <= 2; k++) {
            size_t n = (size_t)((long)k * page + deltas[i]), slices = 0;
            struct hm_batch *b = NULL;
            struct hm_err err;

            memset(text, ' ', n);   /* leading whitespace, then the trace up to the end */
            memcpy(text + n - tlen, trace, tlen);
            CHECK_EQ_INT(write_file(path, text, n), 0);
            CHECK(read_digest(path, NULL, &slices) != 0);
            CHECK_EQ_INT(slices, 1);
            memmove(text + 1, text, n - 1);   /* the same, less its closing brace */
            CHECK_EQ_INT(write_file(path, text, n), 0);
            hm_err_clear(&err);
            CHECK_EQ_INT(src_kineto_read(path, NULL, &b, &err), HM_EFORMAT);
            CHECK(b == NULL);
            CHECK_EQ_INT(err.offset, (int64_t)n);
            CHECK_CONTAINS(err.msg, "truncated JSON");
        }
    }
    free(text);
}

int main(void)
{
    setup_files();
    test_reuse();
    test_nested();
    test_leftovers();
    test_page_edges();
    /* The main thread's cache would still be reachable at exit; release it
     * anyway, as a long-lived thread done reading would. */
    src_kineto_release_thread_cache();
    return hm_test_done();
}

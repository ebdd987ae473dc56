/* Loading a trace (a file, or bytes in memory) into one padded buffer,
 * inflating gzip on the way. Gzip is recognised by its magic bytes; a name
 * ending in .gz without them is refused ("not a gzip file"). The fast path
 * sizes the output from the last member's ISIZE trailer and inflates with
 * libdeflate in one call per member; when that hint is wrong (multi-member
 * files, files of 4 GiB or more whose ISIZE wrapped) or the data is bad,
 * zlib inflates as a stream into a growing buffer and, on bad data, says
 * what and where.
 * The output buffer and the libdeflate decompressor are kept per thread
 * from one file to the next (first-touch page faults and munmap of a fresh
 * buffer per file were a third of parse time). Files are read, never
 * mapped: a mapped file that another process truncates faults (SIGBUS) on
 * the next access, and trace files are written by running profilers. It
 * does not parse JSON (kineto_parse.cpp does). */
#include "kineto_json_int.h"

#include <errno.h>
#include <fcntl.h>
#include <libdeflate.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

/* The compressed input: borrowed bytes in memory, or a file read whole. */
struct gz_in {
    const unsigned char *p;   /* owned when owned is set, else borrowed */
    size_t n;
    int owned;
};

/* ---- The thread's cache ----
 * One output buffer (the largest recently used, up to KJ_KEEP_MAX) and one
 * decompressor. A buffer is taken out of the cache while in use, so a
 * nested read on the same thread simply allocates its own. The cache is
 * freed at thread exit (a pthread key destructor) or by
 * kj_load_release_thread; the main thread's stays reachable until exit. */
struct kj_tcache {
    char *buf;                               /* owned, or NULL */
    size_t cap;
    struct libdeflate_decompressor *d;       /* owned, or NULL */
    int registered;                          /* the key's destructor will run */
};

static _Thread_local struct kj_tcache tc;
static pthread_key_t tc_key;
static pthread_once_t tc_once = PTHREAD_ONCE_INIT;
static int tc_key_ok;

void kj_load_release_thread(void)
{
    free(tc.buf);
    tc.buf = NULL;
    tc.cap = 0;
    if (tc.d)
        libdeflate_free_decompressor(tc.d);
    tc.d = NULL;
}

static void tc_destroy(void *unused)
{
    (void)unused;
    kj_load_release_thread();
    tc.registered = 0;
}

static void tc_key_init(void)
{
    tc_key_ok = pthread_key_create(&tc_key, tc_destroy) == 0;
}

/* True when this thread may keep things in its cache (they will be freed
 * when it exits). */
static int tc_ready(void)
{
    if (tc.registered)
        return 1;
    pthread_once(&tc_once, tc_key_init);
    if (tc_key_ok && pthread_setspecific(tc_key, &tc) == 0)
        tc.registered = 1;
    return tc.registered;
}

/* Large buffers sit on 2 MiB boundaries and ask for transparent huge
 * pages: read() from the page cache into 4 KiB pages ran at a third of the
 * speed (measured: 35 MB in 20-27 ms against 7.5 ms), which made reading a
 * file cost more than mapping it. */
#define HUGE_PAGE ((size_t)1 << 21)

static char *buf_alloc(size_t c)
{
    void *p;

    if (c < HUGE_PAGE)
        return malloc(c);
    if (posix_memalign(&p, HUGE_PAGE, c) != 0)
        return NULL;
    madvise(p, c, MADV_HUGEPAGE);   /* a hint: fine if refused */
    return p;
}

/* A buffer of at least n bytes (*cap gets its size): the cached one when it
 * is big enough, else a new one with some room to spare for the next file
 * (whole 2 MiB). Its contents are undefined. NULL when out of memory. */
static char *buf_get(size_t n, size_t *cap)
{
    char *p;
    size_t c;

    if (tc.buf && tc.cap >= n) {
        p = tc.buf;
        *cap = tc.cap;
        tc.buf = NULL;
        tc.cap = 0;
        return p;
    }
    free(tc.buf);   /* too small: no need to copy it */
    tc.buf = NULL;
    tc.cap = 0;
    c = n + n / 16;
    c = c < n ? n : (c + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
    if (c < n)
        c = n;
    if (!(p = buf_alloc(c)) && c > n && (p = buf_alloc(n)))
        c = n;
    *cap = c;
    return p;
}

/* Gives a buffer back: kept as the thread's cache when it is the largest
 * one and not too large, else freed. */
static void buf_put(char *p, size_t cap)
{
    if (!p)
        return;
    if (cap <= KJ_KEEP_MAX && cap > tc.cap && tc_ready()) {
        free(tc.buf);
        tc.buf = p;
        tc.cap = cap;
        return;
    }
    free(p);
}

static struct libdeflate_decompressor *dec_get(void)
{
    struct libdeflate_decompressor *d = tc.d;

    tc.d = NULL;
    return d ? d : libdeflate_alloc_decompressor();
}

static void dec_put(struct libdeflate_decompressor *d)
{
    if (d && !tc.d && tc_ready())
        tc.d = d;
    else if (d)
        libdeflate_free_decompressor(d);
}

void kj_buf_free(struct kj_buf *b)
{
    if (!b)
        return;
    buf_put(b->data, b->cap);
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
}

/* Reads exactly n bytes at offset 0 of fd into dst (n is the size fstat
 * gave: bytes appended since are not read). Returns 0, or an HM_E* code
 * with err filled: a read error, or the file shrank while being read. */
static int read_all(int fd, char *dst, size_t n, const char *path, struct hm_err *err)
{
    size_t done = 0;

    while (done < n) {
        ssize_t r = pread(fd, dst + done, n - done > (1u << 30) ? (1u << 30) : n - done,
                          (off_t)done);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return hm_err_set(err, HM_EIO, path, (int64_t)done, "read failed: %s",
                              strerror(errno));
        if (r == 0)
            return hm_err_set(err, HM_EIO, path, (int64_t)done,
                              "file shrank while being read: %zu of %zu bytes left", done, n);
        done += (size_t)r;
    }
    return 0;
}

/* Plain JSON: read into the thread's cached buffer. Mapping the file
 * instead saved a copy, but a file truncated while mapped faults (SIGBUS):
 * with the buffer reused from file to file, the copy costs little. */
static int load_plain(int fd, size_t size, const char *path, struct kj_buf *out,
                      struct hm_err *err)
{
    size_t cap;
    char *p = size > SIZE_MAX - KJ_PADDING ? NULL : buf_get(size + KJ_PADDING, &cap);
    int rc;

    if (!p)
        return hm_err_set(err, HM_ENOMEM, path, -1, "out of memory reading %zu bytes", size);
    if ((rc = read_all(fd, p, size, path, err)) != 0) {
        buf_put(p, cap);
        return rc;
    }
    memset(p + size, 0, KJ_PADDING);
    out->data = p;
    out->len = size;
    out->cap = cap;
    return 0;
}

/* Plain JSON given in memory: copied, since the walk needs padding after it. */
static int copy_plain(const void *data, size_t size, const char *name, struct kj_buf *out,
                      struct hm_err *err)
{
    size_t cap;
    char *p = size > SIZE_MAX - KJ_PADDING ? NULL : buf_get(size + KJ_PADDING, &cap);

    if (!p)
        return hm_err_set(err, HM_ENOMEM, name, -1, "out of memory copying %zu bytes", size);
    memcpy(p, data, size);
    memset(p + size, 0, KJ_PADDING);
    out->data = p;
    out->len = size;
    out->cap = cap;
    return 0;
}

/* Reads the compressed file whole (inflating takes far longer than this). */
static int read_input(int fd, size_t size, const char *path, struct gz_in *in, struct hm_err *err)
{
    unsigned char *p = malloc(size);
    int rc;

    if (!p)
        return hm_err_set(err, HM_ENOMEM, path, -1, "out of memory reading %zu bytes", size);
    if ((rc = read_all(fd, (char *)p, size, path, err)) != 0) {
        free(p);
        return rc;
    }
    in->p = p;
    in->n = size;
    in->owned = 1;
    return 0;
}

static void free_input(struct gz_in *in)
{
    if (in->owned)
        free((void *)in->p);
}

/* Bytes after the last member that may be ignored: zero padding (tape and
 * block-device images pad so; gzip(1) accepts it). */
static int only_zeros(const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i])
            return 0;
    return 1;
}

static int has_magic(const unsigned char *p, size_t n)
{
    return n >= 2 && p[0] == 0x1f && p[1] == 0x8b;
}

static int name_says_gzip(const char *name)
{
    size_t n = name ? strlen(name) : 0;
    return n >= 3 && strcasecmp(name + n - 3, ".gz") == 0;
}

/* A name ending in .gz promises gzip. Bytes without the magic are refused
 * here: read as JSON instead, random bytes failed as "truncated JSON" or
 * "invalid JSON" depending on what they happened to be. p holds the first
 * min(n, 2) bytes of a non-empty input. Returns 0 when the bytes may be
 * read as the name says. */
static int check_gzip_name(const unsigned char *p, size_t n, const char *name, struct hm_err *err)
{
    char first[8];

    if (!name_says_gzip(name) || has_magic(p, n))
        return 0;
    if (n < 2 && p[0] == 0x1f)
        return hm_err_set(err, HM_EFORMAT, name, (int64_t)n,
                          "truncated gzip stream: only %zu bytes", n);
    if (n >= 2)
        snprintf(first, sizeof first, "%02x %02x", p[0], p[1]);
    else
        snprintf(first, sizeof first, "%02x", p[0]);
    return hm_err_set(err, HM_EFORMAT, name, p[0] == 0x1f ? 1 : 0,
                      "not a gzip file (no 1f 8b header: starts with %s)%s", first,
                      p[0] == '{' || p[0] == '[' ? "; it looks like plain JSON: name it .json" : "");
}

/* Fast path: one libdeflate call per member into a buffer sized from the
 * ISIZE hint. Returns 0 with out filled, or -1 to ask for the zlib path
 * (output too small, bad data, or no memory for the hint). */
static int inflate_fast(const struct gz_in *in, struct kj_buf *out)
{
    uint32_t isize = (uint32_t)in->p[in->n - 4] | (uint32_t)in->p[in->n - 3] << 8 |
                     (uint32_t)in->p[in->n - 2] << 16 | (uint32_t)in->p[in->n - 1] << 24;
    size_t cap, pos = 0, len = 0;
    struct libdeflate_decompressor *d;
    char *buf;

    /* Deflate cannot expand more than ~1032:1; a larger hint is a lie. */
    if (in->n >= ((size_t)1 << 32) || isize / 1032 > in->n)
        return -1;
    buf = buf_get((size_t)isize + KJ_PADDING, &cap);
    cap -= KJ_PADDING;   /* room for output; a reused buffer may hold more than the hint */
    d = dec_get();
    if (!buf || !d)
        goto fail;
    while (pos < in->n && has_magic(in->p + pos, in->n - pos)) {
        size_t used_in = 0, used_out = 0;
        if (libdeflate_gzip_decompress_ex(d, in->p + pos, in->n - pos, buf + len, cap - len,
                                          &used_in, &used_out) != LIBDEFLATE_SUCCESS)
            goto fail;
        pos += used_in;
        len += used_out;
    }
    if (pos == 0 || !only_zeros(in->p + pos, in->n - pos))
        goto fail;
    dec_put(d);
    memset(buf + len, 0, KJ_PADDING);
    out->data = buf;
    out->len = len;
    out->cap = cap + KJ_PADDING;
    return 0;
fail:
    dec_put(d);
    buf_put(buf, cap + KJ_PADDING);
    return -1;
}

/* Makes room for at least one more output byte plus the padding. */
static int grow(char **buf, size_t *cap, size_t len)
{
    size_t ncap;
    char *p;

    if (len + KJ_PADDING < *cap)
        return 0;
    ncap = *cap < (1u << 20) ? (1u << 20) : *cap + *cap / 2;
    p = realloc(*buf, ncap);
    if (!p)
        return -1;
    *buf = p;
    *cap = ncap;
    return 0;
}

/* Why inflate stopped: input ran out (Z_BUF_ERROR with nothing left),
 * memory, or bad data (zlib's message: bad block type, CRC mismatch...). */
static int inflate_failed(int rc, const z_stream *z, size_t pos, size_t len, const char *path,
                          struct hm_err *err)
{
    if (rc == Z_BUF_ERROR)
        return hm_err_set(err, HM_EFORMAT, path, (int64_t)pos,
                          "truncated gzip stream: input ends at compressed byte %zu "
                          "(%zu bytes inflated)", pos, len);
    if (rc == Z_MEM_ERROR)
        return hm_err_set(err, HM_ENOMEM, path, -1, "out of memory inflating gzip");
    return hm_err_set(err, HM_EFORMAT, path, (int64_t)pos, "corrupt gzip data at byte %zu: %s",
                      pos, z->msg ? z->msg : "bad stream");
}

/* Slow path: zlib streaming inflate over every member into a growing
 * buffer; says precisely why when the stream is truncated or corrupt. */
static int inflate_stream(const struct gz_in *in, const char *path, struct kj_buf *out,
                          struct hm_err *err)
{
    z_stream z;
    size_t cap;
    size_t len = 0, pos = 0;
    char *buf = buf_get((in->n < (1u << 28) ? in->n * 4 : (size_t)1 << 30) + KJ_PADDING, &cap);
    int rc = Z_OK, ret = 0;

    memset(&z, 0, sizeof z);
    if (!buf || inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) {
        buf_put(buf, cap);
        return hm_err_set(err, HM_ENOMEM, path, -1, "out of memory inflating gzip");
    }
    for (;;) {
        if (len > KJ_MAX_JSON) {
            ret = hm_err_set(err, HM_EFORMAT, path, (int64_t)pos,
                             "decompressed JSON larger than 4 GiB is not supported");
            break;
        }
        if (grow(&buf, &cap, len) != 0) {
            ret = hm_err_set(err, HM_ENOMEM, path, -1, "out of memory inflating gzip");
            break;
        }
        z.next_in = (unsigned char *)in->p + pos;
        z.avail_in = (uInt)(in->n - pos > (1u << 30) ? (1u << 30) : in->n - pos);
        z.next_out = (unsigned char *)buf + len;
        z.avail_out = (uInt)(cap - KJ_PADDING - len > (1u << 30) ? (1u << 30) : cap - KJ_PADDING - len);
        uInt ain = z.avail_in, aout = z.avail_out;
        rc = inflate(&z, Z_NO_FLUSH);
        pos += ain - z.avail_in;
        len += aout - z.avail_out;
        if (rc == Z_STREAM_END) {
            if (pos < in->n && has_magic(in->p + pos, in->n - pos)) {
                inflateReset(&z);
                continue;
            }
            if (!only_zeros(in->p + pos, in->n - pos))
                ret = hm_err_set(err, HM_EFORMAT, path, (int64_t)pos,
                                 "corrupt gzip data at byte %zu: trailing garbage after the "
                                 "last member", pos);
            break;
        }
        if (rc == Z_OK || (rc == Z_BUF_ERROR && pos < in->n))
            continue;
        ret = inflate_failed(rc, &z, pos, len, path, err);
        break;
    }
    inflateEnd(&z);
    if (ret) {
        buf_put(buf, cap);
        return ret;
    }
    memset(buf + len, 0, KJ_PADDING);
    out->data = buf;
    out->len = len;
    out->cap = cap;
    return 0;
}

/* Inflates in (any size; fewer than 18 bytes cannot be a gzip member). */
static int inflate_input(const struct gz_in *in, const char *path, struct kj_buf *out,
                         struct hm_err *err)
{
    if (in->n < 18)
        return hm_err_set(err, HM_EFORMAT, path, (int64_t)in->n,
                          "truncated gzip stream: only %zu bytes", in->n);
    if (inflate_fast(in, out) == 0)
        return 0;
    return inflate_stream(in, path, out, err);
}

static int load_gzip(int fd, size_t size, const char *path, struct kj_buf *out,
                     struct hm_err *err)
{
    struct gz_in in = {.p = NULL, .n = 0, .owned = 0};
    int rc;

    if (size < 18)
        return hm_err_set(err, HM_EFORMAT, path, (int64_t)size,
                          "truncated gzip stream: only %zu bytes", size);
    if ((rc = read_input(fd, size, path, &in, err)) != 0)
        return rc;
    rc = inflate_input(&in, path, out, err);
    free_input(&in);
    return rc;
}

/* An empty result is refused here, for files and memory alike. */
static int check_empty(int rc, const char *name, struct kj_buf *out, struct hm_err *err)
{
    if (rc == 0 && out->len == 0) {
        kj_buf_free(out);
        rc = hm_err_set(err, HM_EFORMAT, name, 0, "empty file (gzip holds no data)");
    }
    return rc;
}

int kj_load_mem(const void *data, size_t size, const char *name, struct kj_buf *out,
                struct hm_err *err)
{
    struct gz_in in = {.p = data, .n = size, .owned = 0};
    int rc;

    out->data = NULL;
    out->len = 0;
    out->cap = 0;
    if (size == 0)
        return hm_err_set(err, HM_EFORMAT, name, 0, "empty file");
    if ((rc = check_gzip_name(data, size, name, err)) != 0)
        return rc;
    if (has_magic(data, size))
        return check_empty(inflate_input(&in, name, out, err), name, out, err);
    return check_empty(copy_plain(data, size, name, out, err), name, out, err);
}

int kj_load(const char *path, struct kj_buf *out, struct hm_err *err)
{
    unsigned char magic[2] = {0, 0};
    struct stat st;
    ssize_t got;
    int fd, rc;

    out->data = NULL;
    out->len = 0;
    out->cap = 0;
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return hm_err_set(err, HM_EIO, path, -1, "cannot open: %s", strerror(errno));
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        rc = hm_err_set(err, HM_EIO, path, -1, "not a regular file");
        goto done;
    }
    if (st.st_size == 0) {
        rc = hm_err_set(err, HM_EFORMAT, path, 0, "empty file");
        goto done;
    }
    if ((got = pread(fd, magic, 2, 0)) < 0) {
        rc = hm_err_set(err, HM_EIO, path, -1, "read failed: %s", strerror(errno));
        goto done;
    }
    if (got == 0) {   /* emptied since fstat */
        rc = hm_err_set(err, HM_EFORMAT, path, 0, "empty file");
        goto done;
    }
    if ((rc = check_gzip_name(magic, (size_t)got, path, err)) != 0)
        goto done;
    if (magic[0] == 0x1f && magic[1] == 0x8b)
        rc = load_gzip(fd, (size_t)st.st_size, path, out, err);
    else
        rc = load_plain(fd, (size_t)st.st_size, path, out, err);
    rc = check_empty(rc, path, out, err);
done:
    close(fd);
    return rc;
}

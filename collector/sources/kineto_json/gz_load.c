/* Loading a trace file into one padded buffer, inflating gzip on the way.
 * Gzip is recognised by its magic bytes. The fast path sizes the output
 * from the last member's ISIZE trailer and inflates with libdeflate in one
 * call per member; when that hint is wrong (multi-member files, files of
 * 4 GiB or more whose ISIZE wrapped) or the data is bad, zlib inflates as a
 * stream into a growing buffer and, on bad data, says what and where.
 * It does not parse JSON (kineto_parse.cpp does). */
#include "kineto_json_int.h"

#include <errno.h>
#include <fcntl.h>
#include <libdeflate.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

/* The compressed file, mapped (or read when mapping fails). */
struct gz_in {
    const unsigned char *p;
    size_t n;
    int mapped;
};

void kj_buf_free(struct kj_buf *b)
{
    if (!b)
        return;
    free(b->data);
    b->data = NULL;
    b->len = 0;
}

/* Reads exactly n bytes at offset 0 of fd into dst. */
static int read_all(int fd, char *dst, size_t n)
{
    size_t done = 0;

    while (done < n) {
        ssize_t r = pread(fd, dst + done, n - done > (1u << 30) ? (1u << 30) : n - done,
                          (off_t)done);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        done += (size_t)r;
    }
    return 0;
}

static int load_plain(int fd, size_t size, const char *path, struct kj_buf *out,
                      struct hm_err *err)
{
    char *p = malloc(size + KJ_PADDING);

    if (!p)
        return hm_err_set(err, HM_ENOMEM, path, -1, "out of memory reading %zu bytes", size);
    if (read_all(fd, p, size) != 0) {
        free(p);
        return hm_err_set(err, HM_EIO, path, -1, "read failed: %s",
                          errno ? strerror(errno) : "file shrank while reading");
    }
    memset(p + size, 0, KJ_PADDING);
    out->data = p;
    out->len = size;
    return 0;
}

static int map_input(int fd, size_t size, struct gz_in *in)
{
    void *m = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    char *p;

    if (m != MAP_FAILED) {
        madvise(m, size, MADV_SEQUENTIAL);
        in->p = m;
        in->n = size;
        in->mapped = 1;
        return 0;
    }
    p = malloc(size);
    if (!p || read_all(fd, p, size) != 0) {
        free(p);
        return -1;
    }
    in->p = (const unsigned char *)p;
    in->n = size;
    in->mapped = 0;
    return 0;
}

static void unmap_input(struct gz_in *in)
{
    if (in->mapped)
        munmap((void *)in->p, in->n);
    else
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

/* Fast path: one libdeflate call per member into a buffer sized from the
 * ISIZE hint. Returns 0 with out filled, or -1 to ask for the zlib path
 * (output too small, bad data, or no memory for the hint). */
static int inflate_fast(const struct gz_in *in, struct kj_buf *out)
{
    uint32_t isize = (uint32_t)in->p[in->n - 4] | (uint32_t)in->p[in->n - 3] << 8 |
                     (uint32_t)in->p[in->n - 2] << 16 | (uint32_t)in->p[in->n - 1] << 24;
    size_t cap = isize, pos = 0, len = 0;
    struct libdeflate_decompressor *d;
    char *buf;

    /* Deflate cannot expand more than ~1032:1; a larger hint is a lie. */
    if (in->n >= ((size_t)1 << 32) || cap / 1032 > in->n)
        return -1;
    buf = malloc(cap + KJ_PADDING);
    d = libdeflate_alloc_decompressor();
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
    libdeflate_free_decompressor(d);
    memset(buf + len, 0, KJ_PADDING);
    out->data = buf;
    out->len = len;
    return 0;
fail:
    libdeflate_free_decompressor(d);
    free(buf);
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
    return hm_err_set(err, HM_EFORMAT, path, (int64_t)pos,
                      "corrupt gzip data: %s at compressed byte %zu",
                      z->msg ? z->msg : "bad stream", pos);
}

/* Slow path: zlib streaming inflate over every member into a growing
 * buffer; says precisely why when the stream is truncated or corrupt. */
static int inflate_stream(const struct gz_in *in, const char *path, struct kj_buf *out,
                          struct hm_err *err)
{
    z_stream z;
    size_t cap = (in->n < (1u << 28) ? in->n * 4 : (size_t)1 << 30) + KJ_PADDING;
    size_t len = 0, pos = 0;
    char *buf = malloc(cap);
    int rc = Z_OK, ret = 0;

    memset(&z, 0, sizeof z);
    if (!buf || inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) {
        free(buf);
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
                                 "corrupt gzip data: trailing garbage after the last member "
                                 "at compressed byte %zu", pos);
            break;
        }
        if (rc == Z_OK || (rc == Z_BUF_ERROR && pos < in->n))
            continue;
        ret = inflate_failed(rc, &z, pos, len, path, err);
        break;
    }
    inflateEnd(&z);
    if (ret) {
        free(buf);
        return ret;
    }
    memset(buf + len, 0, KJ_PADDING);
    out->data = buf;
    out->len = len;
    return 0;
}

static int load_gzip(int fd, size_t size, const char *path, struct kj_buf *out,
                     struct hm_err *err)
{
    struct gz_in in;
    int rc = 0;

    if (size < 18)
        return hm_err_set(err, HM_EFORMAT, path, (int64_t)size,
                          "truncated gzip stream: only %zu bytes", size);
    if (map_input(fd, size, &in) != 0)
        return hm_err_set(err, HM_EIO, path, -1, "cannot read: %s", strerror(errno));
    if (inflate_fast(&in, out) != 0)
        rc = inflate_stream(&in, path, out, err);
    unmap_input(&in);
    return rc;
}

int kj_load(const char *path, struct kj_buf *out, struct hm_err *err)
{
    unsigned char magic[2] = {0, 0};
    struct stat st;
    int fd, rc;

    out->data = NULL;
    out->len = 0;
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
    if (pread(fd, magic, 2, 0) < 0) {
        rc = hm_err_set(err, HM_EIO, path, -1, "read failed: %s", strerror(errno));
        goto done;
    }
    if (magic[0] == 0x1f && magic[1] == 0x8b)
        rc = load_gzip(fd, (size_t)st.st_size, path, out, err);
    else
        rc = load_plain(fd, (size_t)st.st_size, path, out, err);
    if (rc == 0 && out->len == 0) {
        kj_buf_free(out);
        rc = hm_err_set(err, HM_EFORMAT, path, 0, "empty file (gzip holds no data)");
    }
done:
    close(fd);
    return rc;
}

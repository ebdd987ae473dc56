/* The .json.gz path of the Kineto reader (gz_load.c): the libdeflate fast
 * path sized by the ISIZE trailer, and the zlib streaming fallback for
 * multi-member files, lying ISIZE hints, trailing zero padding and bad
 * data. The first input byte picks a mode:
 *   odd:  the rest is taken as compressed bytes (the gzip magic is forced
 *         on, so every input reaches the inflater); any outcome but a crash
 *         is fine, and an accepted trace must pass fuzz_check_batch;
 *   even: the rest is JSON, compressed here into 1-3 gzip members with
 *         some trailing zeros; the reader must then give exactly what it
 *         gives for the plain JSON (same return code, same batch bytes). */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "collector/sources/kineto_json/kineto_json.h"
#include "common/wire.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NAME "fuzz/rank-0.json.gz"
/* Both reads of check_compressed: a .gz name would refuse the plain JSON
 * ("not a gzip file"), and the name is part of the batch compared. */
#define NAME_PLAIN "fuzz/rank-0.json"

/* Appends one gzip member of src[0..n) at level to out (room checked by
 * the caller via compressBound + 18 per member); returns bytes written. */
static size_t gzip_member(const uint8_t *src, size_t n, int level, uint8_t *out, size_t room)
{
    z_stream z;
    size_t done;

    memset(&z, 0, sizeof z);
    if (deflateInit2(&z, level, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return 0;
    z.next_in = (uint8_t *)src;
    z.avail_in = (uInt)n;
    z.next_out = out;
    z.avail_out = (uInt)room;
    FUZZ_ASSERT(deflate(&z, Z_FINISH) == Z_STREAM_END);
    done = room - z.avail_out;
    deflateEnd(&z);
    return done;
}

static void check_raw(const uint8_t *data, size_t size)
{
    uint8_t *copy = malloc(size + 2);
    struct hm_batch *b = NULL;
    struct hm_err err;

    if (!copy)
        return;
    copy[0] = 0x1f;
    copy[1] = 0x8b;
    memcpy(copy + 2, data, size);
    hm_err_clear(&err);
    if (src_kineto_read_mem(copy, size + 2, NAME, NULL, &b, &err) == 0)
        fuzz_check_batch(b);
    else
        FUZZ_ASSERT(err.msg[0] != '\0' && err.offset >= -1 && err.offset <= (int64_t)size + 2);
    hm_batch_free(b);
    free(copy);
}

/* Encodes b, or returns NULL for no batch. */
static uint8_t *encode(const struct hm_batch *b, size_t *n)
{
    uint8_t *m = NULL;
    struct hm_err err;

    *n = 0;
    if (b)
        FUZZ_ASSERT(hm_wire_encode(b, &m, n, &err) == 0);
    return m;
}

static void check_compressed(uint8_t mode, const uint8_t *json, size_t n)
{
    int members = 1 + (mode >> 1) % 3, level = (mode >> 3) & 1 ? 9 : 1;
    size_t zeros = ((mode >> 4) & 3) * 7, room = compressBound(n) + 64 * 3 + zeros, len = 0;
    uint8_t *gz = calloc(1, room), *m1, *m2;
    struct hm_batch *plain = NULL, *packed = NULL;
    struct hm_err e1, e2;
    size_t n1, n2, at = 0;
    int r1, r2;

    if (n >= 2 && json[0] == 0x1f && json[1] == 0x8b) {
        free(gz);
        return;   /* "plain" input that is itself gzip: nothing to compare */
    }
    if (!gz)
        return;
    for (int i = 0; i < members; i++) {   /* split n into members, the last may be empty */
        size_t part = i == members - 1 ? n - at : (n - at) / 2;
        len += gzip_member(json + at, part, level, gz + len, room - len);
        at += part;
    }
    len += zeros;   /* calloc'd: zero padding after the last member */
    hm_err_clear(&e1);
    hm_err_clear(&e2);
    r1 = src_kineto_read_mem(json, n, NAME_PLAIN, NULL, &plain, &e1);
    r2 = src_kineto_read_mem(gz, len, NAME_PLAIN, NULL, &packed, &e2);
    if (r1 != r2)
        fprintf(stderr, "plain: %d %s\ngzip: %d %s\n", r1, e1.msg, r2, e2.msg);
    if (n == 0)
        FUZZ_ASSERT(r1 != 0 && r2 != 0);   /* "empty file" both ways */
    else
        FUZZ_ASSERT(r1 == r2);
    m1 = encode(plain, &n1);
    m2 = encode(packed, &n2);
    FUZZ_ASSERT(n1 == n2 && (n1 == 0 || memcmp(m1, m2, n1) == 0));
    if (plain)
        fuzz_check_batch(plain);
    free(m1);
    free(m2);
    hm_batch_free(plain);
    hm_batch_free(packed);
    free(gz);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > (1u << 20))
        return 0;
    if (data[0] & 1)
        check_raw(data + 1, size - 1);
    else
        check_compressed(data[0], data + 1, size - 1);
    return 0;
}

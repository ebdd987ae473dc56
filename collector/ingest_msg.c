/* The tail of a reader's message (ingest_msg.h). Layout: the file's
 * results as they are ("HMA..."), or "HMJ" 1 | u32 file_len | file
 * results | u32 rank_len | rank results | u32 n | n names, each ending in
 * NUL; integers little-endian. */
#include "ingest_msg.h"

#include <stdlib.h>
#include <string.h>

static const uint8_t MAGIC[4] = {'H', 'M', 'J', 1};

static uint8_t *put_u32(uint8_t *p, size_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
    return p + 4;
}

int col_ingest_tail_encode(const uint8_t *file_res, size_t file_len, const uint8_t *rank_res, size_t rank_len,
                           const char *const *names, size_t nnames, uint8_t **buf, size_t *len)
{
    size_t n = file_len;
    uint8_t *p;

    if (rank_res) {
        n += sizeof MAGIC + 12 + rank_len;
        for (size_t i = 0; i < nnames; i++)
            n += strlen(names[i]) + 1;
    }
    if (!(p = *buf = malloc(n ? n : 1)))
        return HM_ENOMEM;
    *len = n;
    if (!rank_res) {
        memcpy(p, file_res, file_len);
        return 0;
    }
    memcpy(p, MAGIC, sizeof MAGIC);
    p = put_u32(p + sizeof MAGIC, file_len);
    memcpy(p, file_res, file_len);
    p = put_u32(p + file_len, rank_len);
    memcpy(p, rank_res, rank_len);
    p = put_u32(p + rank_len, nnames);
    for (size_t i = 0; i < nnames; i++) {
        size_t l = strlen(names[i]) + 1;
        memcpy(p, names[i], l);
        p += l;
    }
    return 0;
}

/* Reads a u32 at *at; 0 past the end (then *at is left as it was). */
static int get_u32(const uint8_t *buf, size_t len, size_t *at, size_t *v)
{
    if (len - *at < 4)
        return 0;
    *v = 0;
    for (int i = 0; i < 4; i++)
        *v |= (size_t)buf[*at + (size_t)i] << (8 * i);
    *at += 4;
    return 1;
}

/* Reads a u32 length at *at and the bytes it counts; NULL past the end. */
static const uint8_t *take(const uint8_t *buf, size_t len, size_t *at, size_t *n)
{
    if (!get_u32(buf, len, at, n) || len - *at < *n)
        return NULL;
    *at += *n;
    return buf + *at - *n;
}

int col_ingest_tail_decode(const uint8_t *buf, size_t len, struct col_ingest_tail *out, struct hm_err *err)
{
    size_t at = sizeof MAGIC, names_at;

    memset(out, 0, sizeof *out);
    if (len < sizeof MAGIC || memcmp(buf, MAGIC, sizeof MAGIC) != 0) {
        out->file_res = buf;
        out->file_len = len;
        return 0;
    }
    if (!(out->file_res = take(buf, len, &at, &out->file_len)) ||
        !(out->rank_res = take(buf, len, &at, &out->rank_len)) || !get_u32(buf, len, &at, &out->nnames))
        return hm_err_set(err, HM_EFORMAT, NULL, (int64_t)at, "reader's message: results cut short");
    names_at = at;
    for (size_t i = 0; i < out->nnames; i++) {
        const char *nul = at < len ? memchr(buf + at, 0, len - at) : NULL;
        if (!nul)
            return hm_err_set(err, HM_EFORMAT, NULL, (int64_t)at, "reader's message: file name %zu cut short", i);
        at = (size_t)((const uint8_t *)nul - buf) + 1;
    }
    if (at != len)
        return hm_err_set(err, HM_EFORMAT, NULL, (int64_t)at, "reader's message: bytes after the file names");
    out->names = (const char *)buf + names_at;
    return 0;
}

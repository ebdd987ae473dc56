/* The wire-format decoder (common/wire.c), which reads messages from other
 * ranks and from spool files. Each input is decoded twice: as given (so the
 * header, length and checksum checks are exercised), and with its
 * payload_len and CRC trailer fixed up to match (so mutations reach the
 * sections instead of dying at the checksum). Whatever decodes must
 * survive decode(encode(x)) unchanged (fuzz_check_batch), and peek must
 * agree with the header decode read. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "common/wire.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void put_le(uint8_t *p, uint64_t v, int n)
{
    for (int i = 0; i < n; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void decode_one(const uint8_t *buf, size_t len)
{
    struct hm_batch *b = NULL;
    struct hm_wire_header h;
    struct hm_err err;
    int rc;

    hm_err_clear(&err);
    rc = hm_wire_decode(buf, len, &b, &err);
    FUZZ_ASSERT((rc == 0) == (b != NULL));
    if (rc != 0) {
        FUZZ_ASSERT(err.code == rc && err.msg[0] != '\0');
        FUZZ_ASSERT(err.offset >= -1 && err.offset <= (int64_t)len);
        return;
    }
    FUZZ_ASSERT(hm_wire_peek(buf, len, &h, &err) == 0);
    FUZZ_ASSERT(h.total_len == len);
    FUZZ_ASSERT(h.rank == b->info.rank);
    fuzz_check_batch(b);
    hm_batch_free(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *fixed;
    size_t hl;

    decode_one(data, size);
    if (size < HM_WIRE_HEADER_SIZE + HM_WIRE_TRAILER_SIZE)
        return 0;
    hl = (size_t)data[6] | (size_t)data[7] << 8;
    if (hl < HM_WIRE_HEADER_SIZE || hl > size - HM_WIRE_TRAILER_SIZE)
        hl = HM_WIRE_HEADER_SIZE;
    fixed = malloc(size);
    if (!fixed)
        return 0;
    memcpy(fixed, data, size);
    put_le(fixed + 6, hl, 2);
    put_le(fixed + 16, size - hl - HM_WIRE_TRAILER_SIZE, 8);
    put_le(fixed + size - 4, crc32(0, fixed, (uInt)(size - 4)), 4);
    decode_one(fixed, size);
    free(fixed);
    return 0;
}

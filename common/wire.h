/* The wire format: a batch as one self-contained, versioned, checksummed
 * byte buffer. The collector sends it over MPI and may spool it to disk;
 * the merger decodes it. The byte layout is documented at the top of
 * wire.c and is a durable interface: readers skip sections and fields of a
 * newer minor version and refuse a newer major version. Knows nothing of
 * MPI or files: buffers in, buffers out. */
#ifndef HM_WIRE_H
#define HM_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "batch.h"
#include "err.h"

#define HM_WIRE_MAJOR 1
#define HM_WIRE_MINOR 1

/* Bytes a receiver must have to call hm_wire_peek: the fixed header of
 * every 1.x version (a newer minor may add header bytes after these). */
#define HM_WIRE_HEADER_SIZE 24

/* Bytes after the payload: the CRC32 trailer. */
#define HM_WIRE_TRAILER_SIZE 4

/* What hm_wire_peek reads from the fixed header. */
struct hm_wire_header {
    uint8_t major, minor;
    uint8_t flags;
    uint16_t header_len;     /* >= HM_WIRE_HEADER_SIZE */
    int32_t rank;            /* producing rank, HM_NONE if unknown */
    uint32_t section_count;
    uint64_t payload_len;    /* bytes of sections */
    uint64_t total_len;      /* header_len + payload_len + trailer: the whole message */
};

/* Encoding. Encodes all of b (rank info with skipped counts, the whole
 * string table, tracks, slices, collectives, counters, steps) into a new
 * buffer. On success *buf is owned by the caller (release with free()) and
 * *len is its size. Fails with HM_EINVAL if b refers to a string, track or
 * slice it does not hold (the receiver would refuse it), or HM_ENOMEM; then
 * *buf is NULL and *len 0. b is only read. */
int hm_wire_encode(const struct hm_batch *b, uint8_t **buf, size_t *len, struct hm_err *err);

/* Decoding. Builds a new batch from buf[0..len), which must hold exactly one
 * message. On success *out is owned by the caller (hm_batch_free). Every
 * length and index is checked: malformed input gives HM_EFORMAT with
 * err->offset = the byte offset of the problem (a truncated buffer reports
 * len), a checksum mismatch gives HM_EFORMAT "checksum mismatch", another
 * major version gives HM_EVERSION; then *out is NULL. Never reads outside
 * buf and never allocates more than a small multiple of len. buf is only
 * read (borrowed for the call). */
int hm_wire_decode(const uint8_t *buf, size_t len, struct hm_batch **out, struct hm_err *err);

/* Peeking. Reads the fixed header from the first HM_WIRE_HEADER_SIZE bytes
 * (len may be less than the whole message) so a receiver can size a buffer
 * or route by rank without decoding. Checks magic and version only; the
 * payload and checksum are checked by hm_wire_decode. */
int hm_wire_peek(const uint8_t *buf, size_t len, struct hm_wire_header *h, struct hm_err *err);

#endif

/* Private interface of the Kineto reader, shared by its files:
 *   gz_load.c        file (plain or gzip) -> one padded buffer
 *   kineto_parse.cpp buffer -> JSON walk (simdjson) -> calls into the sink
 *   kineto_event.c   the sink's event half: one trace event -> records
 *   kineto_json.c    src_kineto_read: load, walk, top-level members, rank
 *   kineto_num.c     exact number text -> scaled int64
 *   kineto_diag.c    where bad JSON went wrong, for error reports
 *   kineto_list.c    file listing and rank-from-name
 * The JSON walk knows JSON and the key names below, not the record model. */
#ifndef SRC_KINETO_JSON_INT_H
#define SRC_KINETO_JSON_INT_H

#include <stddef.h>
#include <stdint.h>

#include "common/batch.h"
#include "common/err.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Bytes of zeroes after the JSON text in a loaded buffer; simdjson reads
 * ahead up to its SIMDJSON_PADDING (64), which kineto_parse.cpp checks. */
#define KJ_PADDING 64

/* Largest JSON text the walker accepts (simdjson indexes with 32 bits). */
#define KJ_MAX_JSON ((size_t)0xFFFFFFFFu - KJ_PADDING)

/* ---- Loading (gz_load.c) ---- */

struct kj_buf {
    char *data;   /* owned; len bytes of JSON followed by KJ_PADDING zero bytes */
    size_t len;
    size_t cap;   /* bytes allocated at data */
};

/* A thread's scratch larger than this (buffer bytes; simdjson's index
 * for JSON of more than a quarter of it) is freed after a read rather
 * than kept for the thread's next one. */
#define KJ_KEEP_MAX ((size_t)1 << 30)

/* Reads path whole into out, inflating it when it starts with the gzip magic
 * (required when the name ends in .gz: "not a gzip file" otherwise).
 * Returns 0, or HM_EIO / HM_EFORMAT / HM_ENOMEM with err filled (gzip errors
 * carry the compressed byte offset). The buffer comes from, and
 * kj_buf_free gives it back to, the calling thread's cache. */
int kj_load(const char *path, struct kj_buf *out, struct hm_err *err);
/* The same for data[0..size) in memory (borrowed for the call), with name
 * standing for the file in errors. */
int kj_load_mem(const void *data, size_t size, const char *name, struct kj_buf *out,
                struct hm_err *err);
void kj_buf_free(struct kj_buf *b);

/* Frees the calling thread's cached buffer and decompressor (gz_load.c),
 * and its cached simdjson parser (kineto_parse.cpp). Both also happen by
 * themselves when the thread exits. */
void kj_load_release_thread(void);
void kj_parse_release_thread(void);

/* ---- Tokens handed from the walker to the sink ---- */

enum kj_type {
    KJ_ABSENT = 0,
    KJ_NUM,    /* p: the number's text as written (trimmed) */
    KJ_STR,    /* p: the string unescaped (not NUL-terminated) */
    KJ_BOOL,   /* p: "true" / "false" */
    KJ_NULL,
    KJ_OBJ,    /* p: the raw JSON text of the object (not minified) */
    KJ_ARR,    /* p: the raw JSON text of the array (not minified) */
    KJ_BAD,    /* p: a token that is not JSON (NaN, Infinity, ...) */
};

/* A borrowed view into the document or the walker's string buffer, valid
 * until kj_parse returns. A KJ_NUM token always points into the document,
 * so KJ_PADDING bytes after its end may be read. */
struct kj_tok {
    const char *p;
    uint32_t n;
    uint32_t type;   /* enum kj_type */
};

/* Keys of a trace event the walker extracts, then keys inside its args. */
#define KJ_EVENT_KEYS(X) \
    X(PH, "ph") X(CAT, "cat") X(NAME, "name") X(PID, "pid") X(TID, "tid") \
    X(TS, "ts") X(DUR, "dur")
#define KJ_ARG_KEYS(X) \
    X(A_CORRELATION, "correlation") X(A_EXTERNAL_ID, "External id") X(A_BYTES, "bytes") \
    X(A_STREAM, "stream") X(A_DEVICE, "device") X(A_COLL_NAME, "Collective name") \
    X(A_PG_NAME, "Process Group Name") X(A_PG_DESC, "Process Group Description") \
    X(A_PG_RANKS, "Process Group Ranks") X(A_DTYPE, "dtype") X(A_COMMS_ID, "Comms Id") \
    X(A_SEQ, "Seq") X(A_IN_NELEMS, "In msg nelems") X(A_OUT_NELEMS, "Out msg nelems") \
    X(A_GROUP_SIZE, "Group size") X(A_DEVICE_ID, "Device Id") \
    X(A_TOTAL_ALLOC, "Total Allocated") X(A_TOTAL_RESERVED, "Total Reserved") \
    X(A_NAME, "name")

enum kj_field {
#define KJ_ENUM(id, s) KJ_F_##id,
    KJ_EVENT_KEYS(KJ_ENUM)
    KJ_ARG_KEYS(KJ_ENUM)
#undef KJ_ENUM
    KJ_F__COUNT,
    KJ_F__FIRST_ARG = KJ_F_A_CORRELATION   /* fields from here on are inside args */
};

/* One element of traceEvents. f[i] is meaningful only when bit i of
 * present is set; args is the raw text of the args object (type KJ_ABSENT
 * when there is none or it is not an object). */
struct kj_event {
    uint64_t present;
    int not_object;             /* the element was not a JSON object */
    int skipped;                /* walk-internal: dropped by the sink's skip_ph */
    struct kj_tok args;
    struct kj_tok f[KJ_F__COUNT];
};

/* Sections of the top-level object the walker reports members of. */
enum kj_section {
    KJ_SEC_TOP = 0,    /* a top-level member other than traceEvents/distributedInfo */
    KJ_SEC_DIST,       /* a member of distributedInfo */
};

/* Where the walker sends what it finds. A callback returning nonzero stops
 * the walk, and kj_parse returns that value. */
struct kj_sink {
    void *ctx;
    int (*event)(void *ctx, const struct kj_event *ev);
    /* key is the raw (escaped) key text; raw is the value's JSON text. */
    int (*member)(void *ctx, enum kj_section sec, const char *key, size_t keylen,
                  const struct kj_tok *val, const char *raw, size_t rawlen);
    void (*progress)(void *ctx, uint64_t bytes_done);
    /* May be NULL. skip_ph[c] nonzero: an event whose "ph" is the
     * one-character string c would be ignored by event, so the walk may
     * skip the rest of it (unvalidated, like any value it does not read)
     * and not hand it over. Read at every such event: the sink may change
     * it as it goes. */
    const unsigned char *skip_ph;
};

/* Why a walk failed: offset into the JSON (-1 if unknown), a static
 * one-line reason, and simdjson's own words when it found the problem. */
struct kj_fail {
    int64_t offset;
    const char *msg;
    const char *detail;   /* may be NULL */
};

/* ---- The JSON walk (kineto_parse.cpp) ---- */

/* Walks the document buf[0..len) (followed by KJ_PADDING readable bytes),
 * feeding sink. Returns 0; HM_EFORMAT or HM_ENOMEM with *fail filled; or a
 * sink's nonzero return. */
int kj_parse(const char *buf, size_t len, const struct kj_sink *sink, struct kj_fail *fail);

/* Writes the compact form of the JSON text src[0..n) to dst (room for n
 * bytes) and returns its length. Does not validate. */
size_t kj_minify(const char *src, size_t n, char *dst);

/* ---- Locating bad JSON for error reports (kineto_diag.c) ---- */

/* Offset of the first byte of p[0..n) that breaks UTF-8, or -1. */
int64_t kj_diag_bad_utf8(const char *p, size_t n);
/* Offset of the first unescaped control character inside a string, or -1. */
int64_t kj_diag_raw_control(const char *p, size_t n);
/* True when p[0..n) ends inside a string, object or array whose brackets
 * all matched so far: input cut short rather than written wrong. */
int kj_diag_cut_short(const char *p, size_t n);

/* ---- Numbers (kineto_num.c) ---- */

/* Parses the JSON number text s[0..n) exactly and stores value * 10^scale,
 * rounded to the nearest integer (halves away from zero), in *out.
 * Returns 0, or -1 when s is not a JSON number or the result does not fit
 * in int64. */
int kj_num_scaled(const char *s, size_t n, int scale, int64_t *out);

/* kj_num_scaled on a token's text; quicker for a KJ_NUM token (which
 * points into the document: it reads past the token's end). */
int kj_tok_num(const struct kj_tok *t, int scale, int64_t *out);

/* Integer value of a token: a number, or a string holding one; def if the
 * token is absent or not an integer that fits. */
int64_t kj_tok_int(const struct kj_tok *t, int64_t def);

/* ---- Events to records (kineto_event.c) ---- */

struct kj_names;   /* thread/process names from M events; internal to kineto_event.c */
struct kj_icache;  /* string cache; internal to kineto_event.c */

/* Per-file state while building a batch. */
struct kj_builder {
    struct hm_batch *b;          /* borrowed: the batch being filled */
    int keep_args;
    int fatal;                   /* first HM_E* code that stopped the walk, 0 if none */
    char *scratch;               /* owned; minify output */
    size_t scratch_cap;
    struct kj_names *names;      /* owned */
    struct kj_icache *icache;    /* owned */
    hm_strid s_total_alloc, s_total_reserved;
    unsigned char skip_ph[256];  /* the sink's skip_ph: flows, once they cannot matter */
    struct {                     /* direct-mapped cache of track lookups */
        int64_t pid, tid;
        uint32_t kind, index;    /* index + 1; 0 = empty slot */
    } tcache[64];
};

int kj_builder_init(struct kj_builder *k, struct hm_batch *b, int keep_args);
void kj_builder_fini(struct kj_builder *k);

/* Sizes the batch's slice array for a document of json_len bytes before
 * the walk, and gives back the unused part after it. Neither fails: the
 * array grows as needed anyway. */
void kj_builder_presize(struct kj_builder *k, size_t json_len);
void kj_builder_trim(struct kj_builder *k);

/* The sink's event callback (ctx is a struct kj_builder). */
int kj_builder_event(void *ctx, const struct kj_event *ev);

/* Gives each track its name (M thread_name/process_name, else "stream N"). */
int kj_builder_name_tracks(struct kj_builder *k);

/* Interns the compact form of raw JSON text; 0 when n is 0, UINT32_MAX when
 * out of memory. */
hm_strid kj_builder_intern_json(struct kj_builder *k, const char *raw, size_t n);

#ifdef __cplusplus
}
#endif

#endif

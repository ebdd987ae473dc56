/* String interning: each distinct byte string gets a small integer id.
 * Id 0 is always the empty string and means "absent". Ids are dense and
 * stable for the table's lifetime; they are local to one table (a batch
 * carries its own table over the wire). Strings stored with
 * hm_strtab_append are the exception to "distinct": they get ids of their
 * own, so two ids may hold the same text. Not thread-safe. */
#ifndef HM_STRTAB_H
#define HM_STRTAB_H

#include <stddef.h>
#include <stdint.h>

typedef uint32_t hm_strid;

struct hm_strtab;

/* Lifecycle. _free(NULL) does nothing. */
struct hm_strtab *hm_strtab_new(void);
void hm_strtab_free(struct hm_strtab *t);

/* Interning. Returns the id of s[0..len), copying it in if new; the empty
 * string is id 0. Returns UINT32_MAX when out of memory. */
hm_strid hm_strtab_intern(struct hm_strtab *t, const char *s, size_t len);
hm_strid hm_strtab_intern_cstr(struct hm_strtab *t, const char *s);

/* Appending. Stores s[0..len) under a new id without looking it up or
 * entering it in the hash: no hashing or probing, for text that is almost
 * always unique (a slice's args JSON). The same text may therefore have
 * several ids: appending it twice gives two ids, and a later intern of it
 * does not find an appended copy (it returns an interned id, or a new
 * one). Compare appended strings by text, not by id. The empty string is
 * id 0; UINT32_MAX when out of memory. */
hm_strid hm_strtab_append(struct hm_strtab *t, const char *s, size_t len);

/* 1 if id was stored by hm_strtab_append (so a copy of the table may
 * append it too: the wire format carries this), else 0. */
int hm_strtab_appended(const struct hm_strtab *t, hm_strid id);

/* Finding. The id of s[0..len) if it was interned (appended copies are
 * not found), else 0; never adds it. */
hm_strid hm_strtab_find(const struct hm_strtab *t, const char *s, size_t len);

/* Lookup. Returns a NUL-terminated string valid until the table is freed
 * (interning more strings never moves earlier ones); *len may be NULL.
 * An unknown id gives "". */
const char *hm_strtab_get(const struct hm_strtab *t, hm_strid id, size_t *len);

/* The 64-bit hash the table uses, for callers keeping caches in front of
 * it (e.g. the Kineto reader's name cache). */
uint64_t hm_hash_bytes(const char *s, size_t len);

/* Number of ids in use, including id 0. */
uint32_t hm_strtab_count(const struct hm_strtab *t);

/* Bytes of string data held (for memory accounting). */
size_t hm_strtab_bytes(const struct hm_strtab *t);

#endif

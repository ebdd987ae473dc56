/* A spill arena: memory backed by an unlinked file instead of anonymous
 * pages, for large arrays that are built once and then read a part at a
 * time (the cross-rank analyses' per-rank view). What the program touched
 * stays resident until hm_spill_release drops it from the process; the
 * data is kept by the file (the page cache, written back under pressure)
 * and faults back in when touched again. So the resident set is the part
 * in use, not the whole, and allocations never move.
 *
 * Not thread-safe. Allocations are 16-byte aligned and never freed one by
 * one: the arena goes as a whole. */
#ifndef HM_COMMON_SPILL_H
#define HM_COMMON_SPILL_H

#include <stddef.h>

struct hm_spill;

/* A new arena with its file in dir (created and unlinked at once); NULL
 * when the file or the address space cannot be had (callers then use
 * ordinary memory). */
struct hm_spill *hm_spill_new(const char *dir);
void hm_spill_free(struct hm_spill *s);

/* bytes of zeroed memory, or NULL when the arena is full or the file
 * cannot grow. */
void *hm_spill_alloc(struct hm_spill *s, size_t bytes);

/* Grows an array that lives in the arena (or is still NULL) to hold
 * `need` elements: doubling, the old copy abandoned in the file. 0, or -1
 * when the arena cannot give the room (the array is then unchanged). */
int hm_spill_reserve(struct hm_spill *s, void **data, size_t *cap, size_t n, size_t need,
                     size_t elem);

/* Drops every page of the arena from the process's resident set. */
void hm_spill_release(struct hm_spill *s);

/* Notes `bytes` of the arena touched since the last release and releases
 * once they pass the arena's resident budget (HM_SPILL_RESIDENT). */
void hm_spill_touched(struct hm_spill *s, size_t bytes);

/* Bytes handed out so far. */
size_t hm_spill_used(const struct hm_spill *s);

/* The resident budget; HTAMERGE_SPILL_RESIDENT_KB sets another (a test
 * hook: a small budget shows, on a small run, a stage that reads the
 * arena without saying so). */
#define HM_SPILL_RESIDENT ((size_t)16 << 20)

#endif

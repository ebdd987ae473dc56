/* Kineto (torch.profiler) trace reader: one .json or .json.gz trace file
 * becomes one batch of records (tracks, slices, collectives, counters,
 * steps, rank info). It does not align clocks or match collectives across
 * ranks; the merger does. Neighbours: the collector and `htamerge ingest`
 * call it, and hand the batch on. */
#ifndef SRC_KINETO_JSON_H
#define SRC_KINETO_JSON_H

#include <stddef.h>
#include <stdint.h>

#include "common/batch.h"
#include "common/err.h"

struct src_kineto_opts {
    int keep_args;                 /* store each slice's args as compact JSON text (default 1) */
    /* Called now and then while parsing with the number of (decompressed)
     * JSON bytes parsed so far, and once at the end with the total. May be NULL. */
    void (*progress)(void *ctx, uint64_t bytes_done);
    void *progress_ctx;            /* borrowed, passed to progress */
};

/* Reading.
 * Reads one trace file (plain JSON, or gzip detected by its magic bytes; a
 * name ending in .gz must hold gzip, else HM_EFORMAT "not a gzip file")
 * into a new batch that the caller owns (*out, free with
 * hm_batch_free). opts may be NULL for the defaults. Malformed events are
 * dropped and counted in info.skipped; they are not errors. On failure
 * returns a negative HM_E* code, sets *out = NULL and fills err with the
 * file, a byte offset (into the decompressed JSON where known; into the
 * compressed file for gzip errors; -1 if unknown) and a one-line reason.
 * Files whose decompressed JSON exceeds 4 GiB are refused (HM_EFORMAT).
 * The file is read whole before it is parsed (never mapped), so a trace
 * being written meanwhile is safe to read: bytes appended after the read
 * began are not seen (the JSON then usually ends early: HM_EFORMAT), and a
 * file that shrinks while it is read gives HM_EIO. */
int src_kineto_read(const char *path, const struct src_kineto_opts *opts,
                    struct hm_batch **out, struct hm_err *err);

/* src_kineto_read on a trace already in memory: data[0..size) (plain JSON
 * or gzip, borrowed for the call). name stands for the file: it is the
 * batch's source file, gives the rank when the trace names none, and
 * appears in errors. */
int src_kineto_read_mem(const void *data, size_t size, const char *name,
                        const struct src_kineto_opts *opts, struct hm_batch **out,
                        struct hm_err *err);

/* Each thread that reads keeps its scratch for its next read (the buffer
 * gzip is inflated into, simdjson's index, the decompressor: about the
 * largest file's decompressed size plus 4 bytes per structural character
 * of it; a buffer above 1 GiB or the index of JSON above 256 MiB is not
 * kept), so that a worker reading file after file does not fault fresh
 * memory in for every one. The scratch is freed when the thread exits; this frees the calling thread's
 * now (e.g. when a long-lived thread is done reading). Safe to call at any
 * time, also from inside a read's progress callback. */
void src_kineto_release_thread_cache(void);

/* Rank from a file name: "rank-3", "rank3", "rank_3" (any case) in the
 * base name gives 3; -1 if none. */
int src_kineto_rank_from_name(const char *path);

/* Listing.
 * Expands files and directories (recursively: files ending .json or
 * .json.gz, such as *.pt.trace.json[.gz]) into a list sorted by path with
 * each file once (the same file reached twice counts once). Files named
 * directly are taken whatever their name. The list and its strings are
 * owned by the caller: free with src_kineto_list_free. A path that does not
 * exist gives HM_EIO; an empty result gives HM_EEMPTY naming the path. */
int src_kineto_list(const char *const *paths, int npaths, char ***files, size_t *nfiles,
                    struct hm_err *err);
void src_kineto_list_free(char **files, size_t n);

#endif

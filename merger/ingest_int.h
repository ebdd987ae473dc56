/* Internal to merger/: the store step of offline ingest, shared by the
 * threaded single-process ingest (ingest.c) and the MPI one (ingest_mpi.c). */
#ifndef HM_MERGER_INGEST_INT_H
#define HM_MERGER_INGEST_INT_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/hta.h"
#include "common/batch.h"
#include "ingest.h"
#include "store/writer.h"

/* One input file on its way to the writer. */
struct mrg_slot {
    int state;                    /* 0 empty, 1 parsing, 2 ready (threaded ingest) */
    struct hm_batch *batch;       /* owned until released */
    struct an_rank_result res[2]; /* [0] hta mode, [1] all_steps */
    int analysed;                 /* res is filled */
    int rc;                       /* reading it failed: err says why */
    struct hm_err err;
    uint8_t *raw;                 /* owned: a host writer's copy of the message, to forward */
    size_t raw_len;
    int raw_tag;
};

/* Rank bookkeeping for duplicate detection: rank -> file index + 1. */
struct rank_map {
    size_t *owner;
    size_t cap;
};

/* One NxN collective call of a rank, as the clock guess matches them. */
struct mrg_guess_call {
    uint64_t key;        /* which call across ranks */
    uint64_t group;      /* unkeyed: hash of (pg, op, size, step); 0 keyed */
    int64_t enter, exit; /* aligned ns as written without a shift */
    size_t idx;          /* collectives index: order among equal enters */
};

/* Offline ingest's guess of each rank's collective-based clock correction,
 * made from its batch before it is written (ingest.c, guess_shift): a
 * right guess spares clock refinement the re-timing of the rank's rows. */
struct mrg_clock_guess {
    int on;                       /* 0: every rank is written unshifted */
    int ref;                      /* rank the guesses are relative to; -1 none yet */
    struct mrg_guess_call *calls; /* owned: ref's calls, sorted by key */
    size_t n;
};

struct mrg_store {
    char *const *files;           /* borrowed, sorted */
    size_t nfiles;
    const struct mrg_ingest_opts *opts;
    struct mrg_writer *w;         /* borrowed */
    struct mrg_ingest_stats *st;  /* borrowed */
    struct rank_map ranks;        /* owned: free(ranks.owner) */
    struct mrg_clock_guess guess; /* owned when guess.on: free(guess.calls) */
    struct mrg_rank_files *rfiles; /* owned: several files of one rank (rank_files.h) */
    size_t analysed_here;         /* files whose analyses mrg_store_slot ran */
    double analyse_s;             /* and the seconds they took */
};

/* Stores file i (analysing it first if needed); a failed file is skipped
 * under --keep-going. Returns 0, or an error for the whole ingest. */
int mrg_store_slot(struct mrg_store *p, size_t i, struct mrg_slot *s, struct hm_err *err);

/* meta of a finished ingest: created_by, created_at, command_line,
 * run_status complete. */
int mrg_ingest_write_meta(struct mrg_writer *w, const struct mrg_ingest_opts *opts, const char *created_by,
                          struct hm_err *err);

/* Frees the slot's batch and results. */
void mrg_release_slot(struct mrg_slot *s);

#endif

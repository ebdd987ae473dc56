/* The messages between collectors and the merger during a run. Transport
 * is MPI (collector/ and merger/ make the calls); this header only fixes the
 * tags and the small fixed-size control records, so both sides agree.
 *
 *   collector r                          merger (rank 0)
 *   HM_TAG_BATCH  (wire batch)  ------>  decode, write
 *                               <------  HM_TAG_CREDIT (more batches allowed)
 *   HM_TAG_SYNC   (ping-pong)   <----->  clock samples, every sync interval
 *   HM_TAG_DONE   (struct hm_msg_done) ->  rank finished, with its exit code
 *                               <------  HM_TAG_PLAN (struct hm_capture_plan: what
 *                                        to record in full; collector/capture_budget.h)
 *   HM_TAG_PROGRESS (struct hm_msg_progress) -> the step the rank's program is in,
 *                                        so that a plan starts ahead of every rank
 *
 * In `mpirun ... htamerge ingest` a reader's HM_TAG_BATCH carries, after
 * the wire message (its header's total_len), the results of the file's
 * per-rank analyses (analysis/hta_codec.h) and, on the last file of a rank
 * whose files the reader joined, the rank's (collector/ingest_msg.h): the
 * readers analyse what they parse, so rank 0 only decodes and writes. The
 * live run sends none.
 *
 * A sharded ingest (merger/ingest_shards.h) talks the same between a
 * host's readers and its host writer, and between the host writers and
 * rank 0 (the index writer), which also sends HM_TAG_GUESS_REF (its clock
 * guess's reference calls), and at the end HM_TAG_SHARD_CLOCKS (every
 * rank's final clock); the host writers answer HM_TAG_SHARD_REPORT (their
 * shard, written or not). Both ends are the same htamerge: not durable.
 *
 * Flow control: a collector may have at most HM_CREDIT_INITIAL batches in
 * flight; the merger returns one credit per batch it has written, so a slow
 * merger slows the senders instead of growing its memory. */
#ifndef HM_PROTOCOL_H
#define HM_PROTOCOL_H

#include <stdint.h>

enum {
    HM_TAG_BATCH = 101,
    HM_TAG_CREDIT = 102,
    HM_TAG_SYNC = 103,
    HM_TAG_DONE = 104,
    HM_TAG_HELLO = 105,
    HM_TAG_FILE_ERROR = 106,
    HM_TAG_PLAN = 107,
    HM_TAG_PROGRESS = 108,
    HM_TAG_GUESS_REF = 109,
    HM_TAG_SHARD_CLOCKS = 110,
    HM_TAG_SHARD_REPORT = 111,
};

enum { HM_CREDIT_INITIAL = 4 };

/* Ping-pong: kind SYNC_START asks the peer to answer `count` pings; each
 * ping carries the merger's t0, each pong the peer's clock t1. */
enum { HM_SYNC_START = 1, HM_SYNC_PING = 2, HM_SYNC_PONG = 3 };

struct hm_msg_sync {
    int64_t kind;
    int64_t count;
    int64_t t;        /* t0 in a ping, t1 in a pong, ns, sender's clock */
};

/* Sent once by every collector when its child and its sends are finished. */
struct hm_msg_done {
    int64_t exit_code;     /* the child's exit code (shell convention) */
    int64_t batches;       /* batches sent */
    int64_t files;         /* trace files read */
    int64_t files_failed;  /* trace files that could not be read */
    int64_t ring_dropped;  /* records the live ring dropped */
    int64_t spawn_failed;  /* 1 if the program could not be started */
    int64_t watch_polling; /* 1 if its trace folder was scanned, not watched (no inotify) */
};

/* Sent by a collector (not rank 0's) a few times a second while its
 * program's step moves (the Python hooks' step, capture_plan.h), so that
 * rank 0 starts each plan ahead of the rank furthest ahead, not only of
 * itself: ranks that share no collective drift apart by hundreds of steps. */
struct hm_msg_progress {
    int64_t step_now;      /* the step in progress, -1 none yet */
    int64_t step_ns;       /* the last step's duration, 0 unknown */
};

/* Sent once by every collector at start: who and where it is. */
struct hm_msg_hello {
    int64_t pid;
    int64_t local_rank;
    char host[64];
};

/* Parallel ingest: a file a collector could not read (the merger decides,
 * with --keep-going, whether the whole ingest fails). */
struct hm_msg_file_error {
    int64_t code;          /* HM_E* */
    int64_t offset;        /* byte offset, -1 if unknown */
    char file[512];
    char msg[512];
};

#endif

/* The collector's side of the MPI conversation with the merger (rank 0):
 * sends batches within its credit, answers clock-sync rounds, reports DONE
 * and waits for the merger's goodbye. See common/protocol.h. */
#ifndef HM_COLLECTOR_TRANSPORT_H
#define HM_COLLECTOR_TRANSPORT_H

#include <stdint.h>

#include "common/batch.h"
#include "common/clockhook.h"
#include "common/err.h"
#include "common/protocol.h"

struct col_link;

/* hook: this rank's clock (borrowed; the test hook may skew it). */
struct col_link *col_link_new(const struct hm_clockhook *hook, struct hm_err *err);
void col_link_free(struct col_link *l);

/* Queues b for sending; takes ownership (it is encoded and freed at once). */
int col_link_queue(struct col_link *l, struct hm_batch *b, struct hm_err *err);

/* The same, the message followed by extra[0..extra_len) (copied): what
 * rank 0 finds after the wire message's total_len (ingest's analyses,
 * common/protocol.h). */
int col_link_queue_with(struct col_link *l, struct hm_batch *b, const uint8_t *extra, size_t extra_len,
                        struct hm_err *err);

/* Sends what the credit allows, answers sync rounds, takes credits back.
 * Never waits for long. *fin is set when the merger said goodbye. */
int col_link_step(struct col_link *l, int *fin, struct hm_err *err);

/* Unsent bytes above which a collector stops taking new batches, so a slow
 * merger bounds each rank's memory end to end. */
enum { COL_LINK_MAX_BACKLOG = 64 << 20 };

/* Bytes queued but not yet handed to MPI (for back-pressure on parsing). */
uint64_t col_link_backlog(const struct col_link *l);

/* Once everything queued has been sent: sends DONE (once). Returns 1 when
 * DONE has been sent. */
int col_link_done(struct col_link *l, const struct hm_msg_done *d, struct hm_err *err);

/* Tells rank 0 the step this rank's program is in (HM_TAG_PROGRESS) when
 * it moved and the last report is at least 100 ms old (now_ns: any
 * monotonic clock). A few dozen bytes, sent eagerly: never waits. */
int col_link_progress(struct col_link *l, int64_t step_now, int64_t step_ns, int64_t now_ns,
                      struct hm_err *err);
struct hm_capture_plan;
/* The capture plan rank 0 sent last (HM_TAG_PLAN), once: 1 when there is a
 * new one in *p, else 0. */
int col_link_take_plan(struct col_link *l, struct hm_capture_plan *p);

#endif

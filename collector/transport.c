/* Collector side of the MPI protocol: a queue of encoded batches sent with
 * MPI_Isend while credits last; sync rounds answered from the poll loop. */
#include "transport.h"
#include "link_comm.h"

#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include "common/capture_plan.h"
#include "common/wire.h"

struct outmsg {
    uint8_t *buf;      /* owned until its send completes */
    size_t len;
    MPI_Request req;
    int sent;          /* Isend posted */
};

struct col_link {
    const struct hm_clockhook *hook;  /* borrowed */
    struct outmsg *q;                 /* owned ring of messages */
    size_t head, n, cap;
    int credits;
    uint64_t backlog;
    int done_sent;
    struct hm_capture_plan plan;      /* the latest plan from rank 0 */
    int plan_new;                     /* not yet taken */
    int64_t progress_step, progress_ns; /* the last step reported, and when */
};

struct col_link *col_link_new(const struct hm_clockhook *hook, struct hm_err *err)
{
    struct col_link *l = calloc(1, sizeof *l);
    if (!l) {
        hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");
        return NULL;
    }
    l->hook = hook;
    l->credits = HM_CREDIT_INITIAL;
    l->progress_step = -1;
    return l;
}

void col_link_free(struct col_link *l)
{
    if (!l)
        return;
    for (size_t i = 0; i < l->n; i++) {
        struct outmsg *m = &l->q[(l->head + i) % l->cap];
        if (m->sent)
            MPI_Cancel(&m->req);
        free(m->buf);
    }
    free(l->q);
    free(l);
}

int col_link_queue(struct col_link *l, struct hm_batch *b, struct hm_err *err)
{
    return col_link_queue_with(l, b, NULL, 0, err);
}

int col_link_queue_with(struct col_link *l, struct hm_batch *b, const uint8_t *extra, size_t extra_len,
                        struct hm_err *err)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    int rc = hm_wire_encode(b, &buf, &len, err);

    hm_batch_free(b);
    if (rc)
        return rc;
    if (extra_len) {
        uint8_t *nb = realloc(buf, len + extra_len);
        if (!nb) {
            free(buf);
            return hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");
        }
        memcpy(nb + len, extra, extra_len);
        buf = nb;
        len += extra_len;
    }
    if (len > (size_t)INT32_MAX) {
        free(buf);
        return hm_err_set(err, HM_EINVAL, NULL, -1, "a batch of %zu bytes is too large to send", len);
    }
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        struct outmsg *q = calloc(cap, sizeof *q);
        if (!q) {
            free(buf);
            return hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");
        }
        for (size_t i = 0; i < l->n; i++)
            q[i] = l->q[(l->head + i) % l->cap];
        free(l->q);
        l->q = q;
        l->cap = cap;
        l->head = 0;
    }
    l->q[(l->head + l->n) % l->cap] = (struct outmsg){buf, len, MPI_REQUEST_NULL, 0};
    l->n++;
    l->backlog += len;
    return 0;
}

/* Answers one sync round whose START message is already received. */
static int answer_sync(struct col_link *l, const struct hm_msg_sync *start)
{
    struct hm_msg_sync ping, pong = {HM_SYNC_PONG, 0, 0};
    for (int64_t i = 0; i < start->count; i++) {
        if (MPI_Recv(&ping, sizeof ping, MPI_BYTE, 0, HM_TAG_SYNC, col_link_comm(), MPI_STATUS_IGNORE) !=
            MPI_SUCCESS)
            return HM_EMPI;
        pong.t = hm_clock_now(l->hook);
        if (MPI_Send(&pong, sizeof pong, MPI_BYTE, 0, HM_TAG_SYNC, col_link_comm()) != MPI_SUCCESS)
            return HM_EMPI;
    }
    return 0;
}

/* Control messages from rank 0: credits, sync rounds, capture plans, goodbye. */
static int control(struct col_link *l, int *fin, struct hm_err *err)
{
    MPI_Status st;
    int flag = 1;

    while (flag) {
        MPI_Iprobe(0, MPI_ANY_TAG, col_link_comm(), &flag, &st);
        if (!flag)
            break;
        if (st.MPI_TAG == HM_TAG_CREDIT) {
            int c;
            MPI_Recv(&c, 1, MPI_INT, 0, HM_TAG_CREDIT, col_link_comm(), MPI_STATUS_IGNORE);
            l->credits += c;
        } else if (st.MPI_TAG == HM_TAG_SYNC) {
            struct hm_msg_sync s;
            MPI_Recv(&s, sizeof s, MPI_BYTE, 0, HM_TAG_SYNC, col_link_comm(), MPI_STATUS_IGNORE);
            if (s.kind == HM_SYNC_START && answer_sync(l, &s) != 0)
                return hm_err_set(err, HM_EMPI, NULL, -1, "clock sync with rank 0 failed");
        } else if (st.MPI_TAG == HM_TAG_PLAN) {
            struct hm_capture_plan p;
            MPI_Recv(&p, sizeof p, MPI_BYTE, 0, HM_TAG_PLAN, col_link_comm(), MPI_STATUS_IGNORE);
            if (p.id >= l->plan.id) {   /* one sender, in order; never go back */
                l->plan = p;
                l->plan_new = 1;
            }
        } else if (st.MPI_TAG == HM_TAG_DONE) {
            struct hm_msg_done d;
            MPI_Recv(&d, sizeof d, MPI_BYTE, 0, HM_TAG_DONE, col_link_comm(), MPI_STATUS_IGNORE);
            *fin = 1;
        } else {
            return hm_err_set(err, HM_EMPI, NULL, -1, "unexpected message tag %d from rank 0", st.MPI_TAG);
        }
    }
    return 0;
}

int col_link_step(struct col_link *l, int *fin, struct hm_err *err)
{
    int rc = control(l, fin, err);

    /* Retire completed sends, in order. */
    while (rc == 0 && l->n) {
        struct outmsg *m = &l->q[l->head];
        int flag = 0;
        if (!m->sent)
            break;
        MPI_Test(&m->req, &flag, MPI_STATUS_IGNORE);
        if (!flag)
            break;
        l->backlog -= m->len;
        free(m->buf);
        m->buf = NULL;
        l->head = (l->head + 1) % l->cap;
        l->n--;
    }
    /* Post new sends while credit lasts. */
    for (size_t i = 0; rc == 0 && i < l->n && l->credits > 0; i++) {
        struct outmsg *m = &l->q[(l->head + i) % l->cap];
        if (m->sent)
            continue;
        if (MPI_Isend(m->buf, (int)m->len, MPI_BYTE, 0, HM_TAG_BATCH, col_link_comm(), &m->req) !=
            MPI_SUCCESS)
            return hm_err_set(err, HM_EMPI, NULL, -1, "sending a batch to rank 0 failed");
        m->sent = 1;
        l->credits--;
    }
    return rc;
}

uint64_t col_link_backlog(const struct col_link *l)
{
    return l->backlog;
}

int col_link_done(struct col_link *l, const struct hm_msg_done *d, struct hm_err *err)
{
    if (l->done_sent)
        return 1;
    if (l->n)
        return 0;
    if (MPI_Send(d, sizeof *d, MPI_BYTE, 0, HM_TAG_DONE, col_link_comm()) != MPI_SUCCESS)
        return hm_err_set(err, HM_EMPI, NULL, -1, "sending DONE to rank 0 failed");
    l->done_sent = 1;
    return 1;
}

enum { PROGRESS_EVERY_NS = 100000000 };

int col_link_progress(struct col_link *l, int64_t step_now, int64_t step_ns, int64_t now_ns,
                      struct hm_err *err)
{
    struct hm_msg_progress p = {.step_now = step_now, .step_ns = step_ns};

    if (step_now < 0 || step_now == l->progress_step || l->done_sent ||
        (l->progress_ns && now_ns - l->progress_ns < PROGRESS_EVERY_NS))
        return 0;
    if (MPI_Send(&p, sizeof p, MPI_BYTE, 0, HM_TAG_PROGRESS, col_link_comm()) != MPI_SUCCESS)
        return hm_err_set(err, HM_EMPI, NULL, -1, "sending this rank's step to rank 0 failed");
    l->progress_step = step_now;
    l->progress_ns = now_ns;
    return 0;
}

int col_link_take_plan(struct col_link *l, struct hm_capture_plan *p)
{
    if (!l->plan_new)
        return 0;
    *p = l->plan;
    l->plan_new = 0;
    return 1;
}

static MPI_Comm link_comm = MPI_COMM_NULL;

void col_link_set_comm(MPI_Comm c)
{
    link_comm = c;
}

MPI_Comm col_link_comm(void)
{
    return link_comm == MPI_COMM_NULL ? MPI_COMM_WORLD : link_comm;
}

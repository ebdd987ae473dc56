/* The steps topic past QRY_RANKS_LISTED_AT ranks (rank_view.h): each step
 * across the ranks (median, fastest and slowest step time, how far the
 * slowest is from the median, how many ranks are near it) as
 * doc.step_summary, the phase breakdown of each step's median and slowest
 * rank and the straggler as doc.step_phases, and the per-rank arrays cut to those ranks and
 * the straggler. The rows come from topics.c's queries; other per-rank
 * topics are summarised by rank_view.c. */
#include "rank_view.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct step_time {
    double step, dur_us;
    int rank;
};

static int cmp_time(const void *a, const void *b)
{
    const struct step_time *x = a, *y = b;

    if (x->step != y->step)
        return x->step < y->step ? -1 : 1;
    if (x->dur_us != y->dur_us)
        return x->dur_us < y->dur_us ? -1 : 1;
    return (x->rank > y->rank) - (x->rank < y->rank);
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

static double ms3(double us)
{
    return round(us) / 1000.0;
}

/* The step rows' (step, rank, dur_us), sorted by step then time; NULL
 * when out of memory. */
static struct step_time *step_times(const cJSON *steps, size_t *n)
{
    struct step_time *t = calloc((size_t)cJSON_GetArraySize(steps) + 1, sizeof *t);
    const cJSON *row, *s, *r, *d;

    *n = 0;
    cJSON_ArrayForEach(row, steps) {
        s = cJSON_GetObjectItemCaseSensitive(row, "step");
        r = cJSON_GetObjectItemCaseSensitive(row, "rank");
        d = cJSON_GetObjectItemCaseSensitive(row, "dur_us");
        if (t && cJSON_IsNumber(s) && cJSON_IsNumber(r) && cJSON_IsNumber(d))
            t[(*n)++] = (struct step_time){s->valuedouble, d->valuedouble, r->valueint};
    }
    if (t)
        qsort(t, *n, sizeof *t, cmp_time);
    return t;
}

/* How many distinct ranks t holds. */
static size_t rank_count(const struct step_time *t, size_t n)
{
    int *r = malloc((n + 1) * sizeof *r);
    size_t k = 0;

    if (!r)
        return 0;
    for (size_t i = 0; i < n; i++)
        r[i] = t[i].rank;
    qsort(r, n, sizeof *r, cmp_int);
    for (size_t i = 0; i < n; i++)
        k += i == 0 || r[i] != r[i - 1];
    free(r);
    return k;
}

/* A copy of the breakdown row of (rank, step) with "which" first, or NULL. */
static cJSON *phase_row(const cJSON *breakdown, int rank, double step, const char *which)
{
    const cJSON *row, *r, *s;
    cJSON *out, *dup;

    cJSON_ArrayForEach(row, breakdown) {
        r = cJSON_GetObjectItemCaseSensitive(row, "rank");
        s = cJSON_GetObjectItemCaseSensitive(row, "step");
        if (!cJSON_IsNumber(r) || !cJSON_IsNumber(s) || r->valueint != rank || s->valuedouble != step)
            continue;
        if (!(out = cJSON_CreateObject()) || !cJSON_AddStringToObject(out, "which", which)) {
            cJSON_Delete(out);
            return NULL;
        }
        for (const cJSON *c = row->child; c; c = c->next)
            if ((dup = cJSON_Duplicate(c, 1)))
                cJSON_AddItemToObject(out, c->string, dup);
        return out;
    }
    return NULL;
}

/* One doc.step_summary row for the step of t[0..n), sorted by time. */
static cJSON *summary_row(const struct step_time *t, size_t n)
{
    const struct step_time *med = &t[(n - 1) / 2], *slow = &t[n - 1];
    size_t near = 0;
    cJSON *o = cJSON_CreateObject();

    for (size_t i = 0; i < n; i++)
        near += qry_near_median(t[i].dur_us, med->dur_us);
    if (!o)
        return NULL;
    cJSON_AddNumberToObject(o, "step", t[0].step);
    cJSON_AddNumberToObject(o, "ranks", (double)n);
    cJSON_AddNumberToObject(o, "median_ms", ms3(med->dur_us));
    cJSON_AddNumberToObject(o, "min_ms", ms3(t[0].dur_us));
    cJSON_AddNumberToObject(o, "max_ms", ms3(slow->dur_us));
    cJSON_AddNumberToObject(o, "median_rank", med->rank);
    cJSON_AddNumberToObject(o, "fastest_rank", t[0].rank);
    cJSON_AddNumberToObject(o, "slowest_rank", slow->rank);
    cJSON_AddNumberToObject(o, "slowest_over_median_ms", ms3(slow->dur_us - med->dur_us));
    if (med->dur_us > 0)
        cJSON_AddNumberToObject(o, "slowest_over_median_pct",
                                round(10000.0 * (slow->dur_us - med->dur_us) / med->dur_us) / 100.0);
    else
        cJSON_AddNullToObject(o, "slowest_over_median_pct");
    cJSON_AddNumberToObject(o, "near_median", (double)near);
    return o;
}

/* step_summary and step_phases (the median, the slowest and the
 * straggler: in a synchronous step all take as long, and where the
 * straggler's time goes tells why), one step at a time; the ranks they
 * name go into listed (2 per step). */
static int add_steps(cJSON *doc, const struct step_time *t, size_t n, int straggler, int *listed, size_t *nl)
{
    cJSON *sum = cJSON_AddArrayToObject(doc, "step_summary"), *ph = cJSON_AddArrayToObject(doc, "step_phases"), *r;
    const cJSON *bd = cJSON_GetObjectItemCaseSensitive(doc, "breakdown");

    if (!sum || !ph)
        return HM_ENOMEM;
    for (size_t a = 0, b; a < n; a = b) {
        for (b = a; b < n && t[b].step == t[a].step; b++)
            ;
        if (!(r = summary_row(t + a, b - a)))
            return HM_ENOMEM;
        cJSON_AddItemToArray(sum, r);
        listed[(*nl)++] = t[a + (b - a - 1) / 2].rank;
        listed[(*nl)++] = t[b - 1].rank;
        if ((r = phase_row(bd, t[a + (b - a - 1) / 2].rank, t[a].step, "median")))
            cJSON_AddItemToArray(ph, r);
        if ((r = phase_row(bd, t[b - 1].rank, t[a].step, "slowest")))
            cJSON_AddItemToArray(ph, r);
        if (straggler >= 0 && (r = phase_row(bd, straggler, t[a].step, "straggler")))
            cJSON_AddItemToArray(ph, r);
    }
    return 0;
}

static int add_note(cJSON *doc, size_t ranks, size_t listed, int straggler)
{
    cJSON *s = cJSON_AddObjectToObject(doc, "rank_summary");
    char a[32], who[48] = "", note[400];

    if (straggler >= 0)
        snprintf(who, sizeof who, "rank %d (the straggler) and ", straggler);
    snprintf(note, sizeof note,
             "steps, breakdown and comm_by_pg list %zu of %s ranks: %seach step's median and slowest rank; "
             "step_summary covers every rank. --ranks LIST or --all-ranks (API: ranks=, all_ranks=1) give "
             "every row",
             listed, qry_fmt_count((long)ranks, a, sizeof a), who);
    if (!s || !cJSON_AddNumberToObject(s, "ranks", (double)ranks) ||
        !cJSON_AddNumberToObject(s, "listed", (double)listed) || !cJSON_AddStringToObject(s, "by", "dur_us") ||
        !cJSON_AddStringToObject(s, "note", note))
        return HM_ENOMEM;
    return 0;
}

int qry_step_summary_apply(sqlite3 *db, const struct qry_report_opts *o, cJSON *doc, struct hm_err *err)
{
    size_t n = 0, ranks, nl = 0, k = 0;
    struct step_time *t;
    int *listed = NULL, straggler, rc = HM_ENOMEM;

    if (qry_rank_rows_asked(o))
        return 0;
    if (!(t = step_times(cJSON_GetObjectItemCaseSensitive(doc, "steps"), &n)))
        return hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");
    if ((ranks = rank_count(t, n)) <= QRY_RANKS_LISTED_AT) {
        free(t);
        return 0;
    }
    straggler = qry_rank_straggler(db, doc);
    if (!(listed = malloc((2 * n + 2) * sizeof *listed)) || add_steps(doc, t, n, straggler, listed, &nl) != 0)
        goto out;
    if (straggler >= 0)
        listed[nl++] = straggler;
    qsort(listed, nl, sizeof *listed, cmp_int);
    for (size_t i = 0; i < nl; i++)
        if (k == 0 || listed[k - 1] != listed[i])
            listed[k++] = listed[i];
    qry_keep_ranks(doc, "steps", listed, k);
    qry_keep_ranks(doc, "breakdown", listed, k);
    qry_keep_ranks(doc, "comm_by_pg", listed, k);
    rc = add_note(doc, ranks, k, straggler);
out:
    free(t);
    free(listed);
    return rc ? hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory") : 0;
}

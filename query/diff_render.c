/* Rendering of a diff document (diff.c builds it): for people a verdict,
 * the overall metrics and the per-rank rows that moved, with regressions
 * red and improvements green on a terminal; for machines JSON, or CSV of
 * the metrics after "# key: value" lines. */
#include "diff.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define RED "\033[31m"
#define GREEN "\033[32m"
#define YELLOW "\033[33m"
#define BOLD "\033[1m"
#define RESET "\033[0m"

enum { COL_RANK, COL_METRIC, COL_BASE, COL_NEW, COL_DELTA, COL_CHANGE, COL_FLAG, NCOLS };

static const char *const col_title[NCOLS] = {"rank", "metric", "base", "new", "delta", "change", ""};

struct cells {
    char c[NCOLS][128];
};

static const cJSON *member(const cJSON *o, const char *key)
{
    return cJSON_GetObjectItemCaseSensitive(o, key);
}

/* A number as people read it: whole (ranks) bare, others to a precision
 * that depends on their size, the same for every row; sign forces a
 * leading + on positive values. */
static void fmt_num(const cJSON *v, bool whole, bool sign, const char *none, char *buf, size_t len)
{
    double d = cJSON_IsNumber(v) ? v->valuedouble : 0, a = fabs(d);
    int prec = whole ? 0 : a >= 100 ? 1 : a >= 1 || a == 0 ? 2 : 4;

    if (!cJSON_IsNumber(v))
        snprintf(buf, len, "%s", none);
    else
        snprintf(buf, len, sign ? "%+.*f" : "%.*f", prec, d);
}

static void row_cells(const cJSON *row, struct cells *out)
{
    const cJSON *pct = member(row, "pct");
    bool straggler = !strcmp(member(row, "metric")->valuestring, "straggler");

    fmt_num(member(row, "rank"), true, false, "", out->c[COL_RANK], sizeof out->c[0]);
    snprintf(out->c[COL_METRIC], sizeof out->c[0], "%s", member(row, "metric")->valuestring);
    fmt_num(member(row, "base"), straggler, false, straggler ? "none" : "-", out->c[COL_BASE], sizeof out->c[0]);
    fmt_num(member(row, "new"), straggler, false, straggler ? "none" : "-", out->c[COL_NEW], sizeof out->c[0]);
    fmt_num(member(row, "delta"), false, true, "", out->c[COL_DELTA], sizeof out->c[0]);
    if (cJSON_IsNumber(pct))
        snprintf(out->c[COL_CHANGE], sizeof out->c[0], "%+.1f%%", pct->valuedouble);
    else
        out->c[COL_CHANGE][0] = '\0';
    snprintf(out->c[COL_FLAG], sizeof out->c[0], "%s",
             cJSON_IsTrue(member(row, "worse")) ? "worse" : cJSON_IsTrue(member(row, "improved")) ? "better" : "");
}

/* Whether row belongs to the table: the overall one, or the per-rank one
 * (rows that moved, or every row when all). */
static bool row_shown(const cJSON *row, bool overall, bool all)
{
    bool is_overall = cJSON_IsNull(member(row, "rank"));

    if (is_overall != overall)
        return false;
    return overall || all || cJSON_IsTrue(member(row, "worse")) || cJSON_IsTrue(member(row, "improved"));
}

static void print_cells(FILE *out, const struct cells *cl, const size_t *width, int first, const char *on,
                        const char *off)
{
    fputs(on, out);
    for (int c = first; c < NCOLS; c++) {
        bool left = c == COL_METRIC || c == COL_FLAG;
        if (c == NCOLS - 1 && !cl->c[c][0])
            break;
        fprintf(out, left ? "%s%-*s" : "%s%*s", c > first ? "  " : "", c == NCOLS - 1 ? 0 : (int)width[c],
                cl->c[c]);
    }
    fputs(off, out);
    fputc('\n', out);
}

/* Prints one table of metric rows; returns how many rows it showed. */
static int print_table(const cJSON *metrics, bool overall, bool all, int color, FILE *out)
{
    size_t width[NCOLS];
    int first = overall ? COL_METRIC : COL_RANK, shown = 0;
    struct cells cl;
    const cJSON *row;

    for (int c = 0; c < NCOLS; c++)
        width[c] = strlen(col_title[c]);
    cJSON_ArrayForEach(row, metrics) {
        if (!row_shown(row, overall, all))
            continue;
        row_cells(row, &cl);
        for (int c = 0; c < NCOLS; c++)
            if (strlen(cl.c[c]) > width[c])
                width[c] = strlen(cl.c[c]);
        shown++;
    }
    if (!shown)
        return 0;
    for (int c = 0; c < NCOLS; c++)
        snprintf(cl.c[c], sizeof cl.c[c], "%s", col_title[c]);
    print_cells(out, &cl, width, first, color ? BOLD : "", color ? RESET : "");
    cJSON_ArrayForEach(row, metrics) {
        const char *on = "";
        if (!row_shown(row, overall, all))
            continue;
        row_cells(row, &cl);
        if (color && cJSON_IsTrue(member(row, "worse")))
            on = RED;
        else if (color && cJSON_IsTrue(member(row, "improved")))
            on = GREEN;
        print_cells(out, &cl, width, first, on, *on ? RESET : "");
    }
    return shown;
}

static void print_run(const char *label, const cJSON *facts, FILE *out)
{
    const cJSON *steps = member(facts, "steps_per_rank"), *st = member(facts, "run_status");
    char ranks[32];

    fmt_num(member(facts, "ranks"), true, false, "?", ranks, sizeof ranks);
    fprintf(out, "%-4s  %s: %s rank%s, %s%s, run %s\n", label, member(facts, "file")->valuestring, ranks,
            strcmp(ranks, "1") ? "s" : "",
            cJSON_IsString(steps) ? steps->valuestring : "no",
            !cJSON_IsString(steps) ? " ProfilerSteps"
            : strcmp(steps->valuestring, "1") ? " analysed steps per rank" : " analysed step per rank",
            cJSON_IsString(st) ? st->valuestring : "status unknown");
}

static void render_table(const cJSON *doc, int color, bool all, FILE *out)
{
    const cJSON *metrics = member(doc, "metrics"), *n;
    const char *vc = !qry_diff_comparable(doc) ? YELLOW : qry_diff_regressed(doc) ? RED : GREEN;
    int per_rank = 0, shown;

    print_run("BASE", member(doc, "base"), out);
    print_run("NEW", member(doc, "new"), out);
    fprintf(out, "%s%s%s%s\n", color ? BOLD : "", color ? vc : "", member(doc, "verdict")->valuestring,
            color ? RESET : "");
    fprintf(out, "\n%soverall%s (mean over each run's ranks)\n", color ? BOLD : "", color ? RESET : "");
    print_table(metrics, true, true, color, out);
    cJSON_ArrayForEach(n, metrics)
        per_rank += !cJSON_IsNull(member(n, "rank"));
    if (per_rank) {
        fprintf(out, "\n%sper rank%s", color ? BOLD : "", color ? RESET : "");
        if (!all)
            fprintf(out, " (changes of %g%% or more)", member(doc, "threshold_pct")->valuedouble);
        fputc('\n', out);
        shown = print_table(metrics, false, all, color, out);
        if (shown < per_rank)
            fprintf(out, "%d of %d per-rank values moved by less than %g%% (--verbose shows them)\n",
                    per_rank - shown, per_rank, member(doc, "threshold_pct")->valuedouble);
    }
    if (cJSON_GetArraySize(member(doc, "notes")) > 0)
        fprintf(out, "\n%snotes%s\n", color ? BOLD : "", color ? RESET : "");
    cJSON_ArrayForEach(n, member(doc, "notes"))
        fprintf(out, "  - %s\n", n->valuestring);
}

/* The verdict as comment lines, then the metrics as CSV (report's renderer). */
static int render_csv(const cJSON *doc, FILE *out)
{
    static const char *const keys[] = {"threshold_pct", "comparable", "regressed", "gate", "verdict"};
    cJSON *table = cJSON_CreateObject();
    const cJSON *n;
    int rc;

    for (size_t k = 0; k < sizeof keys / sizeof *keys; k++) {
        const cJSON *v = member(doc, keys[k]);
        if (cJSON_IsString(v))
            fprintf(out, "# %s: %s\n", keys[k], v->valuestring);
        else if (cJSON_IsBool(v))
            fprintf(out, "# %s: %s\n", keys[k], cJSON_IsTrue(v) ? "true" : "false");
        else if (cJSON_IsNumber(v))
            fprintf(out, "# %s: %g\n", keys[k], v->valuedouble);
        else
            fprintf(out, "# %s:\n", keys[k]);
    }
    cJSON_ArrayForEach(n, member(doc, "notes"))
        fprintf(out, "# note: %s\n", n->valuestring);
    if (!table || !cJSON_AddItemReferenceToObject(table, "metrics", (cJSON *)member(doc, "metrics"))) {
        cJSON_Delete(table);
        return HM_ENOMEM;
    }
    rc = qry_report_render(table, QRY_FORMAT_CSV, 0, out);
    cJSON_Delete(table);
    return rc;
}

int qry_diff_render(const cJSON *doc, enum qry_format fmt, int color, bool all_ranks, FILE *out)
{
    char *s;

    if (fmt == QRY_FORMAT_CSV)
        return render_csv(doc, out);
    if (fmt == QRY_FORMAT_TABLE) {
        render_table(doc, color, all_ranks, out);
        return 0;
    }
    s = cJSON_Print(doc);
    if (!s)
        return HM_ENOMEM;
    fprintf(out, "%s\n", s);
    free(s);
    return 0;
}

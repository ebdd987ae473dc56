/* Rendering of report documents: aligned tables, JSON and CSV.
 * A document is an object whose members are scalars (printed as
 * "key: value" lines), objects of scalars (printed as "key.member: value"
 * lines) or arrays of flat objects (printed as tables whose columns are the
 * first row's keys). Nested objects are flattened one level with
 * "parent.child" keys, which is all the report topics need. On a
 * terminal (the caller says so) table headers are bold and what needs
 * attention, a straggler or an incomplete run, is coloured. */
#include "report.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Formats one scalar cell; returns buf. */
static const char *cell_text(const cJSON *v, char *buf, size_t len)
{
    if (!v || cJSON_IsNull(v))
        snprintf(buf, len, "%s", "");
    else if (cJSON_IsString(v) || cJSON_IsRaw(v))
        snprintf(buf, len, "%s", v->valuestring);
    else if (cJSON_IsBool(v))
        snprintf(buf, len, "%s", cJSON_IsTrue(v) ? "true" : "false");
    else if (cJSON_IsNumber(v)) {
        double d = v->valuedouble;
        if (d == floor(d) && fabs(d) < 9e15)
            snprintf(buf, len, "%.0f", d);
        else
            snprintf(buf, len, "%.2f", d);
    } else {
        char *s = cJSON_PrintUnformatted(v);
        snprintf(buf, len, "%s", s ? s : "");
        free(s);
    }
    return buf;
}

static int is_table(const cJSON *v)
{
    return cJSON_IsArray(v) && (cJSON_GetArraySize(v) == 0 || cJSON_IsObject(v->child));
}

static void csv_field(FILE *out, const char *s)
{
    if (!strpbrk(s, ",\"\n\r")) {
        fputs(s, out);
        return;
    }
    fputc('"', out);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', out);
        fputc(*s, out);
    }
    fputc('"', out);
}

static void render_csv_table(const cJSON *rows, FILE *out)
{
    const cJSON *first = rows->child, *col, *row;
    char buf[512];

    if (!first)
        return;
    for (col = first->child; col; col = col->next) {
        csv_field(out, col->string);
        fputc(col->next ? ',' : '\n', out);
    }
    for (row = rows->child; row; row = row->next)
        for (col = first->child; col; col = col->next) {
            csv_field(out, cell_text(cJSON_GetObjectItemCaseSensitive(row, col->string), buf, sizeof buf));
            fputc(col->next ? ',' : '\n', out);
        }
}

/* ---- colour (tables on a terminal only) ---- */

#define ANSI_RED "\033[31m"
#define ANSI_BOLD_RED "\033[1;31m"
#define ANSI_YELLOW "\033[33m"
#define ANSI_RESET "\033[0m"

/* The colour of a scalar fact that needs attention, or NULL: a straggler
 * found, a run that did not complete, ranks or programs that failed,
 * events that were skipped, data that live capture lost. */
static const char *fact_color(const cJSON *m)
{
    const char *k = m->string;

    if (!strcmp(k, "straggler") && cJSON_IsNumber(m))
        return ANSI_BOLD_RED;
    if (!strcmp(k, "run_status") && cJSON_IsString(m) && strcmp(m->valuestring, "complete") != 0)
        return ANSI_YELLOW;
    if ((!strcmp(k, "incomplete_ranks") || !strcmp(k, "failed_programs")) && !cJSON_IsNull(m))
        return ANSI_RED;
    if (!strcmp(k, "skipped_events") && cJSON_IsNumber(m) && m->valuedouble > 0)
        return ANSI_YELLOW;
    if (!strcmp(k, "capture_lost"))
        return ANSI_YELLOW;
    return NULL;
}

/* The colour of a table row: the straggler's own row (doc.straggler names
 * it) and a step whose verdict names a straggler. */
static const char *row_color(const cJSON *row, const cJSON *straggler)
{
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(row, "rank");
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(row, "straggler");

    if (cJSON_IsNumber(straggler) && cJSON_IsNumber(r) && !cJSON_GetObjectItemCaseSensitive(row, "step") &&
        r->valuedouble == straggler->valuedouble)
        return ANSI_RED;
    if (cJSON_IsNumber(s))
        return ANSI_RED;
    return NULL;
}

#define MAX_COLS 32

/* straggler: the document's straggler member (NULL if none), whose row is
 * highlighted when color is on. */
static void render_text_table(const cJSON *rows, int color, const cJSON *straggler, FILE *out)
{
    const cJSON *first = rows->child, *col, *row;
    size_t width[MAX_COLS] = {0};
    int numeric[MAX_COLS] = {0};
    char buf[512];
    int c;

    if (!first) {
        fputs("  (no rows)\n", out);
        return;
    }
    for (col = first->child, c = 0; col && c < MAX_COLS; col = col->next, c++) {
        width[c] = strlen(col->string);
        numeric[c] = cJSON_IsNumber(col) || cJSON_IsRaw(col) || cJSON_IsNull(col);
        for (row = rows->child; row; row = row->next) {
            size_t w = strlen(cell_text(cJSON_GetObjectItemCaseSensitive(row, col->string), buf, sizeof buf));
            if (w > width[c])
                width[c] = w > 60 ? 60 : w;
        }
    }
    if (color)
        fputs("\033[1m", out);
    for (col = first->child, c = 0; col && c < MAX_COLS; col = col->next, c++)
        fprintf(out, numeric[c] ? "%s%*s" : "%s%-*s", c ? "  " : "", (int)width[c], col->string);
    fputs(color ? "\033[0m\n" : "\n", out);
    for (row = rows->child; row; row = row->next) {
        const char *rc = color ? row_color(row, straggler) : NULL;
        if (rc)
            fputs(rc, out);
        for (col = first->child, c = 0; col && c < MAX_COLS; col = col->next, c++) {
            const char *t = cell_text(cJSON_GetObjectItemCaseSensitive(row, col->string), buf, sizeof buf);
            fprintf(out, numeric[c] ? "%s%*.*s" : "%s%-*.*s", c ? "  " : "", (int)width[c],
                    (int)width[c], t);
        }
        fputs(rc ? ANSI_RESET "\n" : "\n", out);
    }
}

/* One scalar fact: "key: value" (table) or "# key: value" (CSV); prefix
 * names the object holding it, or is NULL. */
static void render_fact(const cJSON *m, const char *prefix, enum qry_format fmt, int color, FILE *out)
{
    const char *fc = color && !prefix ? fact_color(m) : NULL;
    char buf[1024], key[256];

    snprintf(key, sizeof key, "%s%s%s", prefix ? prefix : "", prefix ? "." : "", m->string);
    if (fmt == QRY_FORMAT_TABLE) {
        fprintf(out, "%s: %s%s%s\n", key, fc ? fc : "", cell_text(m, buf, sizeof buf), fc ? ANSI_RESET : "");
        return;
    }
    fputs("# ", out);
    csv_field(out, key);
    fputs(": ", out);
    csv_field(out, cell_text(m, buf, sizeof buf));
    fputc('\n', out);
}

int qry_report_render(const cJSON *doc, enum qry_format fmt, int color, FILE *out)
{
    const cJSON *m, *sub;
    int tables = 0;

    if (fmt == QRY_FORMAT_JSON) {
        char *s = cJSON_Print(doc);
        if (!s)
            return HM_ENOMEM;
        fprintf(out, "%s\n", s);
        free(s);
        return 0;
    }
    for (m = doc->child; m; m = m->next) {
        if (is_table(m)) {
            if (fmt == QRY_FORMAT_CSV) {
                if (tables++)
                    fputc('\n', out);
                if (cJSON_GetArraySize(doc) > 1)
                    fprintf(out, "# %s\n", m->string);
                render_csv_table(m, out);
            } else {
                fprintf(out, "\n%s%s%s\n", color ? "\033[1;4m" : "", m->string, color ? "\033[0m" : "");
                render_text_table(m, color, cJSON_GetObjectItemCaseSensitive(doc, "straggler"), out);
            }
        } else if (cJSON_IsObject(m)) {
            cJSON_ArrayForEach(sub, m)
                render_fact(sub, m->string, fmt, color, out);
        } else {
            render_fact(m, NULL, fmt, color, out);
        }
    }
    return 0;
}

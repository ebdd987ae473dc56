/* `htamerge diff`: compares two merged runs (query/diff.h) and turns the
 * verdict into an exit status for CI. The comparison itself, and what makes
 * two runs comparable, lives in query/diff.c. */
#include <getopt.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "query/diff.h"

/* diff(1)'s convention rather than cli.h's: 1 must mean "slower" only, so
 * that CI can tell a regression from a file it could not read. */
enum {
    DIFF_EXIT_OK = 0,          /* no regression */
    DIFF_EXIT_REGRESSED = 1,   /* NEW's gate metric grew by >= the threshold */
    DIFF_EXIT_TROUBLE = 2,     /* bad command line, unreadable file, or runs that do not compare */
};

static const char diff_help[] =
    "usage: htamerge diff BASE.db NEW.db [--threshold PCT] [--format table|json|csv]\n"
    "                     [--color auto|always|never] [--all-steps] [--verbose]\n"
    "\n"
    "Compares run NEW with run BASE: step time, time per kernel type (HTA's kernel\n"
    "breakdown), compute / non-compute / idle GPU time, communication and how much\n"
    "of it computation hides, exposed communication per step, idle time by cause,\n"
    "and stragglers (the verdict, each rank's late fraction, blame and wait), per\n"
    "rank and overall. The numbers are those of `htamerge report` on each file.\n"
    "\n"
    "Runs of different length compare: times that report gives for the whole run\n"
    "are divided by each rank's analysed ProfilerSteps. Runs of different rank\n"
    "counts compare: overall values are means over each run's own ranks, and the\n"
    "per-rank rows cover the ranks both runs have. When neither run has\n"
    "ProfilerSteps, totals are compared and the GPU time window (first to last\n"
    "GPU event) takes the place of step time. When only one run has them, step\n"
    "time cannot be compared, and diff says so and exits 2.\n"
    "\n"
    "NEW regresses when its mean step time (mean over ranks of each rank's mean\n"
    "step) is PCT percent or more above BASE's. Other metrics that moved by PCT\n"
    "or more are marked worse or better but do not change the exit status.\n"
    "\n"
    "options:\n"
    "  -t, --threshold PCT  regression threshold in percent (default 5)\n"
    "  -f, --format F       table (default), json or csv\n"
    "  -c, --color WHEN     colour the table: auto (default: on a terminal, unless\n"
    "                       NO_COLOR is set), always or never\n"
    "  -a, --all-steps      keep each rank's last ProfilerStep (HTA drops it)\n"
    "  -v, --verbose        table: every per-rank row, not only those that moved\n"
    "\n"
    "exit status: 0 no regression, 1 NEW regressed by PCT or more, 2 bad command\n"
    "line, unreadable file, or runs whose step times do not compare.\n"
    "\n"
    "examples:\n"
    "  htamerge diff baseline.db candidate.db\n"
    "  htamerge diff baseline.db candidate.db --threshold 3 --format json\n"
    "  htamerge diff baseline.db candidate.db --format csv > diff.csv\n"
    "  htamerge diff main.db pr.db --threshold 5   # in CI: exit 1 fails the job\n";

/* Parses "5" or "5%" into a finite percentage >= 0. */
static int parse_threshold(const char *s, double *out)
{
    char *end;
    double v = strtod(s, &end);

    if (end == s)
        return -1;
    if (*end == '%')
        end++;
    if (*end || !isfinite(v) || v < 0 || v >= 1e6)
        return -1;
    *out = v;
    return 0;
}

/* Opens both files, builds and prints the comparison; the exit status. */
static int run_diff(const char *base_path, const char *new_path, const struct qry_diff_opts *o,
                    enum qry_format fmt, int color, bool verbose)
{
    struct hm_err err;
    char line[1400];
    cJSON *doc = NULL;
    sqlite3 *base = NULL, *new = NULL;
    int rc = DIFF_EXIT_TROUBLE;

    hm_err_clear(&err);
    if (!(base = qry_open(base_path, &err)) || !(new = qry_open(new_path, &err)))
        goto out;
    if (qry_diff_build(base, new, o, &doc, &err) != 0)
        goto out;
    if (qry_diff_render(doc, fmt, fmt == QRY_FORMAT_TABLE && color, verbose, stdout) != 0) {
        hm_err_set(&err, HM_ENOMEM, NULL, -1, "diff: out of memory");
        goto out;
    }
    fflush(stdout);   /* the reason after the table, also when both go to one terminal */
    if (!qry_diff_comparable(doc))
        hm_say("diff: %s", cJSON_GetObjectItemCaseSensitive(doc, "verdict")->valuestring);
    rc = !qry_diff_comparable(doc) ? DIFF_EXIT_TROUBLE
         : qry_diff_regressed(doc) ? DIFF_EXIT_REGRESSED
                                   : DIFF_EXIT_OK;
out:
    if (err.code)
        hm_say("%s", hm_err_line(&err, line, sizeof line));
    cJSON_Delete(doc);
    sqlite3_close(base);
    sqlite3_close(new);
    return rc;
}

int cli_diff(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"threshold", required_argument, 0, 't'}, {"format", required_argument, 0, 'f'},
        {"color", required_argument, 0, 'c'},     {"colour", required_argument, 0, 'c'},
        {"all-steps", no_argument, 0, 'a'},       {"verbose", no_argument, 0, 'v'},
        {"help", no_argument, 0, 'h'},            {0, 0, 0, 0}};
    struct qry_diff_opts o = {.threshold_pct = QRY_DIFF_THRESHOLD_DEFAULT};
    enum qry_format fmt = QRY_FORMAT_TABLE;
    int c, color = cli_parse_color("auto");
    bool verbose = false;

    optind = 1;
    while ((c = getopt_long(argc, argv, "t:f:c:avh", longopts, NULL)) != -1) {
        switch (c) {
        case 't':
            if (parse_threshold(optarg, &o.threshold_pct)) {
                hm_say("diff: bad threshold '%s' (a percentage >= 0, e.g. 5)", optarg);
                return DIFF_EXIT_TROUBLE;
            }
            break;
        case 'f':
            if (cli_parse_format(optarg, &fmt)) {
                hm_say("diff: unknown format '%s' (table, json or csv)", optarg);
                return DIFF_EXIT_TROUBLE;
            }
            break;
        case 'c':
            if ((color = cli_parse_color(optarg)) < 0) {
                hm_say("diff: unknown --color '%s' (auto, always or never)", optarg);
                return DIFF_EXIT_TROUBLE;
            }
            break;
        case 'a': o.all_steps = 1; break;
        case 'v': verbose = true; break;
        case 'h': fputs(diff_help, stdout); return DIFF_EXIT_OK;
        default: fputs(diff_help, stderr); return DIFF_EXIT_TROUBLE;
        }
    }
    if (argc - optind != 2) {
        hm_say("diff: expected BASE.db and NEW.db, got %d file%s (try `htamerge diff --help`)",
                  argc - optind, argc - optind == 1 ? "" : "s");
        return DIFF_EXIT_TROUBLE;
    }
    o.base_name = argv[optind];
    o.new_name = argv[optind + 1];
    return run_diff(argv[optind], argv[optind + 1], &o, fmt, color, verbose);
}

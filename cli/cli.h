/* The htamerge command line: one binary, one function per subcommand.
 * Exit codes shared by all commands are defined here. */
#ifndef HM_CLI_H
#define HM_CLI_H

#include <stdint.h>

#include "common/err.h"
#include "query/report.h"

enum {
    CLI_EXIT_OK = 0,
    CLI_EXIT_FAIL = 1,     /* the command failed; nothing was written */
    CLI_EXIT_USAGE = 2,    /* bad command line */
    CLI_EXIT_PARTIAL = 3,  /* done, but some inputs were skipped (--keep-going) */
};

int cli_ingest(int argc, char **argv);
int cli_report(int argc, char **argv);
int cli_sql(int argc, char **argv);
int cli_run(int argc, char **argv);
int cli_serve(int argc, char **argv);
int cli_export(int argc, char **argv);
int cli_diff(int argc, char **argv);
int cli_capture(int argc, char **argv);

/* Parses a list such as "0,2-4" (ranks, steps) into a malloc'd array.
 * Returns the count, or -1 when malformed (negative, reversed range, a
 * range over a million, trailing comma). */
int cli_parse_list(const char *s, int64_t **out);

/* Parses --format: table, json or csv; 0, or -1 for anything else. */
int cli_parse_format(const char *s, enum qry_format *f);

/* A whole decimal integer within [lo, hi] into *out; 0, or -1 when s is
 * empty, has anything else, or is out of range. */
int cli_parse_int(const char *s, int lo, int hi, int *out);

/* Parses --color WHEN: 1 always, 0 never, auto (whether a person reads
 * stdout at a colour terminal; see args.c), -1 for an unknown WHEN. */
int cli_parse_color(const char *when);


/* Joins argv into one shell-like line (for meta.command_line); static buffer. */
const char *cli_command_line(int argc, char **argv);

#endif

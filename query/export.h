/* Export of a merged database as one Chrome trace-event JSON file (the
 * "JSON Object Format" that Perfetto and chrome://tracing open). The file is
 * written while the database is read, slice by slice; nothing holds all
 * slices. The format and its choices are described in export_chrome.c. */
#ifndef HM_QUERY_EXPORT_H
#define HM_QUERY_EXPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <sqlite3.h>

#include "common/err.h"

struct qry_export_ends;

/* One part of a document written from several files (the shards of a
 * sharded ingest, cli/cmd_export.c): the parts share the origin and take
 * disjoint pids, tids and flow ids. */
struct qry_export_part {
    bool head, tail;          /* writes the document's start / its end */
    bool more;                /* events came before: the first one follows a comma */
    int64_t origin_ns;        /* every part's ts 0 (qry_export_origin's least); ignored with absolute */
    int pid_base;             /* the pids (processes) the parts before used */
    int64_t tid_base;         /* above every pid and every earlier part's tids */
    int64_t flow_base;        /* the flow ids the parts before used */
    const struct qry_export_stats *before; /* what they wrote, added up into the end's counts; may be NULL */
    const int *ranks_all;     /* the document's ranks, for its end and --steps (NULL: every rank) */
    int nranks_all;
    /* The sharded ingest's index (borrowed; NULL: none): the --steps windows
     * are its steps' over ranks_all, and the collective arrows its
     * instances', drawn by the tail part through the slices each part
     * noted in ends (export_ends.h; borrowed, shared by the parts). */
    sqlite3 *index;
    struct qry_export_ends *ends;
};

struct qry_export_opts {
    const int *ranks;        /* borrowed: only these ranks; NULL = every rank */
    int nranks;
    const int64_t *steps;    /* borrowed: only slices overlapping these ProfilerSteps; NULL = all */
    int nsteps;
    bool absolute;           /* ts = aligned ns / 1000 instead of (ns - origin) / 1000 */
    const char *source;      /* borrowed: database path for otherData; may be NULL */
    const char *producer;    /* borrowed: e.g. "htamerge 0.1.0"; may be NULL */
    const struct qry_export_part *part; /* borrowed; NULL: the whole document from this file */
};

/* What an export wrote. */
struct qry_export_stats {
    int64_t slices;            /* X events */
    int64_t moved_slices;      /* of those, put on an overlap lane (see export_chrome.c) */
    int64_t launch_flows;      /* CPU launch -> GPU op arrows */
    int64_t collective_flows;  /* one per matched collective instance with >= 2 exported ranks */
    int64_t counters;          /* C events */
    int processes, threads;    /* pids and tids named by M events */
    int64_t origin_ns;         /* aligned ns that ts 0 stands for (0 with absolute) */
    int pids;                  /* pids this file took (named or not): the next part's pid_base */
    int64_t flows;             /* flow ids it took: the next part's flow_base */
};

/* The ts 0 a whole export of db would take (its earliest aligned time,
 * floored to a whole us): a document of several parts takes their least.
 * 0 or HM_ESQL. */
int qry_export_origin(sqlite3 *db, int64_t *origin_ns, struct hm_err *err);

/* Writes db (borrowed) as Chrome JSON to out (borrowed; the caller opens and
 * closes it, and should check fclose). stats may be NULL. Returns 0, or
 * HM_EINVAL for a rank or step the file does not have, HM_ESQL, HM_ENOMEM or
 * HM_EIO (a write failed) with err filled; out then holds a partial file. */
int qry_export_chrome(sqlite3 *db, const struct qry_export_opts *opts, FILE *out,
                      struct qry_export_stats *stats, struct hm_err *err);

#endif

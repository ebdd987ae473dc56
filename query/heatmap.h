/* /api/heatmap: ranks x time, each cell the share of its time a rank (or a
 * group of ranks) was busy and communicating. Answered from the stored
 * activity buckets (rank_activity) where the cells are at least a bucket
 * wide, else from the slices of the window (files without the table, live
 * runs before they finish, close zoom). Private to query/. */
#ifndef HM_QUERY_HEATMAP_H
#define HM_QUERY_HEATMAP_H

#include <stdint.h>

#include <sqlite3.h>

#include "buf.h"
#include "common/err.h"

#define QRY_HEAT_MAX_COLS 2048
#define QRY_HEAT_MAX_ROWS 4096
#define QRY_HEAT_LEVELS 15     /* a cell's busy and comm shares, in fifteenths */

struct qry_heat_req {
    int64_t origin;            /* the run's origin (absolute ns): t0 and t1 count from it */
    int64_t t0, t1;
    int cols;                  /* 1..QRY_HEAT_MAX_COLS */
    const int *ranks;          /* NULL: every rank */
    int nranks;
    int rows;                  /* 0: a row per rank; else at most this many (ranks grouped) */
};

/* Writes the JSON answer into out (see the man page, /api/heatmap):
 * {"t0","t1","cols","col_ns","resolution_ns","source","levels","rows":[[first,last],..],
 *  "cells": base64 of rows x cols bytes, (busy << 4) | comm}. */
int qry_heatmap(sqlite3 *db, const struct qry_heat_req *q, struct qry_buf *out, struct hm_err *err);

#endif

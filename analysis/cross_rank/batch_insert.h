/* Rows of one INSERT written many to a statement. A one-row INSERT costs
 * about as much in SQLite's statement overhead (step, reset, halt) as in
 * storing the row: 2 M rows of nvtx_stitched_ranks took 2.1 s one at a
 * time and 1.0 s 32 at a time. The statement of many rows is built from
 * the one-row query of sql/queries (its VALUES tuple repeated, its ?N
 * renumbered), so the columns stay written in one place. Rows go in the
 * order they were added, so rowids are as one-row inserts give them. */
#ifndef HM_ANALYSIS_CROSS_RANK_BATCH_INSERT_H
#define HM_ANALYSIS_CROSS_RANK_BATCH_INSERT_H

#include "cross_rank_int.h"

enum { XR_BATCH_ROWS = 32, XR_BATCH_MAX_COLS = 32 };

struct xr_batch {
    sqlite3_stmt *one, *many;   /* owned */
    int cols;                   /* ?1 .. ?cols in a row */
    unsigned nullable;          /* bit c-1: column ?c is bound NULL when HM_NONE */
    unsigned names;             /* bit c-1: column ?c's value is an id in x->names, bound
                                   as its text (ids are stable while rows are held) */
    int held;                   /* rows in v not yet written */
    int64_t *v;                 /* owned: XR_BATCH_ROWS rows of cols values */
};

/* The statement of many rows for one_row_sql, whose VALUES tuple uses only
 * numbered parameters ?1 .. ?N (N <= XR_BATCH_MAX_COLS). Returns a
 * malloc'd string, or NULL (out of memory, or a tuple it cannot repeat). */
char *xr_batch_sql(const char *one_row_sql, int rows, int *cols);

/* Prepares b for one_row_sql, with the column masks above. 0, or an
 * error set in err. */
int xr_batch_open(struct xr_ctx *x, struct xr_batch *b, const char *one_row_sql, unsigned nullable,
                  unsigned names, struct hm_err *err);
/* Adds one row of b->cols values; writes XR_BATCH_ROWS rows at a time
 * (b->held is 0 right after: sqlite3_last_insert_rowid is then the last
 * row's). 0, or an error set in err (what: the analysis's words for it). */
int xr_batch_add(struct xr_ctx *x, struct xr_batch *b, const int64_t *row, struct hm_err *err,
                 const char *what);
/* Writes the rows still held, one at a time. 0 or an error set in err. */
int xr_batch_flush(struct xr_ctx *x, struct xr_batch *b, struct hm_err *err, const char *what);
/* Finalizes the statements; rows still held are dropped (flush first). */
void xr_batch_close(struct xr_batch *b);

#endif

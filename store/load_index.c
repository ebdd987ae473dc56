/* The slice index kept during the load (issue 21).
 *
 * sql/indexes.sql is built by _finish, once, over the loaded data, which
 * was the largest serial step of an ingest: CREATE INDEX slices_track_ts
 * scans the whole slices table (args and all) and sorts 766 k keys while
 * the parser threads are already done (0.26 of 1.2 s on the bench corpus).
 * But the writer stores slices in (track, start) order (slice_nesting.c),
 * and the tracks of each rank get ids as its batch is stored, so the
 * (track, ts, dur) entries of a load arrive nearly in index order: kept
 * from the first row on, each insert lands at the right edge of the index
 * (a page already in the cache), on the writer thread, while the parser
 * threads still read. Measured on 2 cores: the whole ingest took less CPU
 * time (no scan, no sort) and its finish went from 0.38 to 0.16 s.
 *
 * Not slices_correlation: correlation ids restart with every rank, so its
 * entries land all over the index; kept during the load it made the
 * writer thread the slower side (+0.17 s) and the ingest no faster.
 *
 * The statement is taken from sql/indexes.sql itself, so that the index
 * and its text in sqlite_schema are exactly what _finish would create
 * (_finish's CREATE INDEX IF NOT EXISTS then leaves it alone). Re-timing
 * every slice (retime.c) drops it first: updating ts through an index
 * costs more than building it again at the finish.
 *
 * The index holds the same entries either way, but not the same pages:
 * CREATE INDEX packs its pages full, inserts leave them as B-tree balancing
 * does (2 % more file). ANALYZE under analysis_limit estimates an index's
 * row count from its pages (the cells on the path to its first entry), so
 * sqlite_stat1 would depend on which way the index was made, re-timed or
 * not. _finish therefore writes the exact count there (wr_load_index_stat_sql
 * after ANALYZE, a count over that index: 6 ms for 766 k slices); the rest
 * of the row comes from its first entries, the same both ways.
 *
 * slices_correlation is built by CREATE INDEX as in _finish, only earlier
 * (mrg_writer_build_slice_index): 1.3 s of table scan at 64 ranks, which
 * the cross-rank analyses overlap on the other core
 * (analysis/cross_rank/overlap.c). Its entries are correlation ids, which
 * re-timing leaves alone, and the same statement over the same rows packs
 * the same pages. */
#include "store/writer_int.h"

#include <stdio.h>
#include <string.h>

#include "hm_sql.h"

#define LOAD_INDEX_STMT "CREATE INDEX IF NOT EXISTS slices_track_ts "

const char wr_load_index_stat_sql[] =
    "UPDATE sqlite_stat1 SET stat = (SELECT count(*) FROM slices) || substr(stat, instr(stat, ' '))"
    " WHERE tbl = 'slices' AND idx = 'slices_track_ts' AND instr(stat, ' ') > 0";

#define CORR_INDEX_STMT "CREATE INDEX IF NOT EXISTS slices_correlation "

/* Runs the statement of sql/indexes.sql that starts with head. */
static int create_index(struct mrg_writer *w, const char *head, struct hm_err *err)
{
    const char *s = strstr(hm_sql_indexes, head);
    const char *e = s ? strchr(s, ';') : NULL;
    char sql[256];

    if (!e || e - s >= (long)sizeof sql)
        return wr_fail(w, err, HM_EINVAL, -1, "sql/indexes.sql lacks a statement of the slice indexes");
    snprintf(sql, sizeof sql, "%.*s", (int)(e - s), s);
    return wr_exec(w, sql, err, "creating the slice index");
}

int wr_create_load_index(struct mrg_writer *w, struct hm_err *err)
{
    return create_index(w, LOAD_INDEX_STMT, err);
}

int mrg_writer_build_slice_index(struct mrg_writer *w, struct hm_err *err)
{
    int rc = wr_usable(w, err);

    return rc ? rc : create_index(w, CORR_INDEX_STMT, err);
}

int wr_drop_load_index(struct mrg_writer *w, struct hm_err *err)
{
    return wr_exec(w, "DROP INDEX IF EXISTS slices_track_ts", err, "re-timing slices");
}

/* Named result columns. A reader of a query result names the columns it
 * reads instead of using bare positions: an X-macro lists (enumerator,
 * column name) in the order the .sql file selects them, which gives both an
 * enum of positions and the names. hm_columns_check compares those names
 * with sqlite3_column_name once, right after the statement is prepared, so a
 * SELECT whose columns were reordered or renamed fails loudly in debug and
 * test builds instead of silently reading the wrong value.
 *
 *   #define TEMPORAL_COLUMNS(X) X(TC_RANK, "rank") X(TC_IDLE, "idle_us")
 *   enum { TEMPORAL_COLUMNS(HM_COLUMN_ENUM) TC__COUNT };
 *   static const char *const temporal_names[] = { TEMPORAL_COLUMNS(HM_COLUMN_NAME) };
 *   ...prepare...
 *   HM_COLUMNS_CHECK(st, temporal_names);
 *   rank = sqlite3_column_int(st, TC_RANK);
 */
#ifndef HM_STORE_COLUMNS_H
#define HM_STORE_COLUMNS_H

#include <sqlite3.h>

#define HM_COLUMN_ENUM(id, name) id,
#define HM_COLUMN_NAME(id, name) name,

/* Checks that the first n result columns of st are named names[0..n-1]
 * (the statement may return more). On a mismatch it prints the statement,
 * the position and both names to stderr and aborts: a mismatch is a bug in
 * the program, never bad input. Does nothing when NDEBUG is defined. */
void hm_columns_check(sqlite3_stmt *st, const char *const *names, int n);

#define HM_COLUMNS_CHECK(st, names) \
    hm_columns_check((st), (names), (int)(sizeof(names) / sizeof((names)[0])))

#endif

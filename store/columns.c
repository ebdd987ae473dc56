/* hm_columns_check: see columns.h. */
#include "columns.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void hm_columns_check(sqlite3_stmt *st, const char *const *names, int n)
{
#ifdef NDEBUG
    (void)st;
    (void)names;
    (void)n;
#else
    int have;

    if (!st)
        return;
    have = sqlite3_column_count(st);
    for (int i = 0; i < n; i++) {
        const char *got = i < have ? sqlite3_column_name(st, i) : NULL;
        if (got && !strcmp(got, names[i]))
            continue;
        fprintf(stderr,
                "htamerge: internal error: column %d of\n  %s\nis \"%s\", its reader expects \"%s\"\n",
                i, sqlite3_sql(st), got ? got : "(none)", names[i]);
        abort();
    }
#endif
}

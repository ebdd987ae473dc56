/* Views of the newer analyses, each the very query its `htamerge report`
 * topic runs, so that SQL users and the report cannot drift apart:
 *   v_comms               report comms (per pg, op, size bucket)
 *   v_comms_exposed       report comms, exposed time per pg
 *   v_critical_path       report critical-path, the segments
 *   v_critical_path_steps report critical-path, per step with its summary
 *   v_memory              report memory, per rank and device
 *   v_graph_kernels       each CUDA graph kernel's launch and capture context
 *                         (report kernels --by graph sums it per graph)
 * Created with the views of views.sql (after the tables exist). */
#include "writer_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hm_sql.h"

static const struct {
    const char *name;
    const char *select;
} report_views[] = {
    {"v_comms", hm_sql_report_comms},
    {"v_comms_exposed", hm_sql_report_comms_exposed},
    {"v_critical_path", hm_sql_report_path_segments},
    {"v_critical_path_steps", hm_sql_report_path_steps},
    {"v_memory", hm_sql_report_memory_ranks},
    {"v_graph_kernels", hm_sql_report_graph_kernels},
};

int wr_create_report_views(struct mrg_writer *w, struct hm_err *err)
{
    for (size_t i = 0; i < sizeof report_views / sizeof *report_views; i++) {
        const char *q = report_views[i].select;
        size_t n = strlen(q);
        char *sql;
        int rc;

        while (n > 0 && strchr(" \t\r\n;", q[n - 1]))   /* one statement, its ';' dropped */
            n--;
        if (!(sql = malloc(n + 64)))
            return hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory");
        snprintf(sql, n + 64, "CREATE VIEW %s AS\n%.*s", report_views[i].name, (int)n, q);
        rc = wr_exec(w, sql, err, "creating views");
        free(sql);
        if (rc)
            return rc;
    }
    return 0;
}

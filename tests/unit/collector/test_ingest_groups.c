/* The parallel ingest's grouping of a rank's files for one reader
 * (collector/ingest_list.h) and the tail of a reader's message that
 * carries a joined rank's results (collector/ingest_msg.h), with every
 * malformed tail refused by offset. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <fcntl.h>
#include <unistd.h>

#include "collector/ingest_list.h"
#include "collector/ingest_msg.h"
#include "test.h"

static int truncate_new(const char *path, uint64_t size)
{
    int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0600), rc;

    if (fd < 0)
        return -1;
    rc = ftruncate(fd, (off_t)size);
    close(fd);
    return rc;
}

static void groups(void)
{
    char *f[] = {"d/host_1.1700000000315.pt.trace.json.gz", "d/host_1.1700000000630.pt.trace.json.gz",
                 "d/host_12.1700000000315.pt.trace.json.gz", "d/node1.cluster_7.17.pt.trace.json",
                 "d/node1.cluster_7.18.pt.trace.json", "d/rank-0.json.gz", "d/rank-1.json", "e/rank-1.json",
                 "rank-2.json", "rank-2.5.json", "x"};
    size_t n = sizeof f / sizeof *f;

    CHECK_EQ_INT(col_ingest_group_end(f, n, 0), 2);  /* one worker's two windows */
    CHECK_EQ_INT(col_ingest_group_end(f, n, 2), 3);  /* host_12 is another worker */
    CHECK_EQ_INT(col_ingest_group_end(f, n, 3), 5);  /* dots in the host name */
    CHECK_EQ_INT(col_ingest_group_end(f, n, 5), 6);
    CHECK_EQ_INT(col_ingest_group_end(f, n, 6), 7);  /* same name, another folder */
    CHECK_EQ_INT(col_ingest_group_end(f, n, 8), 10); /* no folder; a last numeric part */
    CHECK_EQ_INT(col_ingest_group_end(f, n, 10), 11);

    char *many[COL_INGEST_GROUP_MAX + 3];
    for (size_t i = 0; i < sizeof many / sizeof *many; i++) {
        many[i] = malloc(32);
        snprintf(many[i], 32, "w.%03zu.json", i);
    }
    CHECK_EQ_INT(col_ingest_group_end(many, sizeof many / sizeof *many, 0), COL_INGEST_GROUP_MAX);
    for (size_t i = 0; i < sizeof many / sizeof *many; i++)
        free(many[i]);
}

/* Big files of one name group only while their sizes fit the cap (sparse
 * files: the size is what counts). */
static void group_bytes(void)
{
    char dir[] = "/tmp/hm_groups.XXXXXX", a[64], b[64], c[64];
    char *f[] = {a, b, c};
    int ok = mkdtemp(dir) != NULL;

    CHECK(ok);
    if (!ok)
        return;
    snprintf(a, sizeof a, "%s/w.1.json", dir);
    snprintf(b, sizeof b, "%s/w.2.json", dir);
    snprintf(c, sizeof c, "%s/w.3.json", dir);
    CHECK_EQ_INT(truncate_new(a, COL_INGEST_GROUP_BYTES / 2) | truncate_new(b, COL_INGEST_GROUP_BYTES / 4) |
                 truncate_new(c, COL_INGEST_GROUP_BYTES / 2), 0);
    CHECK_EQ_INT(col_ingest_group_end(f, 3, 0), 2); /* a third would pass the cap */
    CHECK_EQ_INT(col_ingest_group_end(f, 3, 2), 3);
    unlink(a);
    unlink(b);
    unlink(c);
    rmdir(dir);
}

static void tails(void)
{
    const uint8_t file[] = "HMA\1file", rank[] = "HMA\1rank";
    const char *names[] = {"a.json", "host:b.json"};
    struct col_ingest_tail t;
    struct hm_err err;
    uint8_t *buf = NULL;
    size_t len = 0;

    CHECK_EQ_INT(col_ingest_tail_encode(file, sizeof file, NULL, 0, NULL, 0, &buf, &len), 0);
    CHECK_EQ_INT(col_ingest_tail_decode(buf, len, &t, &err), 0);
    CHECK(t.file_len == sizeof file && !memcmp(t.file_res, file, sizeof file) && !t.rank_res);
    free(buf);

    CHECK_EQ_INT(col_ingest_tail_encode(file, sizeof file, rank, sizeof rank, names, 2, &buf, &len), 0);
    CHECK_EQ_INT(col_ingest_tail_decode(buf, len, &t, &err), 0);
    CHECK(t.file_len == sizeof file && !memcmp(t.file_res, file, sizeof file));
    CHECK(t.rank_len == sizeof rank && t.rank_res && !memcmp(t.rank_res, rank, sizeof rank));
    CHECK_EQ_INT(t.nnames, 2);
    CHECK_STR(t.names, "a.json");
    CHECK_STR(t.names + strlen(t.names) + 1, "host:b.json");
    for (size_t cut = 4; cut < len; cut++) { /* every truncation is refused */
        hm_err_clear(&err);
        CHECK(col_ingest_tail_decode(buf, cut, &t, &err) == HM_EFORMAT && err.offset >= 0);
    }
    uint8_t *more = malloc(len + 1);
    memcpy(more, buf, len);
    more[len] = 'x';
    CHECK_EQ_INT(col_ingest_tail_decode(more, len + 1, &t, &err), HM_EFORMAT);
    CHECK_CONTAINS(err.msg, "file name");
    free(more);
    free(buf);
}

int main(void)
{
    groups();
    group_bytes();
    tails();
    return hm_test_done();
}

/* Tests for common/spill.c: zeroed allocations that never move, arrays
 * grown in place of malloc keeping their contents, data surviving a
 * release, the resident set dropping on release (the point of the arena),
 * the budgeted release, and no file left behind. */
#include "test.h"

#include <dirent.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/proc_status.h"
#include "common/spill.h"

/* RssFile of this process, kB (the arena's pages are file pages). */
static long rss_file_kb(void)
{
    return hm_proc_status_kb("RssFile");
}

static int spill_files_in(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;

    while (d && (e = readdir(d)))
        n += !strncmp(e->d_name, ".htamerge-spill-", 16);
    if (d)
        closedir(d);
    return n;
}

static void test_alloc_and_release(const char *dir)
{
    struct hm_spill *s = hm_spill_new(dir);
    size_t mb64 = (size_t)64 << 20, zeros = 0;
    uint64_t *big, *small;
    long before, touched, after;
    int bad = 0;

    CHECK(s != NULL);
    if (!s)
        return;
    CHECK_EQ_INT(spill_files_in(dir), 0);   /* unlinked at once */
    small = hm_spill_alloc(s, 24);
    CHECK(small != NULL && ((uintptr_t)small & 15) == 0);
    big = hm_spill_alloc(s, mb64);   /* past the first 64 MiB step of the file */
    CHECK(big != NULL && ((uintptr_t)big & 15) == 0 && (char *)big >= (char *)small + 24);
    if (!big)
        return;
    for (size_t i = 0; i < mb64 / 8; i += 512)
        zeros += big[i] == 0;
    CHECK_EQ_INT(zeros, mb64 / 8 / 512);
    hm_spill_release(s);
    before = rss_file_kb();
    for (size_t i = 0; i < mb64 / 8; i++)
        big[i] = i * 2654435761u;
    touched = rss_file_kb();
    hm_spill_release(s);
    after = rss_file_kb();
    /* 64 MiB written: resident, then gone from the process, data kept. */
    CHECK(touched - before > 60000);
    CHECK(touched - after > 60000);
    for (size_t i = 0; i < mb64 / 8; i++)
        bad += big[i] != i * 2654435761u;
    CHECK_EQ_INT(bad, 0);
    CHECK(hm_spill_used(s) >= mb64 + 24);
    hm_spill_free(s);
}

static void test_arrays(const char *dir)
{
    struct hm_spill *s = hm_spill_new(dir);
    int64_t *v = NULL;
    size_t cap = 0, n = 0;
    int bad = 0;
    long peak = 0;

    CHECK(s != NULL);
    if (!s)
        return;
    /* 8 M elements (64 MB) pushed one at a time: the budget keeps what is
     * resident far below the data. */
    hm_spill_release(s);
    long base = rss_file_kb();
    for (int64_t i = 0; i < 8 << 20; i++) {
        if (hm_spill_reserve(s, (void **)&v, &cap, n, n + 1, sizeof *v)) {
            bad++;
            break;
        }
        v[n++] = i;
        hm_spill_touched(s, sizeof *v);
        if ((i & 0xFFFF) == 0) {
            long r = rss_file_kb() - base;
            peak = r > peak ? r : peak;
        }
    }
    CHECK_EQ_INT(bad, 0);
    CHECK(cap >= n && n == (size_t)8 << 20);
    for (size_t i = 0; i < n; i++)
        bad += v[i] != (int64_t)i;
    CHECK_EQ_INT(bad, 0);
    CHECK(peak < 3 * (long)(HM_SPILL_RESIDENT >> 10));
    /* Reserving what is already there changes nothing. */
    int64_t *same = v;
    CHECK_EQ_INT(hm_spill_reserve(s, (void **)&v, &cap, n, n, sizeof *v), 0);
    CHECK(v == same);
    hm_spill_free(s);
}

int main(void)
{
    const char *dir = getenv("HM_TMPDIR") ? getenv("HM_TMPDIR") : "/tmp";

    test_alloc_and_release(dir);
    test_arrays(dir);
    CHECK_EQ_INT(spill_files_in(dir), 0);
    CHECK(hm_spill_new("/nonexistent/dir") == NULL);
    hm_spill_free(NULL);
    hm_spill_release(NULL);
    return hm_test_done();
}

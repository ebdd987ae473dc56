/* The spill arena (spill.h): one shared mapping of a large address range
 * over a file grown in steps; pages past the file's end are never touched
 * because the file is grown before the bytes are handed out. */
#include "spill.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* Address space reserved (not memory): enough for the view of any file
 * htamerge writes; past it the caller falls back to ordinary memory. */
#define SPILL_RESERVE ((size_t)64 << 30)
#define SPILL_GROW ((size_t)64 << 20)

struct hm_spill {
    int fd;
    char *base;
    size_t used;       /* bytes handed out */
    size_t size;       /* file size */
    size_t touched;    /* since the last release */
    size_t resident;   /* the budget: HM_SPILL_RESIDENT, or the test hook's */
};

struct hm_spill *hm_spill_new(const char *dir)
{
    struct hm_spill *s = calloc(1, sizeof *s);
    const char *kb = getenv("HTAMERGE_SPILL_RESIDENT_KB");
    char path[4096];

    if (!s)
        return NULL;
    snprintf(path, sizeof path, "%s/.htamerge-spill-XXXXXX", dir && *dir ? dir : ".");
    s->fd = mkstemp(path);
    if (s->fd < 0) {
        free(s);
        return NULL;
    }
    unlink(path);
    /* Test hook: a smaller budget shows a stage that forgets to tell the
     * arena what it read on a small run (tests/cli/test_ingest_memory.sh). */
    s->resident = kb ? (size_t)strtoull(kb, NULL, 10) << 10 : 0;
    s->resident = s->resident ? s->resident : HM_SPILL_RESIDENT;
    s->base = mmap(NULL, SPILL_RESERVE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, s->fd, 0);
    if (s->base == MAP_FAILED) {
        close(s->fd);
        free(s);
        return NULL;
    }
    return s;
}

void hm_spill_free(struct hm_spill *s)
{
    if (!s)
        return;
    munmap(s->base, SPILL_RESERVE);
    close(s->fd);
    free(s);
}

void *hm_spill_alloc(struct hm_spill *s, size_t bytes)
{
    size_t at = (s->used + 15) & ~(size_t)15, end;
    void *p;

    if (__builtin_add_overflow(at, bytes, &end) || end > SPILL_RESERVE)
        return NULL;
    if (end > s->size) {
        size_t want = (end + SPILL_GROW - 1) / SPILL_GROW * SPILL_GROW;
        if (want > SPILL_RESERVE)
            want = SPILL_RESERVE;
        /* posix_fallocate: a full disk says so here, not as SIGBUS later. */
        if (posix_fallocate(s->fd, (off_t)s->size, (off_t)(want - s->size)) != 0)
            return NULL;
        s->size = want;
    }
    p = s->base + at;   /* fresh file blocks read as zeros */
    s->used = end;
    hm_spill_touched(s, bytes);   /* releasing never moves or loses data */
    return p;
}

int hm_spill_reserve(struct hm_spill *s, void **data, size_t *cap, size_t n, size_t need,
                     size_t elem)
{
    size_t ncap = *cap ? *cap : 4096 / elem + 1;
    void *p;

    if (need <= *cap)
        return 0;
    while (ncap < need) {
        if (ncap > SPILL_RESERVE / elem / 2)
            return -1;
        ncap *= 2;
    }
    if (!(p = hm_spill_alloc(s, ncap * elem)))
        return -1;
    /* In slices, each counted twice (read and written): a large array's
     * copy would otherwise make both copies resident at once. */
    for (size_t at = 0, len = n * elem, step = HM_SPILL_RESIDENT / 4; at < len; at += step) {
        size_t k = len - at < step ? len - at : step;
        memcpy((char *)p + at, (const char *)*data + at, k);
        hm_spill_touched(s, 2 * k);
    }
    *data = p;
    *cap = ncap;
    return 0;
}

void hm_spill_release(struct hm_spill *s)
{
    if (s && s->used)
        madvise(s->base, (s->used + 4095) & ~(size_t)4095, MADV_DONTNEED);
    if (s)
        s->touched = 0;
}

void hm_spill_touched(struct hm_spill *s, size_t bytes)
{
    if (!s)
        return;
    s->touched += bytes;
    if (s->touched >= s->resident)
        hm_spill_release(s);
}

size_t hm_spill_used(const struct hm_spill *s)
{
    return s ? s->used : 0;
}

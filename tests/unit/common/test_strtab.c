/* Tests for common/strtab.c: ids, deduplication, pointer stability while
 * the table grows, byte strings that differ only after a NUL, and strings
 * appended without dedup mixed with interned ones. */
#include "test.h"

#include "common/strtab.h"

static void test_basics(void)
{
    struct hm_strtab *t = hm_strtab_new();
    size_t len = 99;

    CHECK(t != NULL);
    CHECK_EQ_INT(hm_strtab_count(t), 1);
    CHECK_STR(hm_strtab_get(t, 0, &len), "");
    CHECK_EQ_INT(len, 0);
    CHECK_EQ_INT(hm_strtab_intern(t, "", 0), 0);
    CHECK_EQ_INT(hm_strtab_intern(t, "ignored", 0), 0);
    CHECK_EQ_INT(hm_strtab_intern_cstr(t, ""), 0);
    CHECK_EQ_INT(hm_strtab_intern_cstr(t, NULL), 0);
    CHECK_EQ_INT(hm_strtab_count(t), 1);

    CHECK_EQ_INT(hm_strtab_intern_cstr(t, "aten::mm"), 1);
    CHECK_EQ_INT(hm_strtab_intern_cstr(t, "aten::add"), 2);
    CHECK_EQ_INT(hm_strtab_intern_cstr(t, "aten::mm"), 1);
    CHECK_EQ_INT(hm_strtab_intern(t, "aten::mmXYZ", 8), 1); /* only len bytes count */
    CHECK_EQ_INT(hm_strtab_count(t), 3);
    CHECK_STR(hm_strtab_get(t, 2, &len), "aten::add");
    CHECK_EQ_INT(len, 9);
    CHECK_STR(hm_strtab_get(t, 2, NULL), "aten::add");

    /* Unknown ids give "" and length 0. */
    len = 99;
    CHECK_STR(hm_strtab_get(t, 3, &len), "");
    CHECK_EQ_INT(len, 0);
    CHECK_STR(hm_strtab_get(t, UINT32_MAX, NULL), "");
    CHECK_STR(hm_strtab_get(NULL, 1, NULL), "");
    CHECK(hm_strtab_bytes(t) >= 19);

    hm_strtab_free(t);
    hm_strtab_free(NULL);
}

/* Strings that share a prefix and differ only at or after a NUL byte must
 * be distinct, and come back with their exact bytes and length. */
static void test_binary(void)
{
    static const struct { const char *s; size_t len; } v[] = {
        { "ab", 2 }, { "ab\0", 3 }, { "ab\0c", 4 }, { "ab\0d", 4 }, { "\0", 1 },
        { "\0\0", 2 }, { "ab\xff", 3 }, { "ab\xfe", 3 }, { "a", 1 },
    };
    const size_t n = sizeof v / sizeof v[0];
    struct hm_strtab *t = hm_strtab_new();
    hm_strid ids[sizeof v / sizeof v[0]];

    for (size_t i = 0; i < n; i++) {
        ids[i] = hm_strtab_intern(t, v[i].s, v[i].len);
        CHECK_EQ_INT(ids[i], i + 1);
    }
    for (size_t i = 0; i < n; i++) {
        size_t len;
        const char *s = hm_strtab_get(t, ids[i], &len);
        CHECK_EQ_INT(len, v[i].len);
        CHECK(memcmp(s, v[i].s, len) == 0);
        CHECK_EQ_INT(s[len], '\0'); /* always NUL-terminated */
        CHECK_EQ_INT(hm_strtab_intern(t, v[i].s, v[i].len), ids[i]);
    }
    CHECK_EQ_INT(hm_strtab_count(t), n + 1);
    hm_strtab_free(t);
}

static const char *buf_of(uint32_t i)
{
    static char b[32];
    snprintf(b, sizeof b, "big%u", i);
    return b;
}

/* A 70000-byte string that starts with "big<i>". */
static void fill_big(char *big, uint32_t i)
{
    memset(big, 'x', 70000);
    memcpy(big, buf_of(i), strlen(buf_of(i)));
}

/* 100k strings: ids are dense, pointers handed out early stay valid and
 * unchanged, and every string is found again. Large strings (bigger than a
 * storage chunk) are mixed in. */
static void test_growth(void)
{
    enum { N = 100000 };
    struct hm_strtab *t = hm_strtab_new();
    const char **ptrs = calloc(N + 1, sizeof *ptrs);
    char *big = malloc(70000);
    char buf[64];
    int bad = 0;

    for (uint32_t i = 1; i <= N; i++) {
        hm_strid id;
        if (i % 10000 == 0) {
            fill_big(big, i);
            id = hm_strtab_intern(t, big, 70000);
        } else {
            int len = snprintf(buf, sizeof buf, "kernel_%u_%s", i, i % 3 ? "sm80" : "");
            id = hm_strtab_intern(t, buf, (size_t)len);
        }
        if (id != i)
            bad++;
        ptrs[i] = hm_strtab_get(t, id, NULL);
    }
    CHECK_EQ_INT(bad, 0);
    CHECK_EQ_INT(hm_strtab_count(t), N + 1);
    for (uint32_t i = 1; i <= N; i++) {
        size_t len;
        const char *s = hm_strtab_get(t, i, &len);
        if (s != ptrs[i])
            bad++;
        if (i % 10000 == 0) {
            fill_big(big, i);
            if (len != 70000 || memcmp(s, big, 70000) != 0 || hm_strtab_intern(t, big, 70000) != i)
                bad++;
        } else {
            int n = snprintf(buf, sizeof buf, "kernel_%u_%s", i, i % 3 ? "sm80" : "");
            if (len != (size_t)n || strcmp(s, buf) != 0 || hm_strtab_intern(t, buf, len) != i)
                bad++;
        }
    }
    CHECK_EQ_INT(bad, 0);
    CHECK_EQ_INT(hm_strtab_count(t), N + 1);
    CHECK(hm_strtab_bytes(t) > (size_t)10 * 70000);
    free(big);
    free(ptrs);
    hm_strtab_free(t);
}

/* Appended strings get fresh ids, stay out of the hash (interning the same
 * text finds or makes an interned id, never an appended one), and mixing
 * many appends with interns keeps every interned string findable while the
 * hash grows. */
static void test_append(void)
{
    enum { N = 50000 };
    struct hm_strtab *t = hm_strtab_new();
    hm_strid *interned = calloc(N, sizeof *interned), *appended = calloc(N, sizeof *appended);
    char buf[64];
    size_t len;
    int bad = 0;

    CHECK_EQ_INT(hm_strtab_append(t, "", 0), 0);
    CHECK_EQ_INT(hm_strtab_append(t, "x", 0), 0);
    CHECK_EQ_INT(hm_strtab_append(t, "{\"a\":1}", 7), 1);
    CHECK_EQ_INT(hm_strtab_append(t, "{\"a\":1}", 7), 2);   /* a repeat: an id of its own */
    CHECK_EQ_INT(hm_strtab_intern(t, "{\"a\":1}", 7), 3);   /* not found: appended ids are not hashed */
    CHECK_EQ_INT(hm_strtab_intern(t, "{\"a\":1}", 7), 3);
    CHECK_EQ_INT(hm_strtab_append(t, "{\"a\":1}", 7), 4);
    CHECK_EQ_INT(hm_strtab_intern(t, "{\"a\":1}", 7), 3);
    CHECK_STR(hm_strtab_get(t, 2, &len), "{\"a\":1}");
    CHECK_EQ_INT(len, 7);
    CHECK_EQ_INT(hm_strtab_count(t), 5);

    for (uint32_t i = 0; i < N; i++) {
        int n = snprintf(buf, sizeof buf, "name_%u", i % 1000);
        interned[i] = hm_strtab_intern(t, buf, (size_t)n);
        n = snprintf(buf, sizeof buf, "{\"External id\":%u}", i);
        appended[i] = hm_strtab_append(t, buf, (size_t)n);
        if (appended[i] != hm_strtab_count(t) - 1)
            bad++;
    }
    CHECK_EQ_INT(bad, 0);
    CHECK_EQ_INT(hm_strtab_count(t), 5 + 1000 + N);
    for (uint32_t i = 0; i < N; i++) {
        int n = snprintf(buf, sizeof buf, "name_%u", i % 1000);
        if (hm_strtab_intern(t, buf, (size_t)n) != interned[i] || interned[i] != interned[i % 1000])
            bad++;
        n = snprintf(buf, sizeof buf, "{\"External id\":%u}", i);
        const char *s = hm_strtab_get(t, appended[i], &len);
        if (len != (size_t)n || strcmp(s, buf) != 0)
            bad++;
    }
    CHECK_EQ_INT(bad, 0);
    CHECK_EQ_INT(hm_strtab_count(t), 5 + 1000 + N);
    free(interned);
    free(appended);
    hm_strtab_free(t);
}

/* Finding never adds, finds interned text only, and empty is 0. */
static void test_find(void)
{
    struct hm_strtab *t = hm_strtab_new();
    hm_strid a = hm_strtab_intern(t, "allreduce", 9);

    hm_strtab_append(t, "appended", 8);
    CHECK_EQ_INT(hm_strtab_find(t, "allreduce", 9), a);
    CHECK_EQ_INT(hm_strtab_find(t, "allreduc", 8), 0);
    CHECK_EQ_INT(hm_strtab_find(t, "appended", 8), 0);
    CHECK_EQ_INT(hm_strtab_find(t, "", 0), 0);
    CHECK_EQ_INT(hm_strtab_count(t), 3);
    for (int i = 0; i < 5000; i++) {   /* through the table's growth */
        char buf[32];
        int n = snprintf(buf, sizeof buf, "name_%d", i);
        hm_strtab_intern(t, buf, (size_t)n);
    }
    CHECK_EQ_INT(hm_strtab_find(t, "allreduce", 9), a);
    CHECK_EQ_INT(hm_strtab_find(t, "name_4999", 9), hm_strtab_count(t) - 1);
    hm_strtab_free(t);
}

int main(void)
{
    test_find();
    test_basics();
    test_binary();
    test_growth();
    test_append();
    return hm_test_done();
}

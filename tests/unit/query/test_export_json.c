/* query/export_json.c: exact microsecond numbers, JSON string escaping of
 * every byte value, and the stored-args copier on good and bad input
 * (truncated, trailing junk, bad escapes and numbers, deep nesting). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "query/export_json.h"
#include "test.h"

/* The buffer as a NUL-terminated string (static, overwritten each call). */
static const char *text(struct qry_buf *b)
{
    static char out[65536];
    size_t n = b->n < sizeof out - 1 ? b->n : sizeof out - 1;
    memcpy(out, b->p, n);
    out[n] = '\0';
    return out;
}

static void test_numbers(void)
{
    struct qry_buf b = {0};
    static const struct {
        int64_t ns;
        const char *us;
    } cases[] = {{0, "0.000"}, {1, "0.001"}, {999, "0.999"}, {1000, "1.000"}, {1234567, "1234.567"},
                 {-5, "-0.005"}, {-1234567, "-1234.567"}, {1795955871693166123LL, "1795955871693166.123"},
                 {INT64_MAX, "9223372036854775.807"}, {INT64_MIN, "-9223372036854775.808"}};

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        b.n = 0;
        qry_json_us(&b, cases[i].ns);
        CHECK_STR(text(&b), cases[i].us);
    }
    b.n = 0;
    qry_json_i64(&b, INT64_MIN);
    qry_buf_puts(&b, " ");
    qry_json_i64(&b, 0);
    qry_buf_puts(&b, " ");
    qry_json_i64(&b, 42);
    CHECK_STR(text(&b), "-9223372036854775808 0 42");
    free(b.p);
}

static void test_strings(void)
{
    struct qry_buf b = {0};
    char all[256];
    cJSON *doc;

    for (int i = 0; i < 256; i++)
        all[i] = (char)i;
    qry_json_str(&b, all, sizeof all);
    /* Every byte: parses, no raw control character, 0x80..0xFF (not valid
     * UTF-8 alone) each became U+FFFD. */
    doc = cJSON_ParseWithLength(b.p, b.n);
    CHECK(doc && cJSON_IsString(doc));
    for (size_t i = 0; i < b.n; i++)
        CHECK((unsigned char)b.p[i] >= 0x20);
    CHECK_CONTAINS(text(&b), "\\u0000\\u0001");
    CHECK_CONTAINS(text(&b), "\\u0008\\t\\n\\u000b\\u000c\\r");
    CHECK_CONTAINS(text(&b), " !\\\"#");
    CHECK_CONTAINS(text(&b), "[\\\\]");
    CHECK_CONTAINS(text(&b), "~\x7f\\ufffd\\ufffd");
    cJSON_Delete(doc);

    /* Valid UTF-8 (2, 3 and 4 bytes) is kept; overlong, surrogate, too
     * large and truncated sequences are not. */
    b.n = 0;
    qry_json_cstr(&b, "\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xc0\xaf \xed\xa0\x80 \xf4\x90\x80\x80 \xe2\x82");
    CHECK_STR(text(&b), "\"\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \\ufffd\\ufffd \\ufffd\\ufffd\\ufffd "
                        "\\ufffd\\ufffd\\ufffd\\ufffd \\ufffd\\ufffd\"");
    b.n = 0;
    qry_json_cstr(&b, NULL);
    CHECK_STR(text(&b), "\"\"");
    free(b.p);
}

/* Copies in (with written keys "rank", "correlation") and returns the
 * object text, or NULL when the copier refused it. */
static const char *copy(const char *in)
{
    static const char *const written[] = {"rank", "correlation", NULL};
    static char out[4096];
    struct qry_buf b = {0}, dec = {0};
    bool ok;

    qry_buf_puts(&b, "{\"rank\":0");
    ok = qry_json_copy_members(in, strlen(in), written, &b, &dec);
    qry_buf_puts(&b, "}");
    snprintf(out, sizeof out, "%.*s", (int)b.n, b.p);
    free(b.p);
    free(dec.p);
    return ok ? out : NULL;
}

static void test_copy_good(void)
{
    CHECK_STR(copy("{}"), "{\"rank\":0}");
    CHECK_STR(copy(" { } \n"), "{\"rank\":0}");
    CHECK_STR(copy("{\"a\":1,\"b\":[1,-2.5e+3,0.0,1E2,true,false,null],\"c\":{\"d\":{}}}"),
              "{\"rank\":0,\"a\":1,\"b\":[1,-2.5e+3,0.0,1E2,true,false,null],\"c\":{\"d\":{}}}");
    /* Keys the caller wrote are dropped, wherever they stand. */
    CHECK_STR(copy("{\"correlation\":5,\"x\":1,\"rank\":{\"n\":[1]}}"), "{\"rank\":0,\"x\":1}");
    /* Large integers are copied digit for digit (no double rounding). */
    CHECK_STR(copy("{\"id\":12345678901234567890}"), "{\"rank\":0,\"id\":12345678901234567890}");
    /* Escapes are decoded and written again: surrogate pairs, \/ and \u0000. */
    CHECK_STR(copy("{\"s\":\"a\\/b\\u00e9\\ud83d\\ude00\\u0000\\\"\"}"),
              "{\"rank\":0,\"s\":\"a/b\xc3\xa9\xf0\x9f\x98\x80\\u0000\\\"\"}");
    CHECK_STR(copy("{\"lone\":\"\\ud800x\"}"), "{\"rank\":0,\"lone\":\"\xef\xbf\xbdx\"}");
    CHECK_STR(copy("{\"k\\n\":\"\xff\"}"), "{\"rank\":0,\"k\\n\":\"\\ufffd\"}");
}

static void test_copy_bad(void)
{
    static const char *const bad[] = {
        "", "[1]", "\"s\"", "{", "{\"a\"", "{\"a\":", "{\"a\":1", "{\"a\":1,}", "{,}", "{\"a\" 1}",
        "{\"a\":1}}", "{\"a\":1} x", "{a:1}", "{\"a\":01}", "{\"a\":1.}", "{\"a\":-}", "{\"a\":1e}",
        "{\"a\":.5}", "{\"a\":tru}", "{\"a\":nul}", "{\"a\":\"x}", "{\"a\":\"\\x\"}", "{\"a\":\"\\u12g4\"}",
        "{\"a\":\"\\u12\"}", "{\"a\":\"tab\there\"}", "{\"a\":[1,]}", "{\"a\":[1 2]}", "{\"a\":NaN}",
        "{\"a\":Infinity}", "{\"a\":'x'}"};
    char deep[400];
    int n = 0;

    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *r = copy(bad[i]);
        if (r)
            fprintf(stderr, "accepted bad args %s -> %s\n", bad[i], r);
        CHECK(r == NULL);
    }
    /* 64 levels are copied, 100 are refused rather than recursed into. */
    n = snprintf(deep, sizeof deep, "{\"a\":");
    for (int i = 0; i < 63; i++)
        deep[n++] = '[';
    for (int i = 0; i < 63; i++)
        deep[n++] = ']';
    snprintf(deep + n, sizeof deep - (size_t)n, "}");
    CHECK(copy(deep) != NULL);
    n = snprintf(deep, sizeof deep, "{\"a\":");
    for (int i = 0; i < 100; i++)
        deep[n++] = '[';
    for (int i = 0; i < 100; i++)
        deep[n++] = ']';
    snprintf(deep + n, sizeof deep - (size_t)n, "}");
    CHECK(copy(deep) == NULL);
}

int main(void)
{
    test_numbers();
    test_strings();
    test_copy_good();
    test_copy_bad();
    return hm_test_done();
}

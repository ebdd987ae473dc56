/* Tests of the server's parameter and address parsing (query/params.c):
 * every malformed value a client could send must be refused, so the
 * server answers 400 instead of guessing. */
#include "test.h"

#include "query/query_int.h"

static void test_i64(void)
{
    int64_t v = 7;

    CHECK_EQ_INT(qry_param_i64("42", 0, 100, &v), 0);
    CHECK_EQ_INT(v, 42);
    CHECK_EQ_INT(qry_param_i64("-5", -10, 10, &v), 0);
    CHECK_EQ_INT(v, -5);
    CHECK_EQ_INT(qry_param_i64("9223372036854775807", 0, INT64_MAX, &v), 0);
    v = 7;
    CHECK_EQ_INT(qry_param_i64("", 0, 100, &v), -1);
    CHECK_EQ_INT(qry_param_i64(NULL, 0, 100, &v), -1);
    CHECK_EQ_INT(qry_param_i64("12abc", 0, 100, &v), -1);
    CHECK_EQ_INT(qry_param_i64(" 12", 0, 100, &v), -1);
    CHECK_EQ_INT(qry_param_i64("+12", 0, 100, &v), -1);
    CHECK_EQ_INT(qry_param_i64("101", 0, 100, &v), -1);
    CHECK_EQ_INT(qry_param_i64("99999999999999999999", 0, INT64_MAX, &v), -1);
    CHECK_EQ_INT(qry_param_i64("1e3", 0, 10000, &v), -1);
    CHECK_EQ_INT(v, 7);   /* untouched on failure */
}

static void test_bool(void)
{
    bool b = false;

    CHECK_EQ_INT(qry_param_bool("1", &b), 0);
    CHECK(b);
    CHECK_EQ_INT(qry_param_bool("false", &b), 0);
    CHECK(!b);
    CHECK_EQ_INT(qry_param_bool("YES", &b), 0);
    CHECK(b);
    CHECK_EQ_INT(qry_param_bool("2", &b), -1);
    CHECK_EQ_INT(qry_param_bool("", &b), -1);
}

static void test_ranks(void)
{
    int r[8];

    CHECK_EQ_INT(qry_param_ranks("0,2-4", r, 8), 4);
    CHECK_EQ_INT(r[0], 0);
    CHECK_EQ_INT(r[3], 4);
    CHECK_EQ_INT(qry_param_ranks("7", r, 8), 1);
    CHECK_EQ_INT(qry_param_ranks("0-7", r, 8), 8);
    CHECK_EQ_INT(qry_param_ranks("0-8", r, 8), -1);   /* longer than max */
    CHECK_EQ_INT(qry_param_ranks("0-2000000000", r, 8), -1);
    CHECK_EQ_INT(qry_param_ranks("", r, 8), -1);
    CHECK_EQ_INT(qry_param_ranks("1,", r, 8), -1);
    CHECK_EQ_INT(qry_param_ranks(",1", r, 8), -1);
    CHECK_EQ_INT(qry_param_ranks("3-1", r, 8), -1);
    CHECK_EQ_INT(qry_param_ranks("-1", r, 8), -1);
    CHECK_EQ_INT(qry_param_ranks("1;2", r, 8), -1);
    CHECK_EQ_INT(qry_param_ranks("a", r, 8), -1);
}

static bool safe(const char *p) { return qry_path_is_safe(p, strlen(p)); }

static void test_paths(void)
{
    CHECK(safe("/"));
    CHECK(safe("/index.html"));
    CHECK(safe("/js/app.js"));
    CHECK(safe("/a..b/c"));   /* dots inside a name are fine */
    CHECK(!safe("/.."));
    CHECK(!safe("/../etc/passwd"));
    CHECK(!safe("/js/../../etc/passwd"));
    CHECK(!safe("/js/.."));
    CHECK(!safe("/./index.html"));
    CHECK(!safe("/js\\..\\x"));
    CHECK(!safe("//etc/passwd"));
    CHECK(!safe("index.html"));
    CHECK(!safe(""));
    CHECK(!qry_path_is_safe("/a\0/../b", 8));   /* %00 decoded into the middle */
}

static void test_listen(void)
{
    char host[64];
    int port = 8080;

    CHECK_EQ_INT(qry_listen_parse("127.0.0.1:9000", host, sizeof host, &port), 0);
    CHECK_STR(host, "127.0.0.1");
    CHECK_EQ_INT(port, 9000);
    port = 8080;
    CHECK_EQ_INT(qry_listen_parse("localhost", host, sizeof host, &port), 0);
    CHECK_STR(host, "localhost");
    CHECK_EQ_INT(port, 8080);
    CHECK_EQ_INT(qry_listen_parse(":0", host, sizeof host, &port), 0);
    CHECK_STR(host, "127.0.0.1");
    CHECK_EQ_INT(port, 0);
    CHECK_EQ_INT(qry_listen_parse("[::1]:81", host, sizeof host, &port), 0);
    CHECK_STR(host, "::1");
    CHECK_EQ_INT(port, 81);
    CHECK_EQ_INT(qry_listen_parse("::1", host, sizeof host, &port), -1);
    CHECK_EQ_INT(qry_listen_parse("1.2.3.4:70000", host, sizeof host, &port), -1);
    CHECK_EQ_INT(qry_listen_parse("1.2.3.4:", host, sizeof host, &port), -1);
    CHECK_EQ_INT(qry_listen_parse("1.2.3.4:8x", host, sizeof host, &port), -1);
    CHECK_EQ_INT(qry_listen_parse("[::1", host, sizeof host, &port), -1);
    CHECK_EQ_INT(qry_listen_parse("", host, sizeof host, &port), -1);
    CHECK_EQ_INT(qry_listen_parse("a-very-long-host-name-that-does-not-fit-in-the-buffer-we-gave.example:1", host,
                                  sizeof host, &port), -1);
}

static void test_loopback_and_token(void)
{
    CHECK(qry_host_is_loopback("127.0.0.1"));
    CHECK(qry_host_is_loopback("127.1.2.3"));
    CHECK(qry_host_is_loopback("::1"));
    CHECK(qry_host_is_loopback("LOCALHOST"));
    CHECK(!qry_host_is_loopback("0.0.0.0"));
    CHECK(!qry_host_is_loopback("::"));
    CHECK(!qry_host_is_loopback("10.0.0.1"));
    CHECK(!qry_host_is_loopback("example.com"));
    CHECK(!qry_host_is_loopback("127.0.0.1.example.com"));
    CHECK(qry_token_equal("s3cret", "s3cret"));
    CHECK(!qry_token_equal("s3cre", "s3cret"));
    CHECK(!qry_token_equal("s3crets", "s3cret"));
    CHECK(!qry_token_equal("", "s3cret"));
    CHECK(!qry_token_equal(NULL, "s3cret"));
}

static void test_buf(void)
{
    struct qry_buf b = {0};

    for (int i = 0; i < 5000; i++)
        qry_buf_printf(&b, "%d,", i % 10);
    qry_buf_puts(&b, "end");
    CHECK(!b.oom);
    CHECK_EQ_INT(b.n, 10003);
    CHECK(!strcmp(b.p + b.n - 5, "9,end"));
    qry_buf_free(&b);
    CHECK(b.p == NULL);
}

int main(void)
{
    test_i64();
    test_bool();
    test_ranks();
    test_paths();
    test_listen();
    test_loopback_and_token();
    test_buf();
    return hm_test_done();
}

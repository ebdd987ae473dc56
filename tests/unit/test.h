/* A minimal test harness: CHECK macros that count failures and report the
 * line, and helpers to find fixtures. A test file's main returns
 * hm_test_done(). */
#ifndef HM_TEST_H
#define HM_TEST_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int hm_test_failures;
static int hm_test_checks;

#define CHECK(cond) do { hm_test_checks++; if (!(cond)) { hm_test_failures++; \
    fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); } } while (0)

#define CHECK_EQ_INT(a, b) do { long long _a = (long long)(a), _b = (long long)(b); hm_test_checks++; \
    if (_a != _b) { hm_test_failures++; fprintf(stderr, "%s:%d: %s == %lld, expected %s == %lld\n", \
    __FILE__, __LINE__, #a, _a, #b, _b); } } while (0)

#define CHECK_NEAR(a, b, tol) do { double _a = (double)(a), _b = (double)(b); hm_test_checks++; \
    if (!(_a - _b <= (tol) && _b - _a <= (tol))) { hm_test_failures++; \
    fprintf(stderr, "%s:%d: %s == %.6f, expected %.6f (tol %g)\n", __FILE__, __LINE__, #a, _a, _b, (double)(tol)); } } while (0)

#define CHECK_STR(a, b) do { const char *_a = (a), *_b = (b); hm_test_checks++; \
    if (!_a || !_b || strcmp(_a, _b) != 0) { hm_test_failures++; \
    fprintf(stderr, "%s:%d: %s == \"%s\", expected \"%s\"\n", __FILE__, __LINE__, #a, _a ? _a : "(null)", _b ? _b : "(null)"); } } while (0)

#define CHECK_CONTAINS(hay, needle) do { const char *_h = (hay), *_n = (needle); hm_test_checks++; \
    if (!_h || !strstr(_h, _n)) { hm_test_failures++; \
    fprintf(stderr, "%s:%d: \"%s\" does not contain \"%s\"\n", __FILE__, __LINE__, _h ? _h : "(null)", _n); } } while (0)

/* Path of a file under tests/fixtures, in a static buffer. */
static inline const char *hm_fixture(const char *rel)
{
    static char buf[4096];
    const char *src = getenv("HM_SOURCE_DIR");
    snprintf(buf, sizeof buf, "%s/tests/fixtures/%s", src ? src : ".", rel);
    return buf;
}

/* Path of a scratch file in the test build folder, in a static buffer. */
static inline const char *hm_tmpfile(const char *name)
{
    static char buf[4096];
    const char *dir = getenv("HM_TMPDIR");
    snprintf(buf, sizeof buf, "%s/%s", dir ? dir : "/tmp", name);
    return buf;
}

static inline int hm_test_done(void)
{
    fprintf(stderr, "%d checks, %d failures\n", hm_test_checks, hm_test_failures);
    return hm_test_failures ? 1 : 0;
}

#endif

/* Error records: formatting and context chaining for struct hm_err. */
#include "err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void hm_err_clear(struct hm_err *err)
{
    if (!err)
        return;
    err->code = HM_OK;
    err->file[0] = '\0';
    err->offset = -1;
    err->rank = -1;
    err->msg[0] = '\0';
}

int hm_err_set(struct hm_err *err, int code, const char *file, int64_t offset,
               const char *fmt, ...)
{
    va_list ap;

    if (!err)
        return code;
    err->code = code;
    snprintf(err->file, sizeof err->file, "%s", file ? file : "");
    err->offset = offset;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    return code;
}

void hm_err_prefix(struct hm_err *err, const char *fmt, ...)
{
    char line[sizeof err->msg * 2];
    va_list ap;
    int n;

    if (!err)
        return;
    va_start(ap, fmt);
    n = vsnprintf(line, sizeof err->msg, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n >= sizeof err->msg)
        n = (int)sizeof err->msg - 1;
    memcpy(line + n, ": ", 2);
    memcpy(line + n + 2, err->msg, sizeof err->msg);
    line[sizeof err->msg - 1] = '\0';
    memcpy(err->msg, line, sizeof err->msg);
}

const char *hm_err_line(const struct hm_err *err, char *buf, unsigned len)
{
    int n = 0;

    if (err->file[0])
        n = snprintf(buf, len, "%s: ", err->file);
    if (n >= 0 && (unsigned)n < len && err->offset >= 0)
        n += snprintf(buf + n, len - n, "byte %lld: ", (long long)err->offset);
    if (n >= 0 && (unsigned)n < len && err->rank >= 0)
        n += snprintf(buf + n, len - n, "rank %d: ", err->rank);
    if (n >= 0 && (unsigned)n < len)
        snprintf(buf + n, len - n, "%s", err->msg[0] ? err->msg : hm_err_name(err->code));
    return buf;
}

const char *hm_err_name(int code)
{
    switch (code) {
    case HM_OK: return "ok";
    case HM_ENOMEM: return "out of memory";
    case HM_EIO: return "I/O error";
    case HM_EFORMAT: return "format error";
    case HM_EVERSION: return "unsupported version";
    case HM_ESQL: return "SQLite error";
    case HM_EMPI: return "MPI error";
    case HM_EINVAL: return "invalid argument";
    case HM_EDUP: return "duplicate";
    case HM_EEMPTY: return "no input";
    default: return "unknown error";
    }
}

void hm_say(const char *fmt, ...)
{
    va_list ap;

    fputs("htamerge: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

/* Error codes and the error record that fallible calls fill in.
 * A call returns 0 or a negative HM_E* code; the details (file, byte offset,
 * rank, message) live in a caller-supplied struct hm_err, never in a global. */
#ifndef HM_ERR_H
#define HM_ERR_H

#include <stdint.h>

enum {
    HM_OK = 0,
    HM_ENOMEM = -1,   /* allocation failed */
    HM_EIO = -2,      /* open/read/write failed */
    HM_EFORMAT = -3,  /* input is malformed */
    HM_EVERSION = -4, /* input has a version we do not read */
    HM_ESQL = -5,     /* SQLite refused */
    HM_EMPI = -6,     /* MPI failed */
    HM_EINVAL = -7,   /* bad argument or option */
    HM_EDUP = -8,     /* two inputs claim the same identity (e.g. rank) */
    HM_EEMPTY = -9,   /* nothing to do: no input found */
};

struct hm_err {
    int code;          /* HM_OK or a negative HM_E* code */
    char file[512];    /* input file the error is about, "" if none */
    int64_t offset;    /* byte offset in file, -1 if unknown */
    int rank;          /* rank the error is about, -1 if unknown */
    char msg[512];     /* one line, no trailing newline */
};

/* Resets err to "no error". */
void hm_err_clear(struct hm_err *err);

/* Fills err and returns code, so callers can write `return hm_err_set(...)`.
 * file may be NULL; offset -1 means unknown. */
int hm_err_set(struct hm_err *err, int code, const char *file, int64_t offset,
               const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* Prepends context ("while X: ") to an existing message. */
void hm_err_prefix(struct hm_err *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Formats err as one line "FILE: offset N: MSG" into buf. */
const char *hm_err_line(const struct hm_err *err, char *buf, unsigned len);

/* Prints one line "htamerge: MSG" on stderr: how every command and the
 * main job report what went wrong to the user. */
void hm_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A short name for a code, e.g. "format error". */
const char *hm_err_name(int code);

#endif

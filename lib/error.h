/* SPDX-License-Identifier: MIT */
/* One error/log helper for the whole library: lib/ never prints; it records the
 * detail of the last failure here and returns -errno (or NULL with errno set).
 * cmd/ prints it as "cprof VERB: <detail>". */
#ifndef CP_ERROR_H
#define CP_ERROR_H

#include <stdarg.h>

/* the longest message kept, with its NUL; longer ones are cut */
#define CP_ERRMSG_MAX 1024

/* Record a one-line message for the last failure of this thread.  Returns -err
 * so callers can write `return cp_error(EINVAL, "bad %s", x);`. */
int cp_error(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prefix the current message: "ctx: old message". Returns -err. */
int cp_error_ctx(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The last message; when none was recorded, strerror(err). */
const char *cp_errmsg(int err);
void cp_error_clear(void);

#endif

/* SPDX-License-Identifier: MIT */
/* One error/log helper for the whole library: lib/ never prints; it records the
 * detail of a failure here and returns -errno (or NULL with errno set).
 * cmd/ prints it as "cprof VERB: <detail>".
 *
 * The contract (a message is shown only for the error it belongs to):
 * - Each thread keeps one record: the code (a positive errno) and the message
 *   of the last cp_error()/cp_error_ctx() of that thread.
 * - cp_errmsg(err) returns that message only when it was recorded for the same
 *   code as err (sign ignored); for any other code, or with no record, it
 *   returns strerror(err).  A message for EINVAL is never shown for an EIO.
 * - A thread starts with no record.  A record is superseded, and forgotten, by
 *   cp_error_clear().  It is called (a) at the start of every top-level
 *   operation a thread runs one after another: each HTTP request
 *   (lib/http/server.c), the store call after a round of scrapes
 *   (lib/scrape.c), each item of a loop that reports a failure and goes on;
 *   and (b) by code that handles a failure itself and goes on (a fallback, a
 *   retry, an error ignored on purpose), so the handled failure's message
 *   cannot be shown for a later one with the same code.  (A command is one
 *   process: it starts with none.)
 * - Every lib/ function that returns -E... or NULL + errno for a reason of its
 *   own records a message with cp_error() (tests/cli/test-errors-lint.sh refuses
 *   a bare `return -E...;` in lib/ outside its allowlist).  A function that only
 *   passes on a callee's -errno keeps the callee's record (add context with
 *   cp_error_ctx()).  A failure reported with a plain errno from libc (ENOMEM
 *   from malloc) may have no record: cp_errmsg() then says strerror().
 * - cmd/ passes the code the failing call returned (or its errno), never a
 *   guessed one. */
#ifndef CP_ERROR_H
#define CP_ERROR_H

#include <stdarg.h>

/* the longest message kept, with its NUL; longer ones are cut */
#define CP_ERRMSG_MAX 1024

/* Record a one-line message for err (a positive or negative errno) as this
 * thread's last failure, replacing any earlier record.  Returns -err so callers
 * can write `return cp_error(EINVAL, "bad %s", x);`. */
int cp_error(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prefix the record for err: "ctx: old message".  When the record is for
 * another code (or there is none), the old message is strerror(err): a stale
 * message is never carried into the new one.  Returns -err. */
int cp_error_ctx(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The message recorded for err (sign ignored), else strerror(err).  The string
 * stays valid until this thread's next cp_error*() call. */
const char *cp_errmsg(int err);
/* Forget this thread's record (see the contract above for when). */
void cp_error_clear(void);
/* The code of this thread's record, 0 when there is none.  Only for a caller
 * that cleared the record just before a call which reports a failure without
 * its code (cp_store_remote_ping's "1: try later"). */
int cp_error_code(void);

#endif

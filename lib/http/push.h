/* SPDX-License-Identifier: MIT */
/* Pushing profiles to a cprof server (POST /api/v1/push), with a spool on
 * disk for when the server cannot take them: a push that cannot be
 * delivered (the server is unreachable, or answers 5xx or 429) is written
 * to the spool directory, one file per push (written to a temporary file,
 * fsync'ed, renamed: a crash leaves a whole entry or none), and later
 * pushes and cp_pusher_flush() first send the spooled entries again, oldest
 * first.  An entry leaves the spool only when the server answered 2xx (at
 * least once: a server that stored a push but whose answer was lost gets it
 * again).  The spool is bounded: to take a new entry beyond max bytes, the
 * oldest entries are dropped and counted.  4xx answers other than 429 are
 * permanent: returned, never spooled.  One process owns a spool at a time
 * (a lock file); a pusher is for one thread. */
#ifndef CP_HTTP_PUSH_H
#define CP_HTTP_PUSH_H

#include <stddef.h>
#include <stdint.h>

struct cp_pusher;

/* What cp_pusher_push returns when the push went to the spool. */
#define CP_PUSH_SPOOLED 1

/* The time a push may take (connect, send, answer). */
#define CP_PUSH_TIMEOUT_MS 30000L

/* spool_dir NULL: no spool, a push that cannot be delivered is an error.
 * The directory is created (0700) when missing.  NULL + errno: a bad URL
 * (EINVAL), a spool that cannot be created or read, or one in use by
 * another process (EBUSY). */
struct cp_pusher *cp_pusher_new(const char *url, const char *token, const char *spool_dir, size_t max_spool_bytes);
void cp_pusher_free(struct cp_pusher *p);

/* POST /api/v1/push?QUERY with body (query: "name=cpu&time=...&comm=x",
 * already URL-encoded), or, when query starts with '/', POST to that path
 * and query as they are ("/ingest?name=...": another server's push API).
 * A spooled entry keeps its target.  Spooled entries go first (unless the server failed
 * less than a back-off delay ago: then this push is spooled behind them).
 * 0: the server stored it; CP_PUSH_SPOOLED: it waits in the spool (why in
 * cp_pusher_last_error()); -errno with a message: the server refused it for
 * good (4xx), or it could be neither sent nor spooled. */
int cp_pusher_push(struct cp_pusher *p, const char *query, const void *body, size_t len);
/* The same with headers of this push's own (NULL-terminated, "Name: value",
 * at most 4: Content-Type, Content-Encoding), sent after the pusher's and
 * spooled with the entry; NULL: none (Content-Type application/octet-stream). */
int cp_pusher_push_with(struct cp_pusher *p, const char *query, const char *const *headers, const void *body,
			size_t len);

/* Extra headers sent with every push ("Name: value", at most 4; e.g.
 * X-Scope-OrgID, or an Authorization of its own when the pusher was made
 * without a token).  Copied.  0 or -ENOMEM, -E2BIG. */
int cp_pusher_set_headers(struct cp_pusher *p, const char *const *headers, size_t n);

/* Sends what is spooled, oldest first, now (no back-off), until the spool
 * is empty or the server fails.  0: the spool is empty; CP_PUSH_SPOOLED:
 * entries remain (cp_pusher_last_error() says why); -errno when the spool
 * cannot be read. */
int cp_pusher_flush(struct cp_pusher *p);
/* The same, but only once the back-off delay after a failure has passed
 * (for when there is nothing new to push): CP_PUSH_SPOOLED within it. */
int cp_pusher_retry(struct cp_pusher *p);

struct cp_pusher_stats {
	uint64_t sent;          /* pushes the server stored (first try or from the spool) */
	uint64_t spooled;       /* pushes written to the spool */
	uint64_t resent;        /* spooled pushes the server stored later */
	uint64_t dropped;       /* spooled pushes dropped to keep the bound */
	uint64_t dropped_bytes;
	uint64_t rejected;      /* spooled pushes the server refused for good (4xx): dropped */
	uint64_t corrupt;       /* unreadable spool files: dropped */
	uint64_t pending;       /* in the spool now */
	uint64_t pending_bytes;
};
void cp_pusher_stats(const struct cp_pusher *p, struct cp_pusher_stats *st);
/* Why the last delivery failed (the message of a network error, a 5xx, or
 * a rejected spooled entry), or NULL. */
const char *cp_pusher_last_error(const struct cp_pusher *p);
const char *cp_pusher_url(const struct cp_pusher *p);
const char *cp_pusher_spool_dir(const struct cp_pusher *p);

#endif

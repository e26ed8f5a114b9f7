/* SPDX-License-Identifier: MIT */
/* The store of a cprof server, read and written over its HTTP API
 * (docs/API.md), behind the same cp_store_* calls as the local store:
 * series from /api/v1/series, selections from /api/v1/profile (pprof, or
 * format=groups for group_by), totals over time from /api/v1/range, figures
 * from /api/v1/stats; appends are pushed to /api/v1/push one profile at a
 * time (gzipped pprof, the series labels as query arguments), through a
 * pusher that spools what the server cannot take (lib/http/push.h): then
 * cp_store_append returns CP_STORE_SPOOLED.  A backend of backend.h (the row
 * of http:// and https:// in backends.c); what a server does for itself
 * (retention, the size limit) is -EOPNOTSUPP here.
 *
 * Ownership: the handle owns its HTTP client and pusher (made on the first
 * append or flush); cp_store_close frees them.  Errors: -errno (NULL +
 * errno) with the reason (the URL, the server's own message) in cp_errmsg. */
#ifndef CP_STORE_REMOTE_H
#define CP_STORE_REMOTE_H

#include <stdbool.h>
#include <stddef.h>

#include "../http/push.h"
#include "store.h"

/* The time a read may take. */
#define CP_REMOTE_TIMEOUT_MS 300000L

/* url: http(s)://HOST[:PORT]; token may be NULL.  spool_dir (may be NULL:
 * then a push that cannot be delivered is an error) and spool_max are for
 * appends.  Nothing is sent yet.  NULL + errno (EINVAL: a bad URL). */
struct cp_store *cp_store_open_remote(const char *url, const char *token, const char *spool_dir, size_t spool_max);

/* How appends are pushed; set before the first append (default: cprof's own
 * /api/v1/push): the protocol api of lib/push/protocol.h's table (pyroscope:
 * Pyroscope's POST /ingest as its official clients send it), whose target
 * each profile goes to, the gzipped pprof as the body, and whose ping path
 * the ping asks (pyroscope: GET /ready).  tenant
 * goes as X-Scope-OrgID; basic_user sends the token as the password of HTTP
 * basic auth instead of as a bearer token.  Strings are copied.  0 or
 * -ENOMEM, -EINVAL (a header value with a line break). */
struct cp_remote_push {
	const char *api;           /* a push protocol's name (lib/push/protocol.h; NULL: cprof's) */
	const char *service_label; /* NULL: comm */
	const char *spy_name;      /* NULL: cprof */
	const char *tenant;        /* NULL: none */
	const char *basic_user;    /* NULL: a bearer token */
};
int cp_store_remote_set_push(struct cp_store *s, const struct cp_remote_push *o);

/* The calls below do nothing on another backend's store.  (Flushing the spool, its figures and
 * the last push's error are store.h's cp_store_flush, cp_store_pending and cp_store_push_error.)
 * Checks that the server answers and takes the token (GET /healthz): 0;
 * 1 when it does not answer (or answers 5xx, 429: try later); -errno when
 * it refuses (EACCES: the token).  The reason is in cp_errmsg(). */
int cp_store_remote_ping(struct cp_store *s);

#endif

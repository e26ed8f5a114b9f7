/* SPDX-License-Identifier: MIT */
/* The store backends, opened by URI: one row each in backends.c, named by
 * the scheme(s) it takes, as the push protocols (lib/push/protocol.h) or
 * SQLite's list of VFSes.  cp_store_open_uri picks the row by the URI's
 * scheme, so a caller never asks which backend a store is: "SCHEME://REST"
 * is a URI (the scheme matched without regard to case), anything else a path
 * of the first row's (the local store's).
 *   local   a path, or file://PATH (PATH as it is: no %-decoding, no host)
 *   remote  http://HOST[:PORT], https://HOST[:PORT] (lib/store/remote.h)
 * Adding a backend: its file here (its table of operations, backend.h), its
 * open function declared below, one row in backends.c.
 *
 * Ownership: the store returned is the caller's (cp_store_close); the URI
 * and the options are not kept (what a backend needs of them it copies).
 * Errors: NULL + errno with the message recorded: EINVAL for a URI of no
 * backend's scheme (the message lists the schemes) or a file:// without a
 * path, else the backend's own (cp_store_open's, cp_store_open_remote's). */
#ifndef CP_STORE_BACKENDS_H
#define CP_STORE_BACKENDS_H

#include <stddef.h>

#include "store.h"

struct cp_remote_push;

/* What opening takes; a backend ignores what is not its own. */
struct cp_store_open_opts {
	enum cp_store_mode mode;           /* local: READ, or WRITE (creates the store) */
	const char *token;                 /* remote: the server's token; NULL: none */
	const char *spool_dir;             /* remote: where appends wait for the server; NULL: none */
	size_t spool_max;                  /* remote: the spool's size limit (bytes) */
	const struct cp_remote_push *push; /* remote: how appends are pushed; NULL: cprof's API */
};

struct cp_store_backend {
	const char *name;            /* its operations' name (backend.h): "local", "remote" */
	const char *const *schemes;  /* the URI schemes it takes, without "://"; NULL-terminated */
	/* uri as given (with its scheme, or the first row's bare path) */
	struct cp_store *(*open)(const char *uri, const struct cp_store_open_opts *o);
};

/* The table, ending in a row without a name; the first row takes a bare path. */
extern const struct cp_store_backend cp_store_backends[];

/* Opens the store at uri with the backend of its scheme (o: NULL for a READ
 * with none of the rest).  NULL + errno, the message in cp_errmsg(). */
struct cp_store *cp_store_open_uri(const char *uri, const struct cp_store_open_opts *o);
/* The row for uri's scheme (a bare path: the first row), or NULL. */
const struct cp_store_backend *cp_store_backend_find(const char *uri);

/* the rows' open functions */
struct cp_store *cp_store_open_local_uri(const char *uri, const struct cp_store_open_opts *o);
struct cp_store *cp_store_open_remote_uri(const char *uri, const struct cp_store_open_opts *o);

#endif

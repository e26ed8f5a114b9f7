/* SPDX-License-Identifier: MIT */
/* The one interface between the cp_store_* calls (store.c) and a store
 * backend: a table of operations, as git's ref storage backends or SQLite's
 * VFS.  A backend's handle begins with a struct cp_store whose ops point at
 * the backend's table; store.c only dispatches, and a backend never calls
 * another (nor includes its headers).
 *
 * Backends: the local store (local.c: SQLite dictionary and time-partitioned
 * sample blocks, opened by cp_store_open) and a server's store (remote.c:
 * the HTTP API, opened by cp_store_open_remote).  Each is a row of the list in
 * backends.c (backends.h: its name, URI schemes and open function), through
 * which the commands open a store (cp_store_open_uri); a new backend is its
 * file here, its open function declared in backends.h and one row there.
 *
 * Every operation has the contract of its cp_store_* call in store.h, errors
 * included: -errno with a message recorded by cp_error() for that failure.
 * close frees the handle (never NULL here: cp_store_close takes NULL). */
#ifndef CP_STORE_BACKEND_H
#define CP_STORE_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* the types of store.h, which includes nothing of this */
struct cp_buckets;
struct cp_selector;
struct cp_store;
struct cp_store_append;
struct cp_store_query;
struct cp_store_result;
struct cp_store_series;
struct cp_store_stats;
struct cp_store_group_totals;
struct cp_downsample;
struct cp_compact_stats;
struct cp_pusher_stats;

struct cp_store_ops {
	const char *name; /* "local", "remote" */
	int (*append)(struct cp_store *s, const struct cp_store_append *a, size_t n);
	int (*retain)(struct cp_store *s, int64_t keep_ns);
	int64_t (*limit)(struct cp_store *s, uint64_t max_bytes);
	int (*size)(struct cp_store *s, uint64_t *bytes);
	int (*series)(struct cp_store *s, const struct cp_selector *sel, int64_t from, int64_t to,
		      struct cp_store_series **out, size_t *n);
	int (*select)(struct cp_store *s, const struct cp_store_query *q, struct cp_store_result **out, size_t *n);
	int (*over_time)(struct cp_store *s, const struct cp_store_query *q, int64_t step, int64_t **totals,
			 struct cp_buckets *b, char **type);
	int (*stats)(struct cp_store *s, struct cp_store_stats *st);
	/* NULL: store.c asks select for each step instead */
	int (*over_time_groups)(struct cp_store *s, const struct cp_store_query *q, int64_t step,
				struct cp_store_group_totals **out, size_t *n, struct cp_buckets *b);
	/* NULL: holds nothing of the kind (0) */
	size_t (*memory)(struct cp_store *s);
	void (*limit_memory)(struct cp_store *s, size_t bytes);
	/* NULL: not supported (-EOPNOTSUPP) */
	int (*compact)(struct cp_store *s, const struct cp_downsample *p, int64_t now, int max_days,
		       struct cp_compact_stats *st);
	/* A store whose appends wait to be sent (a server's: the spool).  NULL: appends are written
	 * when made (cp_store_flush 0, cp_store_pending false, no push error) */
	int (*flush)(struct cp_store *s, bool now);
	void (*pending)(struct cp_store *s, struct cp_pusher_stats *st);
	const char *(*push_error)(struct cp_store *s);
	/* the oldest and newest sample times kept (cp_store_extent).  NULL: not known (-EOPNOTSUPP) */
	int (*extent)(struct cp_store *s, int64_t *oldest, int64_t *newest);
	/* where it is, for messages (a URL; NULL: the local store, whose directory its caller knows) */
	const char *(*location)(const struct cp_store *s);
	void (*close)(struct cp_store *s);
};

/* The head of every backend's handle (its first member). */
struct cp_store {
	const struct cp_store_ops *ops;
};

/* Frees what one series holds (not the struct itself), for backends that
 * build or filter arrays of series (store.c). */
void cp_store_series_release(struct cp_store_series *r);

#endif

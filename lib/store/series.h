/* SPDX-License-Identifier: MIT */
/* The local store's series: a series is (profile type, labels), one row of
 * a day's series table with its labels as canonical JSON (keys sorted,
 * compact, non-ASCII escaped; docs/STORE.md).  Writing: the id of a series,
 * made when new, with a cache of the ids seen.  Reading: the series that match
 * a selector, and the one profile type a selection reads.
 *
 * Ownership: struct cp_series_ids is the caller's (init/release); lists of
 * series are the caller's (cp_store_series_free); db is always borrowed.
 * Errors: 0 (or an id >= 0) or -errno with the message recorded: EINVAL for
 * labels that are not UTF-8 text or a selector of several types (the message
 * lists them), ENOENT for a selector that matches nothing, EBADMSG for a row
 * whose labels are not a JSON object, ENOMEM, SQLite's (db.h). */
#ifndef CP_STORE_SERIES_H
#define CP_STORE_SERIES_H

#include <stddef.h>
#include <stdint.h>
#include <sqlite3.h>

#include "../strtab.h"
#include "store.h"

/* "type\x1elabels-json" -> series id: what this handle has written or read,
 * up to CP_SERIES_IDS_MAX of them (then it starts over: a recorder on a host
 * that starts processes all day writes a series for each one sampled, and
 * its memory is bounded by --max-memory, not by what ran) */
#define CP_SERIES_IDS_MAX 4096
struct cp_series_ids {
	struct cp_strtab keys;
	int64_t *ids;
	size_t cap;
	/* the insert and the select of a new series, prepared once for db (a
	 * recorder in a storm of processes adds a series per process per flush) */
	sqlite3 *db;
	sqlite3_stmt *insert, *select;
};

int cp_series_ids_init(struct cp_series_ids *c);
/* (before the db its statements were prepared on is closed) */
void cp_series_ids_release(struct cp_series_ids *c);
/* Forgets every id (the transaction that made some rolled back). */
int cp_series_ids_reset(struct cp_series_ids *c);

/* The labels (in any order; NULL when n is 0) as the JSON kept in the table
 * (malloc'ed), or NULL with -errno in *err. */
char *cp_series_labels_json(const struct cp_kv *labels, size_t n, int *err);
/* The id of series (type, labels_json), added when missing (in the caller's
 * write transaction).  An id not cached costs an insert, and a select only
 * when the series was there already. */
int64_t cp_series_id(struct cp_series_ids *c, sqlite3 *db, const char *type, const char *labels_json);

/* The series matching sel (NULL: all), sorted by type then labels
 * (cp_store_series).  The matchers of mask (cp_selector_match_series: of labels no series has) are
 * left to the samples of the series that lack their label. */
int cp_series_list(sqlite3 *db, const struct cp_selector *sel, uint64_t mask, struct cp_store_series **out, size_t *n);
/* The matchers of sel whose label no series of ser[0..n) has: those a series lacking the label
 * leaves to its samples (cp_selector_match_series). */
uint64_t cp_series_deferrable(const struct cp_selector *sel, const struct cp_store_series *ser, size_t n);
/* Whether series s matches sel, with the matchers of mask left to its samples (s->deferred set):
 * 1, 0, or an error (a costly regex). */
int cp_series_match(const struct cp_selector *sel, uint64_t mask, struct cp_store_series *s);
/* The series ser[0..n) (sorted by type), which must be of one type, or of one name that has a main
 * type (process_cpu:cpu, wall:wall...: only those are kept); at least one (ENOENT). */
int cp_series_resolve(struct cp_store_series **ser, size_t *n);
/* The order of cp_store_series lists: type, then labels. */
int cp_store_series_cmp(const struct cp_store_series *a, const struct cp_store_series *b);

#endif

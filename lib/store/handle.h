/* SPDX-License-Identifier: MIT */
/* The local store's handle (types only), shared by the modules of the local backend
 * (local.c: open, close, append; limit.c; query.c; compact.c; migrate.c; sqlvtab.c), and by
 * nothing else: the rest of cprof sees a struct cp_store (store.h).
 *
 *   DIR/store.db              db: meta (the schema version) and the list of days
 *   DIR/days/YYYYMMDD.db      parts.h: one file per UTC day with everything its samples use
 *                             (dictionary, series, sample blocks, summaries)
 *
 * Ownership: the handle owns db and the day handles; cp_store_close frees them. */
#ifndef CP_STORE_HANDLE_H
#define CP_STORE_HANDLE_H

#include <sqlite3.h>

#include "backend.h"
#include "parts.h"
#include "store.h"

struct cp_local {
	struct cp_store base; /* ops: the local backend's */
	char *dir;
	enum cp_store_mode mode;
	sqlite3 *db;           /* store.db */
	struct cp_parts parts; /* the days open */
};

/* Opens the store in dir whose index file is index (store.db; migrate.c writes a new one under
 * another name): NULL + errno with the message recorded. */
struct cp_local *cp_local_open(const char *dir, enum cp_store_mode mode, const char *index);
void cp_local_close(struct cp_local *s);
/* cp_store_open's handle as the local modules see it (sqlvtab.c): the store in dir, converted
 * first when it is of schema 2 (cp_local_migrate).  NULL + errno with the message recorded. */
struct cp_local *cp_local_open_dir(const char *dir, enum cp_store_mode mode);
/* The series of the days that overlap [from, to] matching sel (NULL: all), each (type, labels) once,
 * sorted by type then labels (their ids are the days', meaningless here: 0). */
int cp_local_series(struct cp_local *s, const struct cp_selector *sel, int64_t from, int64_t to,
		    struct cp_store_series **out, size_t *n);
/* A store of schema version 2 in dir (DIR/index.db, DIR/parts/) converted to this one, when dir holds
 * one and write (else a one-line error saying how); 0 when there is nothing to convert (migrate.c). */
int cp_local_migrate(const char *dir, bool write);

#endif

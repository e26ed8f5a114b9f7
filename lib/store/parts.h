/* SPDX-License-Identifier: MIT */
/* The local store's days: DIR/days/YYYYMMDD.db, one SQLite file per UTC day holding everything that
 * day's samples use: its dictionary (dict.h), its series (series.h), its sample blocks (blocks.h) and
 * their summaries (docs/STORE.md).  Deleting a day's file deletes all of it: a store's size follows
 * the days it keeps, however many processes, stacks and series came and went.
 *
 * The handles of the days open: a few are kept between calls, more while an append holds a
 * transaction in each of its days (never closed to make room then).  A handle is checked against the
 * file at the path before use, since another process may have deleted the day (retention, the size
 * limit) and an append made it again; each handle keeps the day's dictionary as far as it was
 * loaded, and the ids of the series it wrote.
 *
 * A store of schema version 2 (DIR/parts/YYYYMMDD.db: blocks only, the dictionary and series in
 * index.db) is read through the same handles with legacy set, to convert it (local.c).
 *
 * Ownership: struct cp_parts owns its handles (cp_parts_close); dir is borrowed; a day from
 * cp_parts_open stays the set's (valid until the next call on the set).  Errors: 0 or -errno with the
 * message recorded (ENOENT: a day missing in a store opened read-only; SQLite's, db.h). */
#ifndef CP_STORE_PARTS_H
#define CP_STORE_PARTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sqlite3.h>

#include "dict.h"
#include "series.h"

struct cp_part {
	char name[16];
	sqlite3 *db;
	dev_t dev; /* the file db has open */
	ino_t ino;
	struct cp_dict dict;         /* the day's dictionary, as far as it was loaded */
	struct cp_series_ids series; /* the ids of the series written (a writer's) */
};

struct cp_parts {
	const char *dir;  /* the store's directory, borrowed */
	bool write;       /* make missing days, with their schema */
	bool legacy;      /* schema 2: DIR/parts/, blocks only */
	size_t max_dict;  /* a writer's bound on each day's dictionary in memory (0: none; dict.h) */
	struct cp_part *v;
	size_t n, cap;
};

/* The day's name (YYYYMMDD, UTC) of time t (ns; before 1970: 19700101). */
void cp_part_name(int64_t t, char *buf, size_t len);
/* The file of day name: DIR/days/NAME.db (schema 2: DIR/parts/NAME.db). */
void cp_part_path(const struct cp_parts *ps, const char *name, char *buf, size_t len);
/* Whether a schema 2 partition's blocks have a step column (files written before downsampling do
 * not: their blocks are all raw). */
bool cp_part_has_step(sqlite3 *db);
struct cp_block;
/* Binds block b's columns to parameters 1 to 10 of an INSERT INTO blocks(t_min, t_max, entries,
 * samples, rawlen, series, data, ends, s_min, s_max): the blobs are b's (static: b must outlive the
 * statement's step). */
void cp_part_bind_block(sqlite3_stmt *st, const struct cp_block *b);
/* The handle of day name (write: made with its schema if missing). */
int cp_parts_open(struct cp_parts *ps, const char *name, struct cp_part **out);
/* Closes name's handle, if open. */
void cp_parts_forget(struct cp_parts *ps, const char *name);
/* The bytes of day name's files (with -wal, -shm). */
uint64_t cp_parts_bytes(const struct cp_parts *ps, const char *name);
/* Deletes the days names[0..n): their rows, in the transaction on index that the caller began
 * (BEGIN IMMEDIATE, rolled back by the caller on error), committed here, then their files.  Rows
 * first: a crash in between leaves files that no row lists (readers never see them;
 * cp_store_limit removes them), never a listed day whose file is gone half-way. */
int cp_parts_drop(struct cp_parts *ps, sqlite3 *index, const char (*names)[16], size_t n, const char *what);
void cp_parts_close(struct cp_parts *ps);

#endif

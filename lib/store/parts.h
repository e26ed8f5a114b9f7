/* SPDX-License-Identifier: MIT */
/* The local store's partitions: DIR/parts/YYYYMMDD.db, one SQLite file per
 * UTC day holding that day's sample blocks (docs/STORE.md), and the handles
 * of those open: a few are kept between calls, more while an append holds a
 * transaction in each of its days (never closed to make room then).  A
 * handle is checked against the file at the path before use, since another
 * process may have deleted the day (retention, the size limit) and an append
 * made it again.
 *
 * Ownership: struct cp_parts owns its handles (cp_parts_close); dir is
 * borrowed; a handle from cp_parts_open stays the set's (valid until the next
 * call on the set).  Errors: 0 or -errno with the message recorded (ENOENT: a
 * partition missing in a store opened read-only; SQLite's, db.h). */
#ifndef CP_STORE_PARTS_H
#define CP_STORE_PARTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sqlite3.h>

struct cp_part {
	char name[16];
	sqlite3 *db;
	dev_t dev; /* the file db has open */
	ino_t ino;
};

struct cp_parts {
	const char *dir; /* the store's directory, borrowed */
	bool write;      /* make missing partitions, with their schema */
	struct cp_part *v;
	size_t n, cap;
};

/* The partition name (YYYYMMDD, UTC) of time t (ns; before 1970: 19700101). */
void cp_part_name(int64_t t, char *buf, size_t len);
/* Whether partition db's blocks have a step column (files written before
 * downsampling do not: their blocks are all raw; a writer adds it). */
bool cp_part_has_step(sqlite3 *db);
/* Whether partition db has the summaries table, rollups (compact.h: files
 * written before have none; a writer adds it, with the triggers that keep it
 * true to the blocks). */
bool cp_part_has_rollups(sqlite3 *db);
struct cp_block;
/* Binds block b's columns to parameters 1 to 7 of an INSERT INTO blocks(t_min,
 * t_max, entries, samples, rawlen, series, data): the blobs are b's (static:
 * b must outlive the statement's step). */
void cp_part_bind_block(sqlite3_stmt *st, const struct cp_block *b);
/* The handle of partition name (write: made with its schema if missing). */
int cp_parts_open(struct cp_parts *ps, const char *name, sqlite3 **out);
/* Closes name's handle, if open. */
void cp_parts_forget(struct cp_parts *ps, const char *name);
/* The bytes of partition name's files (with -wal, -shm). */
uint64_t cp_parts_bytes(const struct cp_parts *ps, const char *name);
/* Deletes the partitions names[0..n): their rows, in the transaction on
 * index that the caller began (BEGIN IMMEDIATE, rolled back by the caller on
 * error), committed here, then their files.  Rows first: a crash in between
 * leaves files that no row lists (readers never see them; cp_store_limit
 * removes them), never a listed partition whose file is gone half-way. */
int cp_parts_drop(struct cp_parts *ps, sqlite3 *index, const char (*names)[16], size_t n, const char *what);
void cp_parts_close(struct cp_parts *ps);

#endif

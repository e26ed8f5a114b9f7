/* SPDX-License-Identifier: MIT */
/* SQLite for the local store's modules: opening a file (WAL, checked for a
 * truncated end before this process first opens it), running statements, and
 * turning SQLite's failures into -errno with a message that says what failed
 * and how to fix it (a full disk: ENOSPC, a corrupt file: EBADMSG, locked:
 * EBUSY, else EIO).
 *
 * Ownership: a handle from cp_db_open is the caller's (sqlite3_close).
 * Errors: every int function returns 0 or -errno with its own message
 * recorded by cp_error(). */
#ifndef CP_STORE_DB_H
#define CP_STORE_DB_H

#include <stdbool.h>
#include <stdint.h>
#include <sqlite3.h>

/* db's last failure as -errno, the message "what: SQLite's reason". */
int cp_db_error(sqlite3 *db, const char *what);
/* Runs sql (statements without results); on failure cp_db_error(db, what). */
int cp_db_exec(sqlite3 *db, const char *sql, const char *what);
int cp_db_prepare(sqlite3 *db, const char *sql, sqlite3_stmt **st);
/* Steps st once (an INSERT, UPDATE or DELETE), then resets it and clears its
 * bindings for the next use. */
int cp_db_step(sqlite3_stmt *st, const char *what);
/* The first column of the first row of sql (0 when none or on error). */
int64_t cp_db_count(sqlite3 *db, const char *sql);
/* Opens path (write: creating it) in WAL mode with synchronous=NORMAL, after
 * running pragmas (e.g. a page size for a new file; "" for none).  A file
 * shorter than its header says is refused (EBADMSG) unless this process has
 * had it open already (reading it then would drop the process's SQLite
 * locks). */
int cp_db_open(const char *path, bool write, const char *pragmas, sqlite3 **out);
/* The bytes of the SQLite file base with its -wal and -shm files. */
uint64_t cp_db_files_bytes(const char *base);

#endif

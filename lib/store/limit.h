/* SPDX-License-Identifier: MIT */
/* Disk use of the local store: its size, retention (whole days older than a
 * bound) and the size limit (whole days, then the oldest blocks of the
 * oldest day left, after what costs no data: orphaned partition files, WALs,
 * free pages).  The contracts are cp_store_size, cp_store_retain and
 * cp_store_limit's (store.h); these are the local backend's.
 *
 * Ownership: nothing is kept; deleted files are gone.  Errors: -errno with
 * the message recorded (EPERM: the size limit on a store opened read-only;
 * SQLite's, db.h; the file system's with the path). */
#ifndef CP_STORE_LIMIT_H
#define CP_STORE_LIMIT_H

#include <stdbool.h>
#include <stdint.h>
#include <sqlite3.h>

struct cp_local;

int cp_local_size(struct cp_local *s, uint64_t *bytes);
int cp_local_retain(struct cp_local *s, int64_t keep_ns);
int64_t cp_local_limit(struct cp_local *s, uint64_t max_bytes);
/* Gives partition db's free pages back to the file system (incremental_vacuum,
 * or one VACUUM that turns auto_vacuum on for a file made without it) and
 * truncates its WAL; *busy is set when a reader kept the WAL (it stays). */
int cp_part_reclaim(sqlite3 *db, const char *name, bool *busy);

#endif

/* SPDX-License-Identifier: MIT */
/* `cprof sql`'s one call: SQL over a local store (the tables of sqlvtab.h),
 * its answer written as a table, CSV or JSON.
 *
 * Ownership: everything is the caller's; out is borrowed.
 * Errors: 0, or -errno with the message recorded: EINVAL for SQL that does
 * not compile or that SQLite refuses as it runs (the message is SQLite's,
 * "SQL error: ..."), ENOENT (and the store's other errors, as cp_store_open's)
 * for a missing or unreadable store, EIO when out cannot be written,
 * ENOMEM. */
#ifndef CP_STORE_SQL_H
#define CP_STORE_SQL_H

#include <stdio.h>

enum cp_sql_format { CP_SQL_TABLE, CP_SQL_CSV, CP_SQL_JSON };
/* their names, by enum value (NULL-terminated) */
extern const char *const cp_sql_formats[];

/* The format named s (table, csv, json): 0 with *f set, or -EINVAL. */
int cp_sql_format_parse(const char *s, enum cp_sql_format *f);

/* Opens the store in dir read-only as the tables samples and frames (temp
 * tables of an in-memory database, with now()), runs the statements of sql
 * one after another, and writes the rows of each that returns rows to out:
 * table (aligned columns with a header line), csv (RFC 4180, a header line),
 * json (an array of objects per statement, one a line; numbers as numbers,
 * NULL as null).  The statements cannot write to the store (the tables are
 * read-only). */
int cp_sql_run(const char *dir, const char *sql, enum cp_sql_format fmt, FILE *out);

#endif

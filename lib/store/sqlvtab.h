/* SPDX-License-Identifier: MIT */
/* SQL over a local store: an SQLite virtual table module, "cprof", whose
 * tables read the store's samples and stacks through the local backend's
 * read path (cp_local_scan_open, the dictionary), never its files directly.
 *
 *   CREATE VIRTUAL TABLE temp.samples USING cprof(DIR);          -- or (DIR, samples)
 *   CREATE VIRTUAL TABLE temp.frames USING cprof(DIR, frames);
 *
 * samples: one row per stored entry (series, time, stack, sample label set,
 *   value): time (ns since the epoch), type, series (id), labels (the series
 *   labels as JSON), comm, pid, node, exe, container, pod (the label's value:
 *   the series', else the entry's sample label, else NULL), stack (id), function
 *   (the leaf frame's name), value, unit, sample_labels (JSON), and a hidden
 *   column selector (a cprof selector: WHERE selector = 'cpu{comm="x"}').
 * frames: one row per frame of each stack, leaf first, inline frames
 *   expanded: stack, depth (0 the leaf), function, file, line, inlined,
 *   mapping (the mapped file), address.
 *
 * xBestIndex pushes down to the store: time >, >=, <, <=, = (only the
 * partitions and blocks of the range are read), and equality on type,
 * series, selector and the label columns (only the matching series are
 * decoded; a label column also keeps the series that lack the label, as the
 * value may be a sample label: SQLite checks every constraint again).
 * frames pushes down stack = N.  Rows are read a block at a time
 * (cp_local_scan_open): memory is one block's entries, whatever the range.
 *
 * Also registers now(): the current time in nanoseconds since the epoch
 * (deterministic to SQLite: evaluated once per statement).
 *
 * Built twice: into libcprof (cprof sql, linked with SQLite) and, with
 * CP_SQL_EXT defined, into the loadable extension cprof_sql.so (sqlext.c),
 * where its SQLite calls go through the host's sqlite3_api.
 *
 * Ownership: each table opens the store read-only itself and closes it when
 * dropped or disconnected.  Errors: SQLite codes, with the message of the
 * store's failure (cp_errmsg) set as the table's or the statement's error
 * ("cprof: no store at DIR...", a bad selector, a corrupt block). */
#ifndef CP_STORE_SQLVTAB_H
#define CP_STORE_SQLVTAB_H

#ifdef CP_SQL_EXT
#include <sqlite3ext.h>
#else
#include <sqlite3.h>
#endif

/* Registers the module "cprof" and now() on db: SQLITE_OK or an SQLite code. */
int cp_sql_register(sqlite3 *db);

#endif

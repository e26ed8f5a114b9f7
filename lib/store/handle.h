/* SPDX-License-Identifier: MIT */
/* The local store's handle (types only), shared by the modules of the local backend
 * (local.c: open, close, append; limit.c; query.c), and by nothing else: the
 * rest of cprof sees a struct cp_store (store.h).
 *
 *   DIR/index.db              db: meta, the dictionary (dict.h), the series
 *                             (series.h), the list of partitions
 *   DIR/parts/YYYYMMDD.db     parts.h: one file of sample blocks (blocks.h)
 *                             per UTC day
 *
 * Ownership: the handle owns db, the dictionary, the series ids and the
 * partition handles; cp_store_close frees them. */
#ifndef CP_STORE_HANDLE_H
#define CP_STORE_HANDLE_H

#include <sqlite3.h>

#include "backend.h"
#include "dict.h"
#include "parts.h"
#include "series.h"
#include "store.h"

struct cp_local {
	struct cp_store base; /* ops: the local backend's */
	char *dir;
	enum cp_store_mode mode;
	sqlite3 *db;                 /* index.db */
	struct cp_dict dict;         /* db's dictionary */
	struct cp_series_ids series; /* the ids of the series seen */
	struct cp_parts parts;       /* open partitions */
};

#endif

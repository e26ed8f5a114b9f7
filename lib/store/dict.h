/* SPDX-License-Identifier: MIT */
/* The local store's dictionary: what profiles share and what does not grow
 * with time (strings, functions, mappings as rows of index.db; locations,
 * stacks and label sets as zlib chunks, one per kind and batch; docs/STORE.md),
 * kept in memory as a struct cp_profile whose ids are the rows' ids, the
 * same in every process.
 *
 * cp_dict_load takes in the rows other writers added since the last load (in
 * a read transaction of its own, or in the caller's write transaction);
 * entries added to p in memory (cp_profile_merge in dictionary mode, strings)
 * are written by cp_dict_save, in the caller's write transaction.
 *
 * Ownership: the dict owns p; db is borrowed (index.db, the owner's).
 * Errors: 0 or -errno with the message recorded: EBADMSG for a dictionary
 * that does not fit together (the message names the table and row, and says
 * to restore or move the store), ENOMEM, SQLite's (db.h).  After a failed
 * load the dict is reset (loaded from scratch next time). */
#ifndef CP_STORE_DICT_H
#define CP_STORE_DICT_H

#include <stdint.h>
#include <sqlite3.h>

#include "../profile.h"

struct cp_dict {
	sqlite3 *db;                                 /* index.db, borrowed */
	struct cp_profile *p;                        /* the dictionary as persisted */
	uint32_t nstr, nfn, nmap, nloc, nstack, nls; /* how many of each p holds from the rows */
	int64_t nchunk;                              /* the last row of chunks loaded */
};

/* Empties the dictionary (p made anew): -ENOMEM. */
int cp_dict_reset(struct cp_dict *d);
int cp_dict_load(struct cp_dict *d);
/* Writes the entries added to p since the last load or save. */
int cp_dict_save(struct cp_dict *d);
void cp_dict_release(struct cp_dict *d);
/* err from a lib/profile.c call on the dictionary, with a message recorded
 * for the codes that come without one (ENOMEM; EOVERFLOW: no ids left, 2^32
 * of a kind): "what" says what failed.  Other codes pass as they are. */
int cp_dict_error(int err, const char *what);

#endif

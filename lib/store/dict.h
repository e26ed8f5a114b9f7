/* SPDX-License-Identifier: MIT */
/* A day's dictionary: what that day's profiles share (strings, functions,
 * mappings, locations, stacks and label sets as zlib chunks of the day's
 * file, one per kind and batch; docs/STORE.md), kept in memory as a struct
 * cp_profile whose ids are the rows' ids, the same in every process.
 *
 * cp_dict_load takes in the rows other writers added since the last load (in
 * a read transaction of its own, or in the caller's write transaction);
 * entries added to p in memory (cp_profile_merge in dictionary mode, strings)
 * are written by cp_dict_save, in the caller's write transaction.
 *
 * A writer's memory: a writer keeps the dictionary to find what is there
 * already, and where processes come and go it grows without end (their pids,
 * label sets, stacks).  With max_bytes set, cp_dict_save forgets p once it
 * holds more: p starts empty, and its id k (> 0) stands for the row
 * base + k, the bases being the rows there were then.  What is added next gets
 * new rows even where an equal row exists: the rows may repeat themselves
 * (readers load them id for id, cp_profile_keep_duplicates, and equal
 * entries render as one), and each forget costs the store the rows its
 * working set writes again.  Readers need all of p: cp_dict_load after a
 * forget loads the dictionary whole; cp_dict_catch_up, a writer's, does not.
 *
 * Ownership: the dict owns p; db is borrowed (the day's file, its cp_part's).
 * Errors: 0 or -errno with the message recorded: EBADMSG for a dictionary
 * that does not fit together (the message names the table and row, and says
 * to restore or move the store), ENOMEM, SQLite's (db.h).  After a failed
 * load the dict is reset (loaded from scratch next time). */
#ifndef CP_STORE_DICT_H
#define CP_STORE_DICT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sqlite3.h>

#include "../profile.h"

struct cp_dict {
	sqlite3 *db;                                 /* the day's, borrowed */
	struct cp_profile *p;                        /* the dictionary as persisted */
	uint32_t nstr, nfn, nmap, nloc, nstack, nls; /* the last row of each kind p has (or stands past) */
	uint32_t bstr, bfn, bmap, bloc, bstack, bls; /* p's id k > 0 is row base + k (0 until a forget) */
	int64_t nchunk;                              /* the last row of chunks loaded */
	size_t max_bytes;                            /* a writer's: forget past it (0: never) */
	bool forgot;                                 /* p holds the rows past the bases only */
	bool legacy; /* a schema 2 store's (index.db), read to convert it: strings, functions, mappings are rows */
};

/* The row id of p's id (0, "none", stays 0). */
static inline uint32_t cp_dict_row(uint32_t id, uint32_t base)
{
	return id ? id + base : 0;
}

/* The sample labels that say which process and thread a sample is of (the recorder's:
 * lib/sampling/recorder.c): pid, thread_id, thread_name.  A downsampled day keeps programs, not
 * processes, without them (compact.c); a query drops them from its answer unless asked to keep them
 * (query.c), as a process was no sample label before series per program. */
#define CP_PROCESS_LABELS 3
extern const char *const cp_process_labels[CP_PROCESS_LABELS];
/* Label set id of p (0 < id < p->nlabelsets) less the process labels, into out (room for the
 * set's length): how many are left; key[] the process labels' string ids in p (0: none),
 * cp_dict_process_keys'.  n == the set's length: it has none. */
size_t cp_dict_strip_labels(const struct cp_profile *p, uint32_t id, const uint32_t *key, struct cp_label *out);
/* key[CP_PROCESS_LABELS]: the string ids of the process labels in p (0: not there); false when
 * none is. */
bool cp_dict_process_keys(const struct cp_profile *p, uint32_t *key);
/* For a reader: map[id], for each label set id of p, the first set whose labels less the process
 * labels are the same as id's (0 when none are left): the samples of one program's processes then
 * fall on one set, whose process labels the reader drops from its answer.  *map NULL when no set
 * has them.  -ENOMEM. */
int cp_dict_strip_map(const struct cp_profile *p, uint32_t **map, size_t *n);

/* Empties the dictionary (p made anew): -ENOMEM. */
int cp_dict_reset(struct cp_dict *d);
/* All of the rows into p (after a forget, from scratch): a reader's. */
int cp_dict_load(struct cp_dict *d);
/* A writer's, under the write lock before adding: cp_dict_load, or after a
 * forget, when there are rows it has not seen (others', or ours rolled
 * back), a forget past them, since their ids are all a writer needs.  With
 * max_bytes, a first load that would take more is not made: a forget. */
int cp_dict_catch_up(struct cp_dict *d);
/* Writes the entries added to p since the last load or save; then, when p
 * holds more than max_bytes, forgets it. */
int cp_dict_save(struct cp_dict *d);
/* After a failed write: what p holds may not be what was committed.  It is
 * loaded again (cp_dict_reset), or after a forget, forgotten again at the
 * next catch-up. */
void cp_dict_rolled_back(struct cp_dict *d);
void cp_dict_release(struct cp_dict *d);
/* err from a lib/profile.c call on the dictionary, with a message recorded
 * for the codes that come without one (ENOMEM; EOVERFLOW: no ids left, 2^32
 * of a kind): "what" says what failed.  Other codes pass as they are. */
int cp_dict_error(int err, const char *what);

#endif

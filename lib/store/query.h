/* SPDX-License-Identifier: MIT */
/* Reading the local store, day by day (each day has its own dictionary and
 * series: the results of the days are merged by content): a selection (the
 * matching series of one type, the blocks of the days that overlap the range, or the summaries of the
 * hours and days it holds whole (compact.h), skipping blocks without a
 * wanted series before inflating them, aggregated per (stack, label set) and
 * group, the result profiles holding only the dictionary entries their
 * samples use), totals over time, and the store's figures.  Both report the
 * resolution read (blocks.step, downsampling: compact.h) through
 * q->resolution, and totals over time never step finer than it.  A selection
 * and totals over time name their groups (q->group_by) alike.  The contracts
 * are cp_store_select, cp_store_over_time, cp_store_over_time_groups and
 * cp_store_stats's (store.h); these are the local backend's.
 *
 * Ownership: results are the caller's (cp_store_results_free, free).
 * Errors: -errno with the message recorded (series.h's for the selector,
 * blocks.h's for a corrupt block, EBADMSG for a block that refers to a stack
 * the dictionary does not have, ENOMEM, SQLite's). */
#ifndef CP_STORE_QUERY_H
#define CP_STORE_QUERY_H

#include <stddef.h>
#include <stdint.h>

#include "store.h"

struct cp_local;

int cp_local_select(struct cp_local *s, const struct cp_store_query *q, struct cp_store_result **out, size_t *n);
int cp_local_over_time(struct cp_local *s, const struct cp_store_query *q, int64_t step, int64_t **totals,
		       struct cp_buckets *b, char **type);
int cp_local_over_time_groups(struct cp_local *s, const struct cp_store_query *q, int64_t step,
			      struct cp_store_group_totals **out, size_t *n, struct cp_buckets *b);
/* The raw entries of the series ser[0..nser) (cp_local_series's, sorted) that sel matches, with
 * times in [from, to), for the SQL tables (sqlvtab.h), as an iterator: day by day, only the blocks
 * whose time bounds overlap the range are read, a block none of whose series is wanted is skipped
 * before it is inflated, and the entries are decoded a block at a time (memory: one block's
 * entries).  open, then next gives 1 and an entry (the index into ser of its series, its time,
 * value, stack and label set ids in its day's dictionary, day->dict) until 0 at the end, or -errno
 * with the message recorded; close takes NULL.  A day's dictionary is loaded as its blocks are
 * read, and again when a block needs newer entries. */
struct cp_part;
struct cp_local_entry {
	int64_t t, value;
	uint32_t series; /* index into ser */
	uint32_t stack, labels;
	struct cp_part *day; /* valid until the next call */
};
struct cp_local_scanner;
int cp_local_scan_open(struct cp_local *s, const struct cp_selector *sel, int64_t from, int64_t to,
		       struct cp_local_scanner **out);
int cp_local_scan_next(struct cp_local_scanner *it, const struct cp_store_series *ser, size_t nser,
		       struct cp_local_entry *e);
void cp_local_scan_close(struct cp_local_scanner *it);
int cp_local_stats(struct cp_local *s, struct cp_store_stats *st);

#endif

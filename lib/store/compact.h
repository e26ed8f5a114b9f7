/* SPDX-License-Identifier: MIT */
/* Downsampling of the local store (docs/STORE.md "Downsampling"): the days
 * that a policy (struct cp_downsample, store.h) wants coarser than some of
 * their blocks get those blocks' entries summed per series, stack, label set
 * and step (times rounded down to a multiple of the step) into new blocks
 * stamped with the step (blocks.step), the old ones deleted, in one
 * transaction on the day's file: a crash leaves the old blocks or the new,
 * never both and never neither.  Then the file's free pages go back to the
 * file system.  Then the summaries (rollups table, parts.c): for each day
 * that is over, and each hour that is over and less than 2 days old, the sum
 * of its entries per series, stack and label set, which queries read instead
 * of the blocks when their range holds that day or hour whole (query.c); each
 * in a transaction of its own, dropped by triggers when a block of its time
 * is written.  The contract is cp_store_compact's (store.h).
 *
 * Ownership: nothing is kept.  Errors: -errno with the message recorded
 * (EPERM: a store opened read-only; EBADMSG: a corrupt block, blocks.h;
 * ENOMEM; SQLite's, db.h). */
#ifndef CP_STORE_COMPACT_H
#define CP_STORE_COMPACT_H

#include <stdint.h>

#include "store.h"

struct cp_local;

int cp_local_compact(struct cp_local *s, const struct cp_downsample *p, int64_t now, int max_days,
		     struct cp_compact_stats *st);

#endif

/* SPDX-License-Identifier: MIT */
/* Store upkeep: retention (--retention), the size bound (--max-store-size)
 * and downsampling (--downsample), for every command that writes a local store.
 * The continuous writers (record, scrape, serve) call cp_upkeep_run between
 * their batches: the size bound every minute, retention hourly, downsampling
 * hourly after it (a day at a time: every minute while days are due), each
 * when due; failures and what was deleted are logged (lib/log.h) under the
 * caller's verb, and nothing here stops the caller.  A one-shot writer
 * (import) calls cp_upkeep_once: all of it at once, its failure returned.
 * The struct is the caller's; one thread uses it at a time. */
#ifndef CP_STORE_UPKEEP_H
#define CP_STORE_UPKEEP_H

#include <stdbool.h>
#include <stdint.h>

#include "store.h"

struct cp_upkeep {
	const char *verb;   /* "serve": the log lines' prefix */
	int64_t retention;  /* ns of data to keep; 0: all */
	uint64_t max_size;  /* bytes; 0: no bound */
	struct cp_downsample downsample; /* n = 0: none */
	/* state, zero at first */
	int64_t last_retain, last_limit, last_compact;
	bool warned; /* the "still over the bound" warning was given */
	bool compacting; /* the last downsampling did a day: more may be due */
};

/* Runs what is due at now (ns since the epoch), or everything when now is 0
 * (downsampling even then on its own schedule: a day takes seconds). */
void cp_upkeep_run(struct cp_upkeep *u, struct cp_store *s, int64_t now);

/* What cp_upkeep_once did, step by step (a step not asked for: 0). */
struct cp_upkeep_report {
	int retained_days;              /* days retention deleted */
	int64_t freed;                  /* bytes the size bound deleted */
	uint64_t size;                  /* the store's size after the bound (with max_size) */
	int compacted_days;             /* days downsampled */
	struct cp_compact_stats compact; /* and how (store.h) */
};

/* Everything u asks, once and in full, in a writer's order: retention, then
 * the size bound, then every day due for downsampling at now (ns; 0: the
 * clock).  The state fields are not used.  0, or the first failure's -errno
 * with its message prefixed by the step ("retention: ", "--max-store-size: ",
 * "downsampling: "); the steps before it are done (r says what they did). */
int cp_upkeep_once(const struct cp_upkeep *u, struct cp_store *s, int64_t now, struct cp_upkeep_report *r);

#endif

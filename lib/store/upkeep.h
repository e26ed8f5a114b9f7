/* SPDX-License-Identifier: MIT */
/* Store upkeep for the commands that write continuously (record, scrape,
 * serve): retention (--retention) hourly, downsampling (--downsample) hourly
 * after it (a day at a time: every minute while days are due), and the size bound (--max-store-size) every minute, each run when
 * due.  Failures and what was
 * deleted are logged (lib/log.h) under the caller's verb; nothing here stops
 * the caller.  The struct is the caller's; one thread uses it at a time. */
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

#endif

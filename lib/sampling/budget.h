/* SPDX-License-Identifier: MIT */
/* The recorder's memory budget (--max-memory): its resident set, read from
 * /proc/self/statm, against a limit.  Before a new binary is opened and
 * after each poll, while over the limit, it evicts what the recorder can
 * read again (least recently used binaries first, then the unwinder's rules
 * and the symbolizer's addresses) and gives freed heap back to the kernel:
 * pages and heap at most every 250 ms, caches cut at most every 2 s, so that
 * a working set larger than the budget costs a re-read every 2 s at worst
 * instead of one per program (the resident set then goes over the budget
 * between cuts).
 * Evicting never loses a sample; it costs a re-read.  What is not a cache
 * (the interval's profile, the processes, the ring) is not touched: when it
 * alone is over the limit, that is logged once and the caches stay small. */
#ifndef CP_BUDGET_H
#define CP_BUDGET_H

#include <stdbool.h>
#include <stdint.h>

#include "symbolize.h"
#include "unwind.h"

struct cp_budget {
	uint64_t max;   /* bytes; 0: no limit */
	uint64_t floor; /* the resident set left after evicting everything, when over max */
	struct cp_unwinder *u;
	struct cp_symbolizer *s;
	const char *verb; /* for the log line */
	uint64_t evictions; /* times caches were cut */
	int64_t released_ns, evicted_ns; /* CLOCK_MONOTONIC of the last release, cut */
	bool warned;
};

/* Watches u's binaries and s's addresses (both owned by the caller, who
 * keeps b alive as long as they are). */
void cp_budget_init(struct cp_budget *b, uint64_t max, struct cp_unwinder *u, struct cp_symbolizer *s,
		    const char *verb);
/* Evicts while over the limit. */
void cp_budget_keep(struct cp_budget *b);
/* This process's resident set in bytes (0 if unknown). */
uint64_t cp_rss_bytes(void);

#endif

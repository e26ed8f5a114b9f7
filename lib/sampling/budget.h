/* SPDX-License-Identifier: MIT */
/* The recorder's memory budget (--max-memory): its resident set, read from
 * /proc/self/statm, against a limit.  Before a new binary is opened and
 * after each poll, at most every 250 ms: from 15/16 of the limit on, it
 * gives back what the recorder can read again at little cost (the pages of
 * idle binaries' files, of debug files and of the kernel's symbols, at most
 * once a second); over the limit, free heap, then it closes idle binaries
 * (not used for 10 s)
 * least recently used first, then, at most every 10 s, those in use whose
 * DWARF was read (libdw keeps the line tables it decoded while a binary is
 * open), and when only the binaries being read are left, forgets the
 * unwinder's rules and the symbolizer's addresses.  Evicting never loses a
 * sample; it costs a re-read.  The rest of the working set (binaries used in
 * the last 10 s) stays: when it alone is over the limit, evicting it would
 * read it again at once, so it is said once (at debug level: top's screen
 * shares the terminal) and left. */
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
	int64_t released_ns;    /* CLOCK_MONOTONIC of the last look */
	int64_t trimmed_ns;     /* and of the last malloc_trim before evicting */
	int64_t paged_ns;       /* and of the last release of file pages */
	int64_t working_set_ns; /* binaries used this recently stay (10 s) */
	int64_t dwarf_ns;       /* CLOCK_MONOTONIC of the last closing of those whose DWARF was read */
	bool warned;
};

/* Watches u's binaries and s's addresses (both owned by the caller, who
 * keeps b alive as long as they are). */
void cp_budget_init(struct cp_budget *b, uint64_t max, struct cp_unwinder *u, struct cp_symbolizer *s,
		    const char *verb);
/* Evicts while over the limit. */
void cp_budget_keep(struct cp_budget *b);
/* This process's resident set in bytes (0 if unknown).  Keeps /proc/self/statm
 * open; one thread calls it (the recorder's). */
uint64_t cp_rss_bytes(void);

#endif

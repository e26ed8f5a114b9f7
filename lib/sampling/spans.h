/* SPDX-License-Identifier: MIT */
/* A cache of answers about file offsets of binaries that hold over a span of
 * offsets: an unwind rule holds over its CFI row, a function's name (in a
 * binary without DWARF) over its symbol.  In a storm of processes the
 * sampled instruction is most often one never seen before, in a function
 * seen often: answered for the span, it costs one probe instead of a
 * lookup in libdw.
 *
 * Entries are (module id, [lo, hi)); the caller keeps what they answer in
 * its own array, at the same ids (0, 1, ... in the order added).  An answer
 * that holds for one offset only is the span [off, off + 1).  Spans of one
 * module must not overlap unless they give the same answer.  Found through
 * two hash indexes: the exact offsets asked for, and the pages (4 KiB) a
 * span covers (a span over more than CP_SPANS_MAX_PAGES pages is kept as
 * its part on the CP_SPANS_MAX_PAGES pages around the offset asked).
 *
 * Ownership: the caller's (zeroed struct, cp_spans_release).  Errors:
 * cp_spans_add returns -ENOMEM; the rest cannot fail. */
#ifndef CP_SPANS_H
#define CP_SPANS_H

#include <stdint.h>
#include <stddef.h>

#include "../index.h"

#define CP_SPANS_MAX_PAGES 16

struct cp_spans {
	struct cp_span_entry {
		uint32_t mod;
		uint64_t lo, hi;
	} *e;
	size_t n, cap;
	struct cp_index exact, pages;
	uint64_t span_hits; /* found through a page, not an exact offset */
};

/* The id of the entry whose span holds off in mod, or UINT32_MAX.  A
 * span's answer for an offset not asked before is remembered under the
 * offset too, up to 4 offsets an entry (past that, or on -ENOMEM, the next
 * ask probes the pages again). */
uint32_t cp_spans_find(struct cp_spans *c, uint32_t mod, uint64_t off);
/* Adds the answer for off, which holds over [lo, hi) (lo <= off < hi):
 * its id, or -ENOMEM (nothing added). */
int64_t cp_spans_add(struct cp_spans *c, uint32_t mod, uint64_t off, uint64_t lo, uint64_t hi);
/* Forgets every entry (keeps the memory). */
void cp_spans_reset(struct cp_spans *c);
void cp_spans_release(struct cp_spans *c);

#endif

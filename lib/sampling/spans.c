/* SPDX-License-Identifier: MIT */
/* Answers that hold over spans of file offsets: see spans.h. */
#include "spans.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../error.h"
#include "../util.h"

#define PAGE_SHIFT 12

struct key {
	uint32_t mod;
	uint64_t off;
};

static uint32_t exact_hash(uint32_t mod, uint64_t off)
{
	return (uint32_t)cp_hash_u64(off, mod);
}

static uint32_t page_hash(uint32_t mod, uint64_t page)
{
	return (uint32_t)cp_hash_u64(page, (uint64_t)mod | 1ull << 32);
}

static int holds(const void *ctx, uint32_t id, const void *k)
{
	const struct cp_span_entry *e = &((const struct cp_spans *)ctx)->e[id];
	const struct key *key = k;

	return e->mod == key->mod && e->lo <= key->off && key->off < e->hi;
}

uint32_t cp_spans_find(struct cp_spans *c, uint32_t mod, uint64_t off)
{
	struct key k = { mod, off };
	uint32_t h = exact_hash(mod, off);
	uint32_t id = cp_index_find(&c->exact, h, holds, c, &k);

	if (id != UINT32_MAX)
		return id;
	id = cp_index_find(&c->pages, page_hash(mod, off >> PAGE_SHIFT), holds, c, &k);
	if (id != UINT32_MAX) {
		c->span_hits++;
		/* (bounded: the caller bounds the entries, not the offsets asked;
		 * a failure costs the next probe only) */
		if (c->exact.count < 4 * c->n + 4096)
			(void)cp_index_add(&c->exact, h, id);
	}
	return id;
}

int64_t cp_spans_add(struct cp_spans *c, uint32_t mod, uint64_t off, uint64_t lo, uint64_t hi)
{
	uint32_t id = (uint32_t)c->n;

	if (!(lo <= off && off < hi))
		lo = off, hi = off + 1;
	/* a span wider than the page index takes: the part of it on the pages
	 * around off, as near their middle as the span lets it be (what holds
	 * over a span holds over any part of it) */
	if (((hi - 1) >> PAGE_SHIFT) - (lo >> PAGE_SHIFT) >= CP_SPANS_MAX_PAGES) {
		uint64_t pg = off >> PAGE_SHIFT, last = ((hi - 1) >> PAGE_SHIFT) - (CP_SPANS_MAX_PAGES - 1);
		uint64_t first = pg > CP_SPANS_MAX_PAGES / 2 ? pg - CP_SPANS_MAX_PAGES / 2 : 0;

		first = first < last ? first : last;
		first = first > lo >> PAGE_SHIFT ? first : lo >> PAGE_SHIFT;
		if (lo < first << PAGE_SHIFT)
			lo = first << PAGE_SHIFT;
		if (hi > (first + CP_SPANS_MAX_PAGES) << PAGE_SHIFT)
			hi = (first + CP_SPANS_MAX_PAGES) << PAGE_SHIFT;
	}
	if (c->n >= UINT32_MAX - 1 || cp_grow((void **)&c->e, &c->cap, c->n + 1, sizeof(*c->e)) ||
	    cp_index_add(&c->exact, exact_hash(mod, off), id))
		return cp_error(ENOMEM, "out of memory caching what an address is");
	c->e[id] = (struct cp_span_entry){ mod, lo, hi };
	c->n++;
	if (hi - lo > 1 && ((hi - 1) >> PAGE_SHIFT) - (lo >> PAGE_SHIFT) < CP_SPANS_MAX_PAGES) {
		for (uint64_t pg = lo >> PAGE_SHIFT; pg <= (hi - 1) >> PAGE_SHIFT; pg++)
			if (cp_index_add(&c->pages, page_hash(mod, pg), id))
				break; /* found by its exact offsets only */
	}
	return id;
}

void cp_spans_reset(struct cp_spans *c)
{
	cp_index_release(&c->exact);
	cp_index_release(&c->pages);
	memset(&c->exact, 0, sizeof(c->exact));
	memset(&c->pages, 0, sizeof(c->pages));
	c->n = 0;
}

void cp_spans_release(struct cp_spans *c)
{
	cp_index_release(&c->exact);
	cp_index_release(&c->pages);
	free(c->e);
	memset(c, 0, sizeof(*c));
}

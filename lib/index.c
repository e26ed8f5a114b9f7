/* SPDX-License-Identifier: MIT */
#include "index.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"

uint64_t cp_hash_bytes(const void *p, size_t n, uint64_t seed)
{
	/* FNV-1a over 8-byte words, finished with a 64-bit mix */
	const unsigned char *s = p;
	uint64_t h = 0xcbf29ce484222325ULL ^ seed;
	uint64_t w;

	while (n >= 8) {
		memcpy(&w, s, 8);
		h = (h ^ w) * 0x100000001b3ULL;
		h ^= h >> 29;
		s += 8;
		n -= 8;
	}
	w = 0;
	memcpy(&w, s, n);
	h = (h ^ w ^ ((uint64_t)n << 56)) * 0x100000001b3ULL;
	return cp_hash_u64(h, seed);
}

uint32_t cp_index_find(const struct cp_index *ix, uint32_t hash, cp_index_eq_fn eq,
		       const void *ctx, const void *key)
{
	uint32_t i;

	if (!ix->slots)
		return UINT32_MAX;
	for (i = hash & ix->mask;; i = (i + 1) & ix->mask) {
		uint64_t s = ix->slots[i];

		if (!s)
			return UINT32_MAX;
		if ((uint32_t)(s >> 32) == hash && eq(ctx, (uint32_t)s - 1, key))
			return (uint32_t)s - 1;
	}
}

static void put(uint64_t *slots, uint32_t mask, uint64_t s)
{
	uint32_t i;

	for (i = (uint32_t)(s >> 32) & mask; slots[i]; i = (i + 1) & mask)
		;
	slots[i] = s;
}

int cp_index_add(struct cp_index *ix, uint32_t hash, uint32_t id)
{
	if (!ix->slots || (uint64_t)(ix->count + 1) * 4 > ((uint64_t)ix->mask + 1) * 3) {
		uint32_t n = ix->slots ? (ix->mask + 1) * 2 : 64, i;
		uint64_t *ns;

		if (n == 0)
			return cp_error(ENOMEM, "the hash index is full (%u entries)", ix->count);
		ns = calloc(n, sizeof(*ns));
		if (!ns)
			return cp_error(ENOMEM, "out of memory growing the hash index to %u slots", n);
		if (ix->slots) {
			for (i = 0; i <= ix->mask; i++)
				if (ix->slots[i])
					put(ns, n - 1, ix->slots[i]);
			free(ix->slots);
		}
		ix->slots = ns;
		ix->mask = n - 1;
	}
	put(ix->slots, ix->mask, ((uint64_t)hash << 32) | ((uint64_t)id + 1));
	ix->count++;
	return 0;
}

void cp_index_release(struct cp_index *ix)
{
	free(ix->slots);
	memset(ix, 0, sizeof(*ix));
}

/* SPDX-License-Identifier: MIT */
/* A hash index over densely numbered entries kept elsewhere (open addressing,
 * linear probing).  It stores (hash, id) pairs only; equality is decided by the
 * caller's callback, so one implementation serves strings, functions,
 * locations, stacks, label sets and samples. */
#ifndef CP_INDEX_H
#define CP_INDEX_H

#include <stdint.h>
#include <stddef.h>

struct cp_index {
	uint64_t *slots; /* (hash32 << 32) | (id + 1); 0 = empty */
	uint32_t mask;
	uint32_t count;
};

typedef int (*cp_index_eq_fn)(const void *ctx, uint32_t id, const void *key);

/* Returns the id whose entry equals key, or UINT32_MAX. */
uint32_t cp_index_find(const struct cp_index *ix, uint32_t hash, cp_index_eq_fn eq,
		       const void *ctx, const void *key);
/* Adds id under hash (the caller checked it is absent). 0 or -ENOMEM. */
int cp_index_add(struct cp_index *ix, uint32_t hash, uint32_t id);
void cp_index_release(struct cp_index *ix);
/* The bytes its slots take. */
static inline size_t cp_index_bytes(const struct cp_index *ix)
{
	return ix->slots ? ((size_t)ix->mask + 1) * sizeof(*ix->slots) : 0;
}

uint64_t cp_hash_bytes(const void *p, size_t n, uint64_t seed);
static inline uint64_t cp_hash_u64(uint64_t x, uint64_t seed)
{
	x ^= seed + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2);
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

#endif

/* SPDX-License-Identifier: MIT */
/* The memory the runtime fuzz targets (fuzz_v8.c, fuzz_hotspot.c) read:
 * the input's first 8 bytes are an offset into the rest, which is copied
 * into a heap of this process where every word with 0xcafe in its top 16
 * bits is taken as an offset into the heap (its low 48 bits) and made a
 * pointer to there (the seeds' writers, tests/fuzz/v8heap.py and
 * jvmheap.py, mark their pointers so).  Other words are left as they are. */
#ifndef CP_FUZZHEAP_H
#define CP_FUZZHEAP_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The heap (malloc'ed; NULL when the input is too short or out of memory)
 * and the address the first 8 bytes give, in *at */
static inline uint8_t *fuzz_heap(const uint8_t *data, size_t len, uint64_t *at)
{
	size_t hlen;
	uint8_t *heap;
	uint64_t off;

	if (len < 16)
		return NULL;
	hlen = len - 8;
	if (!(heap = malloc(hlen)))
		return NULL;
	memcpy(heap, data + 8, hlen);
	for (size_t i = 0; i + 8 <= hlen; i += 8) {
		uint64_t w;

		memcpy(&w, heap + i, 8);
		if (w >> 48 == 0xcafe) {
			w = (uint64_t)(uintptr_t)heap + (w & 0xffffffffffffull) % hlen;
			memcpy(heap + i, &w, 8);
		}
	}
	memcpy(&off, data, 8);
	*at = (uint64_t)(uintptr_t)heap + off % hlen;
	return heap;
}

#endif

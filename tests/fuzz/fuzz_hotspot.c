/* SPDX-License-Identifier: MIT */
/* Fuzz target: what the recorder reads of a JVM to name a Java frame
 * (lib/sampling/runtimes/hotspot/hotspot.c): a Method* and what it leads to
 * (ConstMethod, ConstantPool and its entries, the holder class, Symbols),
 * read with process_vm_readv from this process: the input is the memory,
 * laid out as Debian 12's OpenJDK 17 lays it out (cp_hotspot_method17).  The
 * input's first 8 bytes are the offset of the Method; the rest is the heap,
 * in which every word 0xcafe in its top 16 bits is taken as an offset into
 * the heap (its low 48 bits) and made a pointer to there.  Whatever the
 * bytes, nothing is read outside what process_vm_readv allows, and nothing
 * crashes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sampling/runtimes/hotspot/hotspot.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len);

static struct cp_hotspot *hs;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	uint64_t m;
	size_t hlen;
	uint8_t *heap;

	if (!hs && !(hs = cp_hotspot_new("fuzz")))
		return 0;
	if (len < 16)
		return 0;
	hlen = len - 8;
	if (!(heap = malloc(hlen)))
		return 0;
	memcpy(heap, data + 8, hlen);
	for (size_t i = 0; i + 8 <= hlen; i += 8) {
		uint64_t w;

		memcpy(&w, heap + i, 8);
		if (w >> 48 == 0xcafe) {
			w = (uint64_t)(uintptr_t)heap + (w & 0xffffffffffffull) % hlen;
			memcpy(heap + i, &w, 8);
		}
	}
	memcpy(&m, data, 8);
	m = (uint64_t)(uintptr_t)heap + m % hlen;
	(void)cp_hotspot_method17(hs, (uint32_t)getpid(), m);
	/* the next input may be at the same address: what was read goes */
	cp_hotspot_forget(hs, (uint32_t)getpid());
	free(heap);
	return 0;
}

/* SPDX-License-Identifier: MIT */
/* Fuzz target: what the recorder reads of a JVM to name a Java frame
 * (lib/sampling/runtimes/hotspot/hotspot.c): a Method* and what it leads to
 * (ConstMethod, ConstantPool and its entries, the holder class, Symbols),
 * and its compressed line table (the line of a bci the input's length
 * picks), read with process_vm_readv from this process: the input is the memory,
 * laid out as Debian 12's OpenJDK 17 lays it out (cp_hotspot_method17), made
 * as fuzzheap.h says: the first 8 bytes are the Method's offset.  Whatever
 * the bytes, nothing is read outside what process_vm_readv allows, and
 * nothing crashes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzzheap.h"
#include "sampling/runtimes/hotspot/hotspot.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len);

static struct cp_hotspot *hs;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	uint64_t m;
	int64_t line;
	uint8_t *heap;

	if (!hs && !(hs = cp_hotspot_new("fuzz")))
		return 0;
	if (!(heap = fuzz_heap(data, len, &m)))
		return 0;
	(void)cp_hotspot_method17(hs, (uint32_t)getpid(), m, (int32_t)(len % 64), &line);
	/* the next input may be at the same address: what was read goes */
	cp_hotspot_forget(hs, (uint32_t)getpid());
	free(heap);
	return 0;
}

/* SPDX-License-Identifier: MIT */
/* Fuzz target: what the recorder reads of a JVM's code cache to name a
 * compiled Java frame (lib/sampling/runtimes/hotspot/hotspot.c): the code
 * heap's segment map, the blob's header, and an nmethod's debug info (its
 * PcDescs, the chain of scopes they lead to, its metadata) down to the
 * Methods it names and their line tables, read with process_vm_readv from
 * this process (cp_hotspot_compiled17, the code frames are named by).  The
 * input is the memory, made as fuzzheap.h says (the first 8 bytes: the pc's
 * offset), laid out as Debian 12's OpenJDK 17 lays it out: the whole heap is
 * one code heap of 64-byte segments whose segment map is its first bytes
 * (a byte a segment).  Whatever the bytes, nothing is read outside what
 * process_vm_readv allows, and nothing crashes. */
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
	uint64_t pc, lo;
	uint8_t *heap;
	const char *names[CP_HOTSPOT_INLINE_MAX];
	int64_t lines[CP_HOTSPOT_INLINE_MAX];

	if (!hs && !(hs = cp_hotspot_new("fuzz")))
		return 0;
	if (!(heap = fuzz_heap(data, len, &pc)))
		return 0;
	lo = (uint64_t)(uintptr_t)heap;
	(void)cp_hotspot_compiled17(hs, (uint32_t)getpid(), lo, lo + (len - 8), lo, 6, pc, names, lines);
	/* the next input may be at the same address: what was read goes */
	cp_hotspot_forget(hs, (uint32_t)getpid());
	free(heap);
	return 0;
}

/* SPDX-License-Identifier: MIT */
/* Fuzz target: what the recorder reads of a Ruby process to name a frame
 * (lib/sampling/runtimes/ruby/ruby.c): an iseq and what it leads to (its
 * body, the label and path Strings, a [path, realpath] Array, the insn_info
 * entries and the succinct index table or positions array that give a pc's
 * line), read with process_vm_readv from this process: the input is the
 * memory, laid out as Debian 12's Ruby 3.1 lays it out (cp_ruby_frame's
 * layout 0), made as fuzzheap.h says: the first 8 bytes are the iseq's
 * offset, and the heap's first word is the frame's pc.  Whatever the bytes,
 * nothing is read outside what process_vm_readv allows, and nothing
 * crashes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzzheap.h"
#include "sampling/runtimes/ruby/ruby.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len);

static struct cp_ruby *rb;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	uint64_t iseq, pc;
	struct cp_rt_name name;
	uint8_t *heap;

	if (!rb && !(rb = cp_ruby_new("fuzz")))
		return 0;
	if (!(heap = fuzz_heap(data, len, &iseq)))
		return 0;
	memcpy(&pc, heap, 8);
	if (cp_ruby_frame(rb, (uint32_t)getpid(), 0, iseq, pc, &name) == 0 && (!name.label || !name.file))
		abort(); /* a name has its label and file */
	/* the next input may be at the same address: what was read goes */
	cp_ruby_forget(rb, (uint32_t)getpid());
	free(heap);
	return 0;
}

/* SPDX-License-Identifier: MIT */
/* Fuzz target: what the recorder reads of a Node.js process
 * (lib/sampling/runtimes/v8/v8.c): a frame's JSFunction and the objects it
 * leads to (SharedFunctionInfo, its name or ScopeInfo, Script, strings of
 * each kind, line ends, source), read with process_vm_readv from this
 * process: the input is the heap.  It is given with the constants of Debian
 * 12's libnode.so.108 (V8 10.2, as its v8dbg_ symbols say), through
 * cp_v8_layout, the call detection makes.  The heap is made as fuzzheap.h
 * says: the first 8 bytes are the offset of the frame's function (a tagged
 * pointer in the heap is the object's offset + 1).  Whatever the bytes, nothing is read outside
 * what process_vm_readv allows, and nothing crashes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzzheap.h"
#include "sampling/runtimes/v8/v8.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len);

static const struct {
	const char *name;
	int32_t value;
} node18[] = {
	{ "ConsStringTag", 1 },
	{ "ExternalStringTag", 2 },
	{ "FirstNonstringType", 128 },
	{ "OneByteStringTag", 8 },
	{ "SeqStringTag", 0 },
	{ "SlicedStringTag", 3 },
	{ "StringEncodingMask", 8 },
	{ "StringRepresentationMask", 7 },
	{ "ThinStringTag", 5 },
	{ "class_ConsString__first__String", 16 },
	{ "class_ConsString__second__String", 24 },
	{ "class_ExternalString__resource__Object", 16 },
	{ "class_FixedArrayBase__length__SMI", 8 },
	{ "class_FixedArray__data__uintptr_t", 16 },
	{ "class_HeapObject__map__Map", 0 },
	{ "class_JSFunction__shared__SharedFunctionInfo", 24 },
	{ "class_Map__instance_type__uint16_t", 12 },
	{ "class_Script__line_ends__Object", 56 },
	{ "class_Script__name__Object", 16 },
	{ "class_Script__source__Object", 8 },
	{ "class_SeqOneByteString__chars__char", 16 },
	{ "class_SeqTwoByteString__chars__char", 16 },
	{ "class_SharedFunctionInfo__name_or_scope_info__Object", 16 },
	{ "class_SharedFunctionInfo__script_or_debug_info__HeapObject", 32 },
	{ "class_SlicedString__offset__SMI", 24 },
	{ "class_SlicedString__parent__String", 16 },
	{ "class_String__length__int32_t", 12 },
	{ "class_ThinString__actual__String", 16 },
	{ "off_fp_function", -16 },
	{ "scopeinfo_idx_first_vars", 3 },
	{ "scopeinfo_idx_ncontextlocals", 2 },
	{ "type_FixedArray__FIXED_ARRAY_TYPE", 179 },
	{ "type_JSFunction__JS_FUNCTION_TYPE", 2065 },
	{ "type_ScopeInfo__SCOPE_INFO_TYPE", 256 },
	{ "type_Script__SCRIPT_TYPE", 170 },
	{ "type_SharedFunctionInfo__SHARED_FUNCTION_INFO_TYPE", 257 },
};
#define NCONST (sizeof(node18) / sizeof(*node18))

#define SP 0x10000 /* where the copied stack is, as the sample says */

static struct cp_v8 *v8;
static int layout = -1;
static struct cp_sample_rec rec;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	const char *names[NCONST];
	int32_t values[NCONST];
	struct cp_rt_name out[1];
	uint64_t pcs[1] = { 0 }, fps[1] = { SP + 32 }, fun;
	uint8_t *heap;

	if (!v8) {
		if (!(v8 = cp_v8_new("fuzz")))
			return 0;
		for (size_t i = 0; i < NCONST; i++) {
			names[i] = node18[i].name;
			values[i] = node18[i].value;
		}
		layout = cp_v8_layout(v8, names, values, NCONST);
	}
	if (layout < 0 || !(heap = fuzz_heap(data, len, &fun)))
		return 0;
	fun |= 1; /* tagged */
	/* the frame: its function at rbp - 16, in the copy of the stack */
	rec.flags = CP_SAMPLE_USER;
	rec.regs[CP_REG_SP] = SP;
	rec.ustack_len = 64;
	memcpy(rec.ustack + 16, &fun, 8);
	(void)cp_v8_frames(v8, (uint32_t)getpid(), (unsigned)layout, &rec, pcs, fps, 1, out);
	/* the next input may be at the same address: what was read goes */
	cp_v8_forget(v8, (uint32_t)getpid());
	free(heap);
	return 0;
}

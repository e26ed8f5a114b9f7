/* SPDX-License-Identifier: MIT */
/* Fuzz target: what the recorder reads of a Python process
 * (lib/sampling/runtimes/python/python.c): a code object and the strings and line table it
 * points to, read with process_vm_readv (from this process: the input is
 * the memory), then the line of an instruction from the location table.
 * The input is a code object of CPython 3.11's layout followed by what it
 * points to: its pointer fields are taken modulo the input's length, as
 * offsets into it, so that the reads land in the input (and some past it,
 * which must fail cleanly).  The line table parser also gets the whole
 * input as a table.  Whatever the bytes, no read goes outside what
 * process_vm_readv allows and nothing crashes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sampling/runtimes/python/python.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len);

static struct cp_python *py;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	static const char *const ptrs[] = { "code.co_name", "code.co_qualname", "code.co_filename", "code.co_linetable" };
	long adaptive = cp_python_offset(3, 11, "code.co_code_adaptive");
	uint8_t *buf;
	int64_t line;
	bool skip;
	uint64_t at = 0;

	if (!py && !(py = cp_python_new("fuzz")))
		return 0;
	(void)cp_python_line(data, len, len ? data[0] : 0, len > 1 ? data[1] : 0);
	if (len < 256 || adaptive < 0)
		return 0;
	if (!(buf = malloc(len)))
		return 0;
	memcpy(buf, data, len);
	for (size_t i = 0; i < sizeof(ptrs) / sizeof(*ptrs); i++) {
		long off = cp_python_offset(3, 11, ptrs[i]);
		uint64_t v;

		memcpy(&v, buf + off, 8);
		/* into the input, or (the top bit set) anywhere: that read fails */
		v = v >> 63 ? v : (uint64_t)(uintptr_t)buf + v % len;
		memcpy(buf + off, &v, 8);
	}
	memcpy(&at, data + len - 8, 8);
	(void)cp_python_code(py, (uint32_t)getpid(), 0, (uint64_t)(uintptr_t)buf,
			     (uint64_t)(uintptr_t)buf + (uint64_t)adaptive + at % 4096, data[2] & 1, &line, &skip);
	/* the next input may get the same address: what was read goes */
	cp_python_forget(py, (uint32_t)getpid());
	free(buf);
	return 0;
}

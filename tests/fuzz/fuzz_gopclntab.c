/* SPDX-License-Identifier: MIT */
/* Fuzz target: Go's function table (lib/sampling/gopclntab.c), as the
 * symbolizer reads it from a binary that may be corrupt or hostile.  An
 * input that starts as an ELF file goes through cp_gopclntab_elf (libelf
 * over the bytes: the sections, the table's header found in .data.rel.ro,
 * the module data); any other is the table's bytes themselves, with the
 * input as the program's memory too (so inline trees may point into it) and
 * its module data looked for in it.  Then functions are asked for, and pcs
 * looked up at their entries, inside and around them and at pcs taken from
 * the input's end: each an answer or -EINVAL, nothing read outside the
 * input. */
#include <libelf.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "sampling/gopclntab.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len);

static void ask(const struct cp_gopclntab *t, const uint8_t *data, size_t len)
{
	struct cp_goframe f[8];
	uint64_t entry, end, lo, hi, pc;
	const char *name;
	/* at most 64 functions, spread over the table */
	uint32_t step = t->nfunc / 64 + 1;

	for (uint32_t i = 0; i < t->nfunc; i += step) {
		if (cp_gopclntab_func(t, i, &entry, &end, &name) != 0)
			continue;
		(void)cp_gopclntab_lookup(t, entry, f, 8, &lo, &lo, &hi);
		(void)cp_gopclntab_lookup(t, entry + (end - entry) / 2, f, 1 + i % 8, &lo, &lo, &hi);
		(void)cp_gopclntab_lookup(t, end - 1, f, 2, &lo, &lo, &hi);
		(void)cp_gopclntab_lookup(t, end, f, 8, &lo, &lo, &hi);
	}
	(void)cp_gopclntab_lookup(t, t->minpc - 1, f, 8, &entry, &lo, &hi);
	(void)cp_gopclntab_lookup(t, t->maxpc, f, 8, &entry, &lo, &hi);
	if (len >= 8) {
		memcpy(&pc, data + len - 8, 8);
		(void)cp_gopclntab_lookup(t, pc, f, 8, &entry, &lo, &hi);
		if (t->maxpc - t->minpc + 1)
			pc = t->minpc + pc % (t->maxpc - t->minpc + 1);
		(void)cp_gopclntab_lookup(t, pc, f, 8, &entry, &lo, &hi);
	}
	cp_error_clear();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	struct cp_gopclntab t;

	if (len >= 4 && !memcmp(data, "\177ELF", 4)) {
		/* (a copy: libelf may convert the image it is given in place) */
		char *img = malloc(len);
		Elf *e;

		if (!img)
			return 0;
		memcpy(img, data, len);
		elf_version(EV_CURRENT);
		if ((e = elf_memory(img, len))) {
			if (cp_gopclntab_elf(&t, e) == 0)
				ask(&t, data, len);
			elf_end(e);
		}
		free(img);
		cp_error_clear();
		return 0;
	}
	if (cp_gopclntab_init(&t, data, len, 0x500000, 0x401000) == 0) {
		struct cp_gopclntab_mem mem = { 0x500000, data, len };

		cp_gopclntab_set_memory(&t, &mem, 1);
		(void)cp_gopclntab_find_module(&t, data, len, 0x500000);
		ask(&t, data, len);
	}
	cp_error_clear();
	return 0;
}

/* SPDX-License-Identifier: MIT */
/* Go's own function table (the pclntab: section .gopclntab, or inside
 * .data.rel.ro in a PIE linked by the system's linker), which every Go
 * binary keeps for its runtime's tracebacks, stripped (-ldflags='-s -w')
 * or not: for a pc, the function's name and entry, the file and line from
 * its pc-file and pc-line tables, and the calls inlined there (innermost
 * first, the function last), from its inline tree (Go 1.16 on; Go 1.18 on
 * finds the tree through the module data, which the program's memory must
 * hold).  The formats of Go 1.2-1.15 (magic 0xfffffffb), 1.16-1.17
 * (0xfffffffa), 1.18-1.19 (0xfffffff0) and 1.20 on (0xfffffff1), either
 * byte order, 4- or 8-byte pointers.
 *
 * Owns nothing: the table points into the caller's bytes (an ELF file's
 * image), which must outlive it; a lookup allocates nothing and finds the
 * function by binary search.  Fails: cp_gopclntab_init and lookups return
 * -EINVAL with a one-line cp_error for bytes that are not such a table or an
 * offset, size or count that leads outside them (a corrupt or hostile
 * table): nothing is read outside the bytes given. */
#ifndef CP_GOPCLNTAB_H
#define CP_GOPCLNTAB_H

#include <gelf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CP_GOPCLNTAB_MAX_MEM 16

/* bytes of the program's memory at addr (a loaded segment's file part) */
struct cp_gopclntab_mem {
	uint64_t addr;
	const uint8_t *bytes;
	size_t size;
};

struct cp_gopclntab {
	const uint8_t *tab;
	size_t size;
	uint64_t addr; /* of tab */
	int version;   /* 12 (1.2-1.15), 116, 118, 120 (1.20 on) */
	bool be;       /* big-endian */
	uint8_t ptrsize, quantum;
	uint32_t nfunc, nfiles;
	uint64_t text; /* the base of the function entries (1.18 on) */
	/* the sub-tables, as [off, end) in tab */
	struct cp_gopclntab_part {
		size_t off, end;
	} names, cus, files, pcs, funcs;
	size_t functab, fieldsz, filetab12;
	uint64_t minpc, maxpc;
	/* for inline trees */
	struct cp_gopclntab_mem mem[CP_GOPCLNTAB_MAX_MEM];
	size_t nmem;
	uint64_t gofunc; /* the base of 1.18's function data offsets, 0: not found */
};

/* A frame of a pc: pointers into the table (NUL-terminated strings; file
 * NULL when the table has none), line 0 when none. */
struct cp_goframe {
	const char *func, *file;
	int64_t line;
};

/* The table in tab[0..size), mapped at addr; text is the address entries
 * of 1.18 on are relative to when the table does not say (its header's is
 * 0: the start of the Go text, runtime.text).  0 or -EINVAL. */
int cp_gopclntab_init(struct cp_gopclntab *t, const uint8_t *tab, size_t size, uint64_t addr, uint64_t text);
/* The program's memory (n regions, at most CP_GOPCLNTAB_MAX_MEM kept; the
 * bytes are not copied), where the inline trees are. */
void cp_gopclntab_set_memory(struct cp_gopclntab *t, const struct cp_gopclntab_mem *mem, size_t n);
/* Looks for the module data that describes t (Go 1.18 on) in
 * bytes[0..size), mapped at addr: true when found (its function data base
 * is then known, and with the memory the inline trees). */
bool cp_gopclntab_find_module(struct cp_gopclntab *t, const uint8_t *bytes, size_t size, uint64_t addr);
/* Whether lookups give inlined calls as frames of their own. */
bool cp_gopclntab_inlines(const struct cp_gopclntab *t);

/* The frames of pc (innermost first, the function last; at most max >= 1,
 * the innermost and the function kept when there are more), how many; 0
 * when no function holds pc; -EINVAL when the table is corrupt there.
 * [*lo, *hi) (addresses) holds pc and gets the same answer: within its
 * function (*entry) the run where its file, line and inline tree index
 * stay the same, else the gap between functions. */
int cp_gopclntab_lookup(const struct cp_gopclntab *t, uint64_t pc, struct cp_goframe *out, int max, uint64_t *entry,
			uint64_t *lo, uint64_t *hi);
/* Function i (< t->nfunc): its entry, end (the next one's entry) and
 * name.  0 or -EINVAL. */
int cp_gopclntab_func(const struct cp_gopclntab *t, uint32_t i, uint64_t *entry, uint64_t *end, const char **name);

/* The table of ELF file e, whose image (elf_rawfile) it points into:
 * section .gopclntab or .data.rel.ro.gopclntab, else (a Go binary: it has
 * .go.buildinfo or .note.go.buildid) the table's header in .data.rel.ro;
 * with the loaded segments as its memory and, for 1.18 on, the module data
 * looked for in .go.module, .noptrdata, .data.rel.ro and .data.  0,
 * -ENOENT (not a Go binary, or no table found) or -EINVAL. */
int cp_gopclntab_elf(struct cp_gopclntab *t, Elf *e);

#endif

/* SPDX-License-Identifier: MIT */
/* Go's function table, from the format's facts (the layouts of Go's
 * runtime/symtab.go and runtime2.go per version, as debug/gosym reads them):
 *
 *   header   magic (4 bytes), 0, 0, pc quantum, pointer size, then words
 *            (pointer-sized): 1.2: the function count, the function table
 *            follows; 1.16: functions, files, and the offsets of the name,
 *            compilation unit, file, pc-value and function tables; 1.18
 *            adds the text start before the offsets.
 *   ftab     nfunc + 1 pairs (entry, offset of the function's record),
 *            pointer-sized (entries absolute) before 1.18, 32-bit (entries
 *            relative to the text start) from 1.18 on; the last entry is
 *            the end of the last function.
 *   _func    entry (pointer-sized, 32-bit from 1.18 on), then 32-bit name
 *            offset, args, frame or deferreturn, pcsp, pcfile, pcln,
 *            npcdata, (1.16 on) the unit's offset in the unit table,
 *            (1.20 on) the start line, then 4 bytes ending with nfuncdata;
 *            then npcdata 32-bit pc-value table offsets, then nfuncdata
 *            function data: pointers (8-aligned on 64-bit) before 1.18,
 *            32-bit offsets from the module's gofunc from 1.18 on.
 *   pc-value tables: pairs of varints (zigzag value delta, pc delta in
 *            quanta) from the value -1 at the entry; a zero value delta
 *            but for the first ends the table.
 *   files    1.2: an index into a table of 32-bit offsets of names; 1.16
 *            on: an index into the unit's part of the unit table, whose
 *            32-bit entries are offsets in the file table (~0: none).
 *   inlining PCDATA 2 is the index into the function's inline tree,
 *            FUNCDATA 3; an entry names the inlined function (an offset in
 *            the name table) and the pc, from the entry, of an instruction
 *            at its call site (the caller's file and line, and its own
 *            index).  20-byte entries in 1.16-1.19, 16-byte from 1.20. */
#include "gopclntab.h"

#include <errno.h>
#include <string.h>

#include "../error.h"

#define PCDATA_INLTREE 2
#define FUNCDATA_INLTREE 3
/* inline steps followed for one pc: more is a cycle */
#define MAX_CHAIN 1024

static uint32_t get32(bool be, const uint8_t *p)
{
	if (be)
		return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
	return (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0];
}

static uint64_t getw(bool be, unsigned size, const uint8_t *p)
{
	if (size == 4)
		return get32(be, p);
	return be ? (uint64_t)get32(be, p) << 32 | get32(be, p + 4) : (uint64_t)get32(be, p + 4) << 32 | get32(be, p);
}

/* whether [off, off + len) lies in [0, size) */
static bool in(size_t size, uint64_t off, uint64_t len)
{
	return off <= size && len <= size - off;
}

/* the value of size bytes (4 or the pointer size) at off, which lies in the table */
static uint64_t at(const struct cp_gopclntab *t, size_t off, unsigned size)
{
	return getw(t->be, size, t->tab + off);
}

static bool rd32(const struct cp_gopclntab *t, uint64_t off, uint64_t end, uint32_t *v)
{
	if (end > t->size || !in((size_t)end, off, 4))
		return false;
	*v = get32(t->be, t->tab + off);
	return true;
}

/* the entry of function i <= nfunc (in the function table checked at init) */
static uint64_t ftab_pc(const struct cp_gopclntab *t, uint32_t i)
{
	uint64_t v = at(t, t->functab + (size_t)2 * i * t->fieldsz, (unsigned)t->fieldsz);

	return t->version >= 118 ? v + t->text : v;
}

/* The NUL-terminated string at off in part, or NULL. */
static const char *str_at(const struct cp_gopclntab *t, const struct cp_gopclntab_part *part, uint64_t off)
{
	size_t len = part->end - part->off;
	const uint8_t *s;

	if (off >= len)
		return NULL;
	s = t->tab + part->off + off;
	return memchr(s, 0, len - (size_t)off) ? (const char *)s : NULL;
}

/* each part's end: the start of the next part, else the table's end */
static void part_ends(struct cp_gopclntab *t)
{
	struct cp_gopclntab_part *p[] = { &t->names, &t->cus, &t->files, &t->pcs, &t->funcs };
	size_t n = sizeof(p) / sizeof(*p);

	for (size_t i = 0; i < n; i++) {
		p[i]->end = t->size;
		for (size_t j = 0; j < n; j++)
			if (p[j]->off > p[i]->off && p[j]->off < p[i]->end)
				p[i]->end = p[j]->off;
	}
}

int cp_gopclntab_init(struct cp_gopclntab *t, const uint8_t *tab, size_t size, uint64_t addr, uint64_t text)
{
	uint32_t le, be;
	uint64_t w[8], nfunc, nfiles = 0;
	unsigned nw, ps;
	size_t ftsize;

	memset(t, 0, sizeof(*t));
	if (!tab || size < 16)
		return cp_error(EINVAL, "Go function table: %zu bytes is too short for its header", size);
	le = get32(false, tab);
	be = get32(true, tab);
	if (le == 0xfffffffb || be == 0xfffffffb)
		t->version = 12;
	else if (le == 0xfffffffa || be == 0xfffffffa)
		t->version = 116;
	else if (le == 0xfffffff0 || be == 0xfffffff0)
		t->version = 118;
	else if (le == 0xfffffff1 || be == 0xfffffff1)
		t->version = 120;
	else
		return cp_error(EINVAL, "Go function table: unknown magic 0x%08x", le);
	t->be = be >= 0xfffffff0 && le < 0xfffffff0;
	if (tab[4] || tab[5] || (tab[6] != 1 && tab[6] != 2 && tab[6] != 4) || (tab[7] != 4 && tab[7] != 8))
		return cp_error(EINVAL, "Go function table: bad header (pc quantum %u, pointer size %u)", tab[6], tab[7]);
	t->tab = tab;
	t->size = size;
	t->addr = addr;
	t->quantum = tab[6];
	t->ptrsize = tab[7];
	ps = t->ptrsize;
	nw = t->version == 12 ? 1 : t->version == 116 ? 7 : 8;
	if (!in(size, 8, (uint64_t)nw * ps))
		return cp_error(EINVAL, "Go function table: %zu bytes is too short for its header", size);
	for (unsigned i = 0; i < nw; i++)
		w[i] = at(t, 8 + (size_t)i * ps, ps);
	nfunc = w[0];
	if (t->version == 12) {
		t->fieldsz = ps;
		t->functab = 8 + ps;
		t->names = t->pcs = t->funcs = (struct cp_gopclntab_part){ 0, size };
	} else {
		uint64_t *o = t->version == 116 ? &w[2] : &w[3];

		nfiles = w[1];
		if (t->version >= 118)
			t->text = w[2] ? w[2] : text;
		for (int i = 0; i < 5; i++)
			if (o[i] >= size)
				return cp_error(EINVAL, "Go function table: a part's offset (%#llx) is past its end (%#zx)",
						(unsigned long long)o[i], size);
		t->names.off = (size_t)o[0];
		t->cus.off = (size_t)o[1];
		t->files.off = (size_t)o[2];
		t->pcs.off = (size_t)o[3];
		t->funcs.off = (size_t)o[4];
		part_ends(t);
		t->fieldsz = t->version >= 118 ? 4 : ps;
		t->functab = t->funcs.off;
	}
	if (nfunc == 0 || nfunc >= size || nfiles >= size)
		return cp_error(EINVAL, "Go function table: %llu functions and %llu files in %zu bytes",
				(unsigned long long)nfunc, (unsigned long long)nfiles, size);
	t->nfunc = (uint32_t)nfunc;
	t->nfiles = (uint32_t)nfiles;
	ftsize = (size_t)(2 * nfunc + 1) * t->fieldsz;
	if (!in(t->funcs.end, t->functab, ftsize))
		return cp_error(EINVAL, "Go function table: its %u functions run past its end", t->nfunc);
	if (t->version == 12) {
		uint32_t fileoff, n;

		if (!rd32(t, t->functab + ftsize, size, &fileoff) || !rd32(t, fileoff, size, &n) ||
		    !in(size, fileoff, (uint64_t)n * 4))
			return cp_error(EINVAL, "Go function table: its file table is past its end");
		t->filetab12 = fileoff;
		t->nfiles = n;
	}
	t->minpc = ftab_pc(t, 0);
	t->maxpc = ftab_pc(t, t->nfunc);
	if (t->minpc > t->maxpc)
		return cp_error(EINVAL, "Go function table: its functions end (%#llx) before they start (%#llx)",
				(unsigned long long)t->maxpc, (unsigned long long)t->minpc);
	return 0;
}

void cp_gopclntab_set_memory(struct cp_gopclntab *t, const struct cp_gopclntab_mem *mem, size_t n)
{
	t->nmem = n < CP_GOPCLNTAB_MAX_MEM ? n : CP_GOPCLNTAB_MAX_MEM;
	memcpy(t->mem, mem, t->nmem * sizeof(*mem));
}

bool cp_gopclntab_find_module(struct cp_gopclntab *t, const uint8_t *bytes, size_t size, uint64_t addr)
{
	unsigned ps = t->ptrsize;
	/* the module data's words: pcHeader, then slices (pointer, length,
	 * capacity) of the names, units, files, pc tables, function records
	 * and function table, ..., text at 22, gofunc at 38 (1.18, 1.19) or,
	 * past the coverage counters, at 40 */
	size_t gi = t->version == 118 ? 38 : 40, need = (gi + 1) * ps;

	if (t->version < 118 || !bytes)
		return false;
	for (size_t i = (ps - addr % ps) % ps; in(size, i, need); i += ps) {
		const uint8_t *m = bytes + i;
#define W(k) getw(t->be, ps, m + (size_t)(k) * ps)
		if (W(0) != t->addr || W(1) != t->addr + t->names.off || W(4) != t->addr + t->cus.off ||
		    W(7) != t->addr + t->files.off || W(10) != t->addr + t->pcs.off ||
		    W(13) != t->addr + t->funcs.off || W(16) != t->addr + t->functab || W(17) != (uint64_t)t->nfunc + 1 ||
		    W(22) != t->text || !W(gi))
			continue;
		t->gofunc = W(gi);
#undef W
		return true;
	}
	return false;
}

bool cp_gopclntab_inlines(const struct cp_gopclntab *t)
{
	return t->nmem && (t->version == 116 || (t->version >= 118 && t->gofunc));
}

/* n bytes of the program's memory at addr, or NULL */
static const uint8_t *mem_at(const struct cp_gopclntab *t, uint64_t addr, size_t n)
{
	for (size_t i = 0; i < t->nmem; i++)
		if (addr >= t->mem[i].addr && in(t->mem[i].size, addr - t->mem[i].addr, n))
			return t->mem[i].bytes + (addr - t->mem[i].addr);
	return NULL;
}

/* a function's record */
struct fn {
	uint64_t entry;
	uint32_t nameoff, pcfile, pcln, npcdata, cuoff;
	uint8_t nfuncdata;
	size_t tail; /* where its pc-value table offsets start */
};

static int read_func(const struct cp_gopclntab *t, uint32_t i, struct fn *f)
{
	uint64_t off = at(t, t->functab + ((size_t)2 * i + 1) * t->fieldsz, (unsigned)t->fieldsz);
	size_t sz0 = t->version >= 118 ? 4 : t->ptrsize;
	size_t hdr = sz0 + (t->version == 12 ? 32 : t->version == 120 ? 40 : 36), p;

	/* (1.2's records are at offsets from the table's start, later ones from the records') */
	if (!in(t->funcs.end - t->funcs.off, off, hdr))
		return cp_error(EINVAL, "Go function table: function %u's record (%#llx) is past its end", i,
				(unsigned long long)off);
	p = t->funcs.off + (size_t)off;
	f->entry = at(t, p, (unsigned)sz0);
	if (t->version >= 118)
		f->entry += t->text;
	f->nameoff = (uint32_t)at(t, p + sz0, 4);
	f->pcfile = (uint32_t)at(t, p + sz0 + 16, 4);
	f->pcln = (uint32_t)at(t, p + sz0 + 20, 4);
	f->npcdata = (uint32_t)at(t, p + sz0 + 24, 4);
	f->cuoff = t->version >= 116 ? (uint32_t)at(t, p + sz0 + 28, 4) : 0;
	f->nfuncdata = t->version >= 116 ? t->tab[p + hdr - 1] : 0;
	f->tail = p + hdr;
	if (f->entry != ftab_pc(t, i))
		return cp_error(EINVAL, "Go function table: function %u's entry %#llx is not its table's %#llx", i,
				(unsigned long long)f->entry, (unsigned long long)ftab_pc(t, i));
	return 0;
}

static int read_varint(const struct cp_gopclntab *t, size_t *p, uint32_t *out)
{
	uint32_t v = 0;

	for (unsigned shift = 0; shift < 35; shift += 7) {
		uint8_t b;

		if (*p >= t->pcs.end)
			return -1;
		b = t->tab[(*p)++];
		v |= (uint32_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*out = v;
			return 0;
		}
	}
	return -1;
}

/* The value at pc of the pc-value table at off in the pc tables, for the
 * function whose entry is entry, into *val (-1: none, as when off is 0 or
 * the table ends before pc); [*lo, *hi) is cut to the run that holds pc.
 * 0 or -EINVAL. */
static int pcvalue(const struct cp_gopclntab *t, uint32_t off, uint64_t entry, uint64_t pc, int32_t *val, uint64_t *lo,
		   uint64_t *hi)
{
	uint64_t a = entry;
	uint32_t v = UINT32_MAX;
	size_t p;

	*val = -1;
	if (off == 0)
		return 0;
	if (off >= t->pcs.end - t->pcs.off)
		return cp_error(EINVAL, "Go function table: a pc-value table's offset (%#x) is past its end", off);
	p = t->pcs.off + off;
	for (bool first = true;; first = false) {
		uint32_t uv, pcd;
		uint64_t step;

		if (read_varint(t, &p, &uv))
			return cp_error(EINVAL, "Go function table: a pc-value table runs past its end");
		if (uv == 0 && !first)
			break;
		v += uv & 1 ? ~(uv >> 1) : uv >> 1;
		if (read_varint(t, &p, &pcd))
			return cp_error(EINVAL, "Go function table: a pc-value table runs past its end");
		step = (uint64_t)pcd * t->quantum;
		if (step > UINT64_MAX - a)
			return cp_error(EINVAL, "Go function table: a pc-value table runs past the address space");
		if (pc < a + step) {
			*val = (int32_t)v;
			*lo = a > *lo ? a : *lo;
			*hi = a + step < *hi ? a + step : *hi;
			return 0;
		}
		a += step;
	}
	*lo = a > *lo ? a : *lo;
	return 0;
}

/* The offset of pc-value table k of f (0: none), or -EINVAL. */
static int64_t pcdata_off(const struct cp_gopclntab *t, const struct fn *f, uint32_t k)
{
	uint32_t v;

	if (k >= f->npcdata)
		return 0;
	if (!rd32(t, (uint64_t)f->tail + 4ull * k, t->funcs.end, &v))
		return cp_error(EINVAL, "Go function table: a function's pc-value tables are past its end");
	return v;
}

/* The address of f's inline tree (0: none), or -EINVAL. */
static int64_t inline_tree(const struct cp_gopclntab *t, const struct fn *f)
{
	uint64_t base = (uint64_t)f->tail + 4ull * f->npcdata, v;
	uint32_t off;

	if (!cp_gopclntab_inlines(t) || f->nfuncdata <= FUNCDATA_INLTREE)
		return 0;
	if (t->version >= 118) {
		if (!rd32(t, base + 4 * FUNCDATA_INLTREE, t->funcs.end, &off))
			return cp_error(EINVAL, "Go function table: a function's data is past its end");
		v = off == UINT32_MAX ? 0 : t->gofunc + off;
	} else { /* pointers, 8-aligned in memory on 64-bit */
		if (t->ptrsize == 8 && ((t->addr + base) & 4))
			base += 4;
		base += (uint64_t)t->ptrsize * FUNCDATA_INLTREE;
		if (!in(t->funcs.end, base, t->ptrsize))
			return cp_error(EINVAL, "Go function table: a function's data is past its end");
		v = at(t, (size_t)base, t->ptrsize);
	}
	return v > INT64_MAX ? cp_error(EINVAL, "Go function table: an inline tree at %#llx", (unsigned long long)v)
			     : (int64_t)v;
}

/* The file of f whose number is fno, into *file (NULL: none); 0 or -EINVAL */
static int file_of(const struct cp_gopclntab *t, const struct fn *f, int32_t fno, const char **file)
{
	uint32_t off;

	*file = NULL;
	if (t->version == 12) {
		if (fno <= 0 || (uint32_t)fno >= t->nfiles)
			return 0;
		off = (uint32_t)at(t, t->filetab12 + 4 * (size_t)fno, 4);
		*file = str_at(t, &t->names, off);
	} else {
		if (fno < 0)
			return 0;
		if (!rd32(t, t->cus.off + 4 * ((uint64_t)f->cuoff + (uint32_t)fno), t->cus.end, &off))
			return cp_error(EINVAL, "Go function table: file %d of a unit at %u is past the unit table", fno,
					f->cuoff);
		if (off == UINT32_MAX)
			return 0;
		*file = str_at(t, &t->files, off);
	}
	return *file ? 0 : cp_error(EINVAL, "Go function table: a file name's offset (%#x) is past its end", off);
}

int cp_gopclntab_func(const struct cp_gopclntab *t, uint32_t i, uint64_t *entry, uint64_t *end, const char **name)
{
	struct fn f;
	int err;

	if (i >= t->nfunc)
		return cp_error(EINVAL, "Go function table: no function %u (it has %u)", i, t->nfunc);
	if ((err = read_func(t, i, &f)))
		return err;
	*entry = f.entry;
	*end = ftab_pc(t, i + 1);
	if (!(*name = str_at(t, &t->names, f.nameoff)))
		return cp_error(EINVAL, "Go function table: function %u's name (%#x) is past its end", i, f.nameoff);
	return 0;
}

int cp_gopclntab_lookup(const struct cp_gopclntab *t, uint64_t pc, struct cp_goframe *out, int max, uint64_t *entry,
			uint64_t *lo, uint64_t *hi)
{
	uint32_t a = 0, b = t->nfunc;
	uint64_t start, end, at_pc = pc;
	int64_t tree = 0, inl = 0;
	const char *fname;
	struct fn f;
	int n = 0, err;

	if (max < 1)
		return cp_error(EINVAL, "Go function table: no room for a frame");
	if (pc < t->minpc || pc >= t->maxpc) {
		*lo = pc < t->minpc ? 0 : t->maxpc;
		*hi = pc < t->minpc ? t->minpc : UINT64_MAX;
		return 0;
	}
	while (b - a > 1) { /* the last function starting at or before pc */
		uint32_t mid = a + (b - a) / 2;

		if (ftab_pc(t, mid) <= pc)
			a = mid;
		else
			b = mid;
	}
	start = ftab_pc(t, a);
	end = ftab_pc(t, a + 1);
	if (!(start <= pc && pc < end))
		return cp_error(EINVAL, "Go function table: its functions are not sorted (%#llx in none)",
				(unsigned long long)pc);
	if ((err = read_func(t, a, &f)))
		return err;
	if (!(fname = str_at(t, &t->names, f.nameoff)))
		return cp_error(EINVAL, "Go function table: function %u's name (%#x) is past its end", a, f.nameoff);
	*entry = start;
	*lo = start;
	*hi = end;
	if ((tree = inline_tree(t, &f)) < 0 || (tree && (inl = pcdata_off(t, &f, PCDATA_INLTREE)) < 0))
		return (int)(tree < 0 ? tree : inl);
	for (int step = 0;; step++) {
		uint64_t l = start, h = end, *pl = step ? &l : lo, *ph = step ? &h : hi;
		int32_t fno, line, ix = -1;
		const uint8_t *call;
		const char *file, *name;
		uint32_t esz = t->version >= 120 ? 16 : 20, noff, poff;

		if ((err = pcvalue(t, f.pcfile, start, at_pc, &fno, pl, ph)) ||
		    (err = pcvalue(t, f.pcln, start, at_pc, &line, pl, ph)) ||
		    (inl && (err = pcvalue(t, (uint32_t)inl, start, at_pc, &ix, pl, ph))) ||
		    (err = file_of(t, &f, fno, &file)))
			return err;
		if (ix < 0) {
			out[n].func = fname;
			out[n].file = file;
			out[n].line = line > 0 ? line : 0;
			return n + 1;
		}
		if (step >= MAX_CHAIN)
			return cp_error(EINVAL, "Go function table: the inline tree of %s has a cycle", fname);
		if (!(call = mem_at(t, (uint64_t)tree + (uint64_t)ix * esz, esz)))
			return cp_error(EINVAL, "Go function table: inline tree entry %d of %s is outside the program", ix,
					fname);
		noff = get32(t->be, call + (esz == 16 ? 4 : 12));
		poff = get32(t->be, call + (esz == 16 ? 8 : 16));
		if (!(name = str_at(t, &t->names, noff)))
			return cp_error(EINVAL, "Go function table: an inlined function's name (%#x) is past its end", noff);
		if (poff >= end - start)
			return cp_error(EINVAL, "Go function table: an inlined call's site (%#x) is outside %s", poff, fname);
		if (n < max - 1) { /* (past that the innermost are kept, and the function) */
			out[n].func = name;
			out[n].file = file;
			out[n].line = line > 0 ? line : 0;
			n++;
		}
		at_pc = start + poff;
	}
}

/* ---- ELF files ---- */

/* the bytes of section sh in the file image img (size bytes), or NULL */
static const uint8_t *section_bytes(const uint8_t *img, size_t size, const GElf_Shdr *sh)
{
	if (!sh->sh_size || sh->sh_type == SHT_NOBITS || (sh->sh_flags & SHF_COMPRESSED) ||
	    !in(size, sh->sh_offset, sh->sh_size))
		return NULL;
	return img + sh->sh_offset;
}

int cp_gopclntab_elf(struct cp_gopclntab *t, Elf *e)
{
	static const char *const modsecs[] = { ".go.module", ".noptrdata", ".data.rel.ro", ".data" };
	struct cp_gopclntab_mem mem[CP_GOPCLNTAB_MAX_MEM];
	GElf_Shdr tab = { 0 }, text = { 0 }, relro = { 0 }, mods[4] = { { 0 } };
	size_t shstrndx, isize = 0, nph = 0, nmem = 0;
	const uint8_t *img = e ? (const uint8_t *)elf_rawfile(e, &isize) : NULL, *b;
	bool go = false;
	Elf_Scn *scn = NULL;
	int err;

	memset(t, 0, sizeof(*t));
	if (!img || elf_kind(e) != ELF_K_ELF || elf_getshdrstrndx(e, &shstrndx) != 0)
		return cp_error(ENOENT, "no Go function table: not an ELF file with sections");
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh) || !(name = elf_strptr(e, shstrndx, sh.sh_name)))
			continue;
		if (!strcmp(name, ".gopclntab") || !strcmp(name, ".data.rel.ro.gopclntab"))
			tab = sh, go = true;
		else if (!strcmp(name, ".text"))
			text = sh;
		else if (!strcmp(name, ".go.buildinfo") || !strcmp(name, ".note.go.buildid"))
			go = true;
		if (!strcmp(name, ".data.rel.ro"))
			relro = sh;
		for (size_t k = 0; k < sizeof(modsecs) / sizeof(*modsecs); k++)
			if (!strcmp(name, modsecs[k]))
				mods[k] = sh;
	}
	if (!go)
		return cp_error(ENOENT, "no Go function table: not a Go binary");
	if ((b = section_bytes(img, isize, &tab))) {
		if ((err = cp_gopclntab_init(t, b, tab.sh_size, tab.sh_addr, text.sh_addr)))
			return err;
	} else if ((b = section_bytes(img, isize, &relro))) {
		/* linked by the system's linker as a PIE: the table is in .data.rel.ro */
		size_t i;

		for (i = 0; i + 16 <= relro.sh_size; i += 4) {
			uint32_t m = get32(false, b + i), mb = get32(true, b + i);

			if (((m | 0xb) == 0xfffffffb || (mb | 0xb) == 0xfffffffb) && b[i + 4] == 0 && b[i + 5] == 0 &&
			    cp_gopclntab_init(t, b + i, relro.sh_size - i, relro.sh_addr + i, text.sh_addr) == 0)
				break;
			cp_error_clear();
		}
		if (i + 16 > relro.sh_size)
			return cp_error(ENOENT, "no Go function table: none in .data.rel.ro");
	} else {
		return cp_error(ENOENT, "no Go function table: no section holds it");
	}
	/* the program's memory: the file's part of each loaded segment */
	if (elf_getphdrnum(e, &nph) == 0) {
		for (size_t k = 0; k < nph && nmem < CP_GOPCLNTAB_MAX_MEM; k++) {
			GElf_Phdr ph;

			if (gelf_getphdr(e, (int)k, &ph) && ph.p_type == PT_LOAD && ph.p_filesz &&
			    in(isize, ph.p_offset, ph.p_filesz))
				mem[nmem++] = (struct cp_gopclntab_mem){ ph.p_vaddr, img + ph.p_offset, ph.p_filesz };
		}
	}
	cp_gopclntab_set_memory(t, mem, nmem);
	for (size_t k = 0; t->version >= 118 && k < sizeof(modsecs) / sizeof(*modsecs); k++)
		if ((b = section_bytes(img, isize, &mods[k])) && cp_gopclntab_find_module(t, b, mods[k].sh_size, mods[k].sh_addr))
			break;
	return 0;
}

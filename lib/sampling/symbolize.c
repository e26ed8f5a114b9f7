/* SPDX-License-Identifier: MIT */
#include "symbolize.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "debuginfod.h"
#include "../error.h"
#include "gopclntab.h"
#include "../index.h"
#include "locmemo.h"
#include "modcache.h"
#include "scopes.h"
#include "spans.h"
#include "../strtab.h"
#include "../util.h"

/* libstdc++'s demangler (C++ and, for the legacy scheme, Rust names) */
extern char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

struct symline {
	uint32_t name, file; /* ids in s->strs */
	int64_t line;
};

/* what an address is named, at the id of its span in s->spans (the module
 * key's id in s->strs, and the file offset (user) or address (kernel)):
 * n lines from first, and what they hold (FOUND_*: what the profile's
 * mapping then says it has) */
struct entry {
	uint32_t first;
	uint16_t n;
	uint8_t found;
};

#define FOUND_FUNCTIONS 1
#define FOUND_FILENAMES 2
#define FOUND_LINE_NUMBERS 4
#define FOUND_INLINE_FRAMES 8 /* (the lines came from where inlined calls are told) */

#define MAX_MODS 256
#define MAX_LATE 64

/* A binary read before its debug file landed (debuginfod) */
struct late {
	char key[41];
	char *path;
	int fd;      /* the binary, for when its processes are gone */
	bool landed; /* its session was dropped, its addresses looked up again */
};

struct cp_symbolizer {
	struct cp_unwinder *u;
	struct cp_modcache *mc; /* binaries, with their separate debug files: the unwinder's */
	bool own_mc;
	struct cp_strtab strs;
	struct entry *e; /* at the ids of s->spans */
	size_t cap, max;
	struct symline *lines;
	size_t nlines, linecap;
	struct cp_spans spans;
	uint32_t gen; /* bumped when the cache starts over */
	struct cp_ksyms *ksyms;
	bool ksyms_tried;
	uint32_t kernel_mod;
	struct cp_symbolize_counts counts;
	struct cp_debuginfod *dbgd;
	uint64_t dbgd_gen;
	struct late *late;
	size_t nlate;
	struct cp_locmemo *memo; /* the owner's, or NULL */
	/* names made already, at ids of strs: a function symbol's (by its
	 * session's serial and its place among the session's symbols: its name
	 * read again with pread and demangled cost more than the rest of a
	 * lookup in a binary with DWARF, where each address is looked up) and
	 * a mangled name's demangled one (by the mangled name's id) */
	struct named {
		uint64_t key;
		uint32_t name; /* + 1; 0: none (an empty or unreadable name) */
	} *named;
	size_t nnamed, namedcap;
	struct cp_index namedix;
};

#define NAMED_DEMANGLED (1ull << 63)

/* the memo's key for a binary (its key's id): no pid has bit 30 */
#define MEMO_MOD (1u << 30)

#define MAX_INLINE 32

struct cp_symbolizer *cp_symbolizer_new(struct cp_unwinder *u, size_t max_entries)
{
	struct cp_symbolizer *s = calloc(1, sizeof(*s));
	int64_t id;

	if (!s)
		return NULL;
	s->u = u;
	s->max = max_entries ? max_entries : 1u << 20;
	if (cp_strtab_init(&s->strs) || (id = cp_strtab_intern(&s->strs, "[kernel]", 8)) < 0) {
		cp_symbolizer_free(s);
		errno = ENOMEM;
		return NULL;
	}
	s->kernel_mod = (uint32_t)id;
	s->own_mc = !u;
	s->mc = u ? cp_unwind_modcache(u) : cp_modcache_new(MAX_MODS, NULL, true, -1);
	if (!s->mc) {
		cp_symbolizer_free(s);
		errno = ENOMEM;
		return NULL;
	}
	return s;
}

void cp_symbolizer_free(struct cp_symbolizer *s)
{
	if (!s)
		return;
	cp_strtab_release(&s->strs);
	free(s->e);
	free(s->lines);
	cp_spans_release(&s->spans);
	free(s->named);
	cp_index_release(&s->namedix);
	cp_ksyms_free(s->ksyms);
	if (s->own_mc)
		cp_modcache_free(s->mc);
	for (size_t i = 0; i < s->nlate; i++) {
		free(s->late[i].path);
		if (s->late[i].fd >= 0)
			close(s->late[i].fd);
	}
	free(s->late);
	free(s);
}

void cp_symbolize_counts(const struct cp_symbolizer *s, struct cp_symbolize_counts *c)
{
	*c = s->counts;
}

static const struct entry *cache_find(struct cp_symbolizer *s, uint32_t mod, uint64_t off)
{
	uint32_t id = cp_spans_find(&s->spans, mod, off);

	return id == UINT32_MAX ? NULL : &s->e[id];
}

/* Empty the cache (it is full); module keys are re-interned as needed. */
static void cache_reset(struct cp_symbolizer *s)
{
	int64_t id;

	cp_strtab_release(&s->strs);
	cp_spans_reset(&s->spans);
	s->nlines = 0;
	cp_index_release(&s->namedix);
	s->nnamed = 0;
	s->gen++;
	if (s->memo) /* (its module ids are the cache's) */
		cp_locmemo_clear(s->memo);
	cp_strtab_init(&s->strs);
	id = cp_strtab_intern(&s->strs, "[kernel]", 8);
	s->kernel_mod = id < 0 ? 0 : (uint32_t)id;
}

void cp_symbolize_forget(struct cp_symbolizer *s)
{
	cache_reset(s);
	free(s->e);
	free(s->lines);
	free(s->named);
	s->e = NULL;
	s->lines = NULL;
	s->named = NULL;
	s->cap = s->linecap = s->namedcap = 0;
}

void cp_symbolize_release_pages(struct cp_symbolizer *s)
{
	if (s)
		cp_ksyms_release_pages(s->ksyms);
}

/* What lines l[0..n) hold (FOUND_*), inline_frames: whether they came from
 * where inlined calls are told (DWARF's scopes, Go's inline trees). */
static uint8_t found_in(const struct symline *l, uint32_t n, bool inline_frames)
{
	uint8_t f = n && inline_frames ? FOUND_INLINE_FRAMES : 0;

	for (uint32_t i = 0; i < n; i++)
		f |= (l[i].name ? FOUND_FUNCTIONS : 0) | (l[i].file ? FOUND_FILENAMES : 0) |
		     (l[i].line > 0 ? FOUND_LINE_NUMBERS : 0);
	return f;
}

/* The n lines off of mod is named, which hold for [lo, hi) too (with
 * inline_frames: see found_in). */
static const struct entry *cache_add(struct cp_symbolizer *s, uint32_t mod, uint64_t off, uint64_t lo, uint64_t hi,
				     const struct symline *l, uint32_t n, bool inline_frames)
{
	int64_t id;

	if (cp_grow((void **)&s->e, &s->cap, s->spans.n + 1, sizeof(*s->e)) ||
	    cp_grow((void **)&s->lines, &s->linecap, s->nlines + n, sizeof(*s->lines)) ||
	    (id = cp_spans_add(&s->spans, mod, off, lo, hi)) < 0)
		return NULL;
	if (n)
		memcpy(s->lines + s->nlines, l, n * sizeof(*l));
	s->e[id].first = (uint32_t)s->nlines;
	s->e[id].n = (uint16_t)n;
	s->e[id].found = found_in(l, n, inline_frames);
	s->nlines += n;
	return &s->e[id];
}

static uint32_t intern(struct cp_symbolizer *s, const char *str)
{
	int64_t id = str ? cp_strtab_intern(&s->strs, str, strlen(str)) : 0;

	return id < 0 ? 0 : (uint32_t)id;
}

static int named_eq(const void *ctx, uint32_t id, const void *key)
{
	return ((const struct cp_symbolizer *)ctx)->named[id].key == *(const uint64_t *)key;
}

/* key's name: 1 when made (*id), 0 when it has none, -1 when not made yet */
static int named_get(struct cp_symbolizer *s, uint64_t key, uint32_t *id)
{
	uint32_t i = cp_index_find(&s->namedix, (uint32_t)cp_hash_u64(key, 0), named_eq, s, &key);

	if (i == UINT32_MAX)
		return -1;
	*id = s->named[i].name ? s->named[i].name - 1 : 0;
	return s->named[i].name != 0;
}

/* key's name is id (some: else none); out of memory, it is made again next time */
static void named_put(struct cp_symbolizer *s, uint64_t key, uint32_t id, bool some)
{
	if (s->nnamed >= UINT32_MAX - 1 || cp_grow((void **)&s->named, &s->namedcap, s->nnamed + 1, sizeof(*s->named)) ||
	    cp_index_add(&s->namedix, (uint32_t)cp_hash_u64(key, 0), (uint32_t)s->nnamed))
		return;
	s->named[s->nnamed].key = key;
	s->named[s->nnamed].name = some ? id + 1 : 0;
	s->nnamed++;
}

static uint32_t intern_name(struct cp_symbolizer *s, const char *name)
{
	uint32_t id;
	uint64_t key;
	char *d;
	int status = -1;

	if (!name)
		return 0;
	/* symbol versions ("memcpy@@GLIBC_2.14") are not part of the name */
	if ((d = strchr(name, '@')) && d != name) {
		char buf[512];
		size_t n = (size_t)(d - name);

		if (n < sizeof(buf)) {
			memcpy(buf, name, n);
			buf[n] = 0;
			return intern_name(s, buf);
		}
	}
	if (name[0] != '_' || name[1] != 'Z')
		return intern(s, name);
	key = NAMED_DEMANGLED | intern(s, name);
	if (named_get(s, key, &id) > 0)
		return id;
	d = __cxa_demangle(name, NULL, NULL, &status);
	s->counts.demangled++;
	id = intern(s, status == 0 && d ? d : name);
	free(d);
	named_put(s, key, id, true);
	return id;
}

static const char *die_name(Dwarf_Die *die)
{
	Dwarf_Attribute a;
	const char *n = NULL;

	if (dwarf_attr_integrate(die, DW_AT_linkage_name, &a) || dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &a))
		n = dwarf_formstring(&a);
	return n ? n : dwarf_diename(die);
}

/* While sorting, a symbol's preference among those at one address rides
 * in the top bits of its index: its binding (global 0, weak 1, local 2);
 * whether its name has a clone suffix ('.') is read after (run_winner). */
#define SYM_IDX_BITS 28
#define SYM_IDX_MASK ((1u << SYM_IDX_BITS) - 1)
#define SYM_RANK_SHIFT SYM_IDX_BITS

/* by address; at one address, sized symbols first, then by binding (global,
 * weak, local: the rank) */
static int modsym_cmp(const void *a, const void *b)
{
	const struct cp_modsym *x = a, *y = b;
	uint32_t px = x->idx >> SYM_RANK_SHIFT, py = y->idx >> SYM_RANK_SHIFT;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	if ((x->size == 0) != (y->size == 0))
		return x->size == 0 ? 1 : -1;
	return px == py ? 0 : px < py ? -1 : 1;
}

static const char *name_at(struct cp_mod *sm, uint32_t off, char *buf, size_t cap);

/* v[0..n) in modsym_cmp's order by a stable radix sort: first the tie-break (sized, then the rank),
 * then the address a byte at a time, the bytes that every address shares skipped.  A new binary's
 * symbols are sorted when it is first named (node's 90,000 on every start of a storm's first
 * seconds): qsort's comparisons took 14% of the recorder's CPU there, this a few percent.  qsort
 * when there is no memory for the copy. */
static void sort_syms(struct cp_modsym *v, size_t n)
{
	struct cp_modsym *tmp, *src = v, *dst;
	uint64_t all_or = 0, all_and = UINT64_MAX;
	size_t count[256];

	if (n < 64 || !(tmp = malloc(n * sizeof(*tmp)))) {
		cp_qsort(v, n, sizeof(*v), modsym_cmp);
		return;
	}
	dst = tmp;
	/* the tie-break: (size 0) << 2 | rank, 3 bits */
	memset(count, 0, sizeof(count));
	for (size_t i = 0; i < n; i++) {
		count[(v[i].size == 0) << 2 | v[i].idx >> SYM_RANK_SHIFT]++;
		all_or |= v[i].addr;
		all_and &= v[i].addr;
	}
	for (size_t b = 0, sum = 0; b < 8; b++) {
		size_t c = count[b];

		count[b] = sum;
		sum += c;
	}
	for (size_t i = 0; i < n; i++)
		dst[count[(src[i].size == 0) << 2 | src[i].idx >> SYM_RANK_SHIFT]++] = src[i];
	src = tmp;
	dst = v;
	for (unsigned shift = 0; shift < 64; shift += 8) {
		struct cp_modsym *t;

		if (!(((all_or ^ all_and) >> shift) & 0xff))
			continue; /* every address has this byte */
		memset(count, 0, sizeof(count));
		for (size_t i = 0; i < n; i++)
			count[(src[i].addr >> shift) & 0xff]++;
		for (size_t b = 0, sum = 0; b < 256; b++) {
			size_t c = count[b];

			count[b] = sum;
			sum += c;
		}
		for (size_t i = 0; i < n; i++)
			dst[count[(src[i].addr >> shift) & 0xff]++] = src[i];
		t = src;
		src = dst;
		dst = t;
	}
	if (src != v)
		memcpy(v, src, n * sizeof(*v));
	free(tmp);
}

/* Whether name lies in the file image img (size bytes) at an offset a
 * uint32_t holds: *off */
static bool in_image(const char *name, const char *img, size_t size, uint32_t *off)
{
	if (!name || !img || name < img || name >= img + size || (uint64_t)(name - img) > UINT32_MAX)
		return false;
	*off = (uint32_t)(name - img);
	return true;
}

/* the symbol of sorted run v[0..n) (one address) that names it: the first,
 * or among those as good as the first, one without a '.' (a clone's suffix:
 * foo.cold, foo.isra.0).  Only such ties have their names read, and with
 * pread where the name is in the file img (size bytes) maps: reading them
 * in the mapping faults in 64 KB around each, and node's 6,500 ties brought
 * in most of its 7 MB string table. */
static size_t run_winner(struct cp_mod *sm, const struct cp_modsym *v, size_t n, const char *img, size_t size)
{
	char buf[4096];

	for (size_t i = 0; n > 1 && i < n && !modsym_cmp(&v[0], &v[i]); i++) {
		GElf_Sym sym;
		GElf_Addr a;
		const char *name = dwfl_module_getsym_info(sm->mod, (int)(v[i].idx & SYM_IDX_MASK), &sym, &a, NULL,
							   NULL, NULL);
		uint32_t off;

		if (sm->fd >= 0 && in_image(name, img, size, &off))
			name = name_at(sm, off, buf, sizeof(buf));
		if (name && *name && !strchr(name, '.'))
			return i;
	}
	return 0;
}

/* When every name is in the binary's own file (not in a debug file, nor
 * in a decompressed .gnu_debugdata), each symbol's index is replaced by the
 * name's offset in the file, read with pread at lookup (modcache.h says why). */
static void names_at(struct cp_mod *sm)
{
	Dwarf_Addr bias;
	Elf *e = dwfl_module_getelf(sm->mod, &bias);
	size_t size = 0;
	const char *img = e ? elf_rawfile(e, &size) : NULL;
	uint32_t *off;

	if (sm->fd < 0 || !img || !(off = malloc(sm->nsyms * sizeof(*off))))
		return;
	for (size_t i = 0; i < sm->nsyms; i++) {
		GElf_Sym sym;
		GElf_Addr a;
		/* the name's address: libdw does not read the name itself */
		const char *name = dwfl_module_getsym_info(sm->mod, (int)sm->syms[i].idx, &sym, &a, NULL, NULL, NULL);

		if (!in_image(name, img, size, &off[i])) {
			free(off);
			return;
		}
	}
	for (size_t i = 0; i < sm->nsyms; i++)
		sm->syms[i].idx = off[i];
	sm->names_at = true;
	free(off);
}

static void read_syms(struct cp_mod *sm)
{
	int n = dwfl_module_getsymtab(sm->mod);
	size_t k = 0, size = 0;
	Dwarf_Addr bias;
	const char *img;
	Elf *e;
	struct cp_modsym *shrunk;

	sm->syms_read = true;
	if (n <= 1 || (uint32_t)n > SYM_IDX_MASK || !(sm->syms = malloc((size_t)n * sizeof(*sm->syms))))
		return;
	for (int i = 1; i < n; i++) {
		GElf_Sym sym;
		GElf_Addr addr;
		const char *name = dwfl_module_getsym_info(sm->mod, i, &sym, &addr, NULL, NULL, NULL);
		int type = GELF_ST_TYPE(sym.st_info), bind = GELF_ST_BIND(sym.st_info);
		uint32_t rank = bind == STB_GLOBAL ? 0 : bind == STB_WEAK ? 1 : 2;

		/* (the name's address only: its bytes are not read, an empty one is left out at lookup) */
		if (!name || addr == 0 || sym.st_shndx == SHN_UNDEF || (type != STT_FUNC && type != STT_GNU_IFUNC))
			continue;
		sm->syms[sm->nsyms].addr = addr;
		sm->syms[sm->nsyms].size = sym.st_size > UINT32_MAX ? UINT32_MAX : (uint32_t)sym.st_size;
		sm->syms[sm->nsyms].idx = (uint32_t)i | rank << SYM_RANK_SHIFT;
		sm->nsyms++;
	}
	if (!sm->nsyms) {
		free(sm->syms);
		sm->syms = NULL;
		return;
	}
	sort_syms(sm->syms, sm->nsyms);
	/* one symbol per address */
	e = dwfl_module_getelf(sm->mod, &bias);
	img = e ? elf_rawfile(e, &size) : NULL;
	for (size_t i = 0, j; i < sm->nsyms; i = j) {
		for (j = i + 1; j < sm->nsyms && sm->syms[j].addr == sm->syms[i].addr; j++)
			;
		sm->syms[k++] = sm->syms[i + run_winner(sm, sm->syms + i, j - i, img, size)];
	}
	sm->nsyms = k;
	for (size_t i = 0; i < sm->nsyms; i++)
		sm->syms[i].idx &= SYM_IDX_MASK;
	if ((shrunk = realloc(sm->syms, sm->nsyms * sizeof(*sm->syms))))
		sm->syms = shrunk;
	cp_sparse_build(&sm->symx, sm->syms, sm->nsyms, sizeof(*sm->syms));
	sm->bytes += sm->symx.n * sizeof(*sm->symx.keys);
	names_at(sm);
	/* the names stay in the file's image: its pages, touched once by this
	 * scan, come back as lookups need them */
	cp_mod_release_pages(sm);
	sm->bytes += sm->nsyms * sizeof(*sm->syms);
}

/* The name at off in sm's file, into buf (cap > 1): NULL if unreadable. */
static const char *name_at(struct cp_mod *sm, uint32_t off, char *buf, size_t cap)
{
	size_t have = 0;

	/* most names are short: a first read of 256 bytes, then the rest */
	for (size_t want = cap < 256 ? cap - 1 : 255; have < cap - 1; want = cap - 1 - have) {
		ssize_t n = pread(sm->fd, buf + have, want, (off_t)off + (off_t)have);

		if (n <= 0)
			break;
		if (memchr(buf + have, 0, (size_t)n))
			return buf;
		have += (size_t)n;
	}
	if (!have)
		return NULL;
	buf[have] = 0; /* longer than the buffer: cut */
	return buf;
}

/* The function symbol at addr, or NULL; [*lo, *hi): the addresses it is the
 * answer for (NULL: the gap between symbols that holds addr; 0, 0: a symbol
 * without a size, for addr alone). */
static const struct cp_modsym *find_sym(struct cp_mod *sm, uint64_t addr, uint64_t *lo, uint64_t *hi)
{
	const struct cp_modsym *y;
	size_t i;

	if (!sm->syms_read)
		read_syms(sm);
	_Static_assert(offsetof(struct cp_modsym, addr) == 0, "the key leads");
	i = cp_sparse_upper_bound(&sm->symx, sm->syms, sm->nsyms, sizeof(*sm->syms), addr);
	/* no symbol holds addr: the gap from the end of the one before to the
	 * start of the next (every address there finds the same two) */
	*lo = i == 0 ? 0 : sm->syms[i - 1].addr + sm->syms[i - 1].size;
	*hi = i < sm->nsyms ? sm->syms[i].addr : UINT64_MAX;
	if (i == 0)
		return NULL;
	y = &sm->syms[i - 1];
	if (y->size && addr - y->addr >= y->size)
		return NULL;
	*lo = *hi = 0;
	if (y->size) { /* up to its end, or the next symbol's start (found instead) */
		*lo = y->addr;
		*hi = y->addr + y->size;
		if (i < sm->nsyms && sm->syms[i].addr < *hi)
			*hi = sm->syms[i].addr;
	}
	return y;
}

/* The name of sm's symbol y (its id in s->strs), into *id: false when it
 * has none (empty, or unreadable). */
static bool sym_name(struct cp_symbolizer *s, struct cp_mod *sm, const struct cp_modsym *y, uint32_t *id)
{
	/* (a serial past 31 bits would reach the demangled names' keys: such a
	 * session's names are not kept) */
	bool keep = sm->serial < (1ull << 31);
	uint64_t key = sm->serial << 32 | (uint64_t)(y - sm->syms);
	const char *name;
	char buf[4096];
	GElf_Sym sym;
	GElf_Addr a;
	bool some;
	int made;

	_Static_assert(SYM_IDX_BITS <= 32, "a place among the symbols fits the key's low half");
	if (keep && (made = named_get(s, key, id)) >= 0)
		return made;
	name = sm->names_at ? name_at(sm, y->idx, buf, sizeof(buf)) :
			      dwfl_module_getsym_info(sm->mod, (int)y->idx, &sym, &a, NULL, NULL, NULL);
	s->counts.names_read++;
	/* (read_syms does not read the names: an empty one is none) */
	some = name && *name;
	*id = some ? intern_name(s, name) : 0;
	if (keep)
		named_put(s, key, *id, some);
	return some;
}

/* The scopes around pc in cu, from the unit's index (built at its first
 * lookup and kept with the module). */
static int cu_scopes_find(struct cp_mod *sm, Dwarf_Die *cu, uint64_t pc, Dwarf_Die *out, int max)
{
	Dwarf_Off off = dwarf_dieoffset(cu);
	struct cp_scopes *sc = NULL;
	size_t i;

	/* the units' indexes, sorted by offset (libc's debug file has 4,126
	 * units: a scan read all those indexed for every address) */
	_Static_assert(offsetof(struct cp_mod_cu, off) == 0 && sizeof(Dwarf_Off) == sizeof(uint64_t),
		       "the key leads");
	i = cp_upper_bound_u64(sm->cus, sm->ncus, sizeof(*sm->cus), off);
	if (i > 0 && sm->cus[i - 1].off == off)
		sc = sm->cus[i - 1].scopes;
	if (!sc) {
		if (cp_grow((void **)&sm->cus, &sm->cucap, sm->ncus + 1, sizeof(*sm->cus)) ||
		    !(sc = cp_scopes_build(cu)))
			return 0;
		memmove(&sm->cus[i + 1], &sm->cus[i], (sm->ncus - i) * sizeof(*sm->cus));
		sm->cus[i].off = off;
		sm->cus[i].scopes = sc;
		sm->ncus++;
		sm->bytes += cp_scopes_size(sc);
	}
	return cp_scopes_find(sc, pc, out, max);
}

/* addr's frames from Go's function table (in the table's addresses: a
 * module address less the module's bias), innermost first, into out; [*lo,
 * *hi), which holds addr, is cut to the run of addresses where they hold
 * (in a stripped Go binary, nothing else cuts it: its segment). */
static uint32_t go_lookup(struct cp_symbolizer *s, struct cp_mod *sm, const struct cp_gopclntab *go, uint64_t addr,
			  struct symline *out, uint64_t *lo, uint64_t *hi, bool *inline_frames)
{
	struct cp_goframe f[MAX_INLINE];
	uint64_t entry, glo, ghi;
	int n = cp_gopclntab_lookup(go, addr - sm->bias, f, MAX_INLINE, &entry, &glo, &ghi);

	if (!(*lo <= addr && addr < *hi))
		*lo = addr, *hi = addr + 1;
	if (n < 0) { /* the table is corrupt there: unnamed, for addr alone */
		cp_error_clear();
		*lo = addr, *hi = addr + 1;
		return 0;
	}
	glo = glo > UINT64_MAX - sm->bias ? UINT64_MAX : glo + sm->bias;
	ghi = ghi > UINT64_MAX - sm->bias ? UINT64_MAX : ghi + sm->bias;
	*lo = glo > *lo ? glo : *lo;
	*hi = ghi < *hi ? ghi : *hi;
	for (int i = 0; i < n; i++) {
		out[i].name = intern(s, f[i].func);
		out[i].file = intern(s, f[i].file);
		out[i].line = f[i].line;
	}
	*inline_frames = cp_gopclntab_inlines(go);
	return (uint32_t)n;
}

/* Look addr up with libdw: innermost (inlined) frame first.  [*lo, *hi):
 * the addresses the same lines are the answer for.  Where no compilation
 * unit covers addr (a binary without DWARF, or code built without -g beside
 * code with it), no line of a function differs: its symbol's span, or the
 * gap between symbols, within the gap between units.  Else [addr, addr + 1).
 * An address that neither the symbols nor DWARF name, in a Go binary, is
 * looked up in Go's own table (go_lookup).  *inline_frames: whether the
 * answer came from where inlined calls are told. */
static uint32_t lookup(struct cp_symbolizer *s, struct cp_mod *sm, uint64_t addr, struct symline *out, uint64_t *lo,
		       uint64_t *hi, bool *inline_frames)
{
	struct cp_gopclntab *go;
	Dwfl_Module *mod = sm->mod;
	const char *file = NULL;
	const struct cp_modsym *y;
	Dwarf_Addr bias = 0;
	Dwarf_Die *cu, own, scopes[MAX_INLINE];
	Dwfl_Line *l;
	int line = 0, ns;
	uint32_t n = 0, symname = 0;
	bool named;

	y = find_sym(sm, addr, lo, hi);
	named = y && sym_name(s, sm, y, &symname);
	if (y && !named)
		*lo = *hi = 0;
	sm->dwarf_read = true;
	cu = NULL;
	l = NULL;
	if (sm->debuginfo_pending || cp_mod_in_unit(sm, addr, lo, hi)) {
		cu = dwfl_module_addrdie(mod, addr, &bias);
		l = dwfl_module_getsrc(mod, addr);
		/* libdwfl finds units through .debug_aranges only: without them
		 * (clang, rustc), the unit whose own ranges hold addr, and its row */
		if (!cu && cp_mod_unit_die(sm, addr, &own, &bias)) {
			Dwarf_Line *dl = dwarf_getsrc_die(&own, addr - bias);

			cu = &own;
			if (dl && (file = dwarf_linesrc(dl, NULL, NULL)) && dwarf_lineno(dl, &line) != 0)
				line = 0;
		}
		*lo = *hi = 0;
	}
	/* (read the first time it is needed: only binaries without names for
	 * some address pay for knowing whether they are Go) */
	if (!named && !cu && !l && !file && (go = cp_mod_gopclntab(sm)))
		return go_lookup(s, sm, go, addr, out, lo, hi, inline_frames);
	*inline_frames = cu != NULL;
	if (!(*lo <= addr && addr < *hi))
		*lo = addr, *hi = addr + 1;
	if (l)
		file = dwfl_lineinfo(l, NULL, &line, NULL, NULL, NULL);
	if (cu && (ns = cu_scopes_find(sm, cu, addr - bias, scopes, MAX_INLINE)) > 0) {
		Dwarf_Files *files = NULL;
		size_t nfiles = 0;
		bool outer = false;

		if (dwarf_getsrcfiles(cu, &files, &nfiles) != 0)
			files = NULL;
		for (int i = 0; i < ns && n < MAX_INLINE; i++) {
			int tag = dwarf_tag(&scopes[i]);

			if (tag == DW_TAG_inlined_subroutine) {
				Dwarf_Attribute a;
				Dwarf_Word v;

				out[n].name = intern_name(s, die_name(&scopes[i]));
				out[n].file = intern(s, file);
				out[n].line = line;
				n++;
				/* the caller's position is the call site */
				file = NULL;
				line = 0;
				if (files && dwarf_attr(&scopes[i], DW_AT_call_file, &a) && dwarf_formudata(&a, &v) == 0)
					file = dwarf_filesrc(files, v, NULL, NULL);
				if (dwarf_attr(&scopes[i], DW_AT_call_line, &a) && dwarf_formudata(&a, &v) == 0)
					line = (int)v;
			} else if (tag == DW_TAG_subprogram) {
				out[n].name = named ? symname : intern_name(s, die_name(&scopes[i]));
				out[n].file = intern(s, file);
				out[n].line = line;
				n++;
				outer = true;
				break;
			}
		}
		/* no enclosing function among the scopes: the symbol's, at the
		 * call site */
		if (!outer && n > 0 && n < MAX_INLINE && named) {
			out[n].name = symname;
			out[n].file = intern(s, file);
			out[n].line = line;
			n++;
		}
	}
	if (n == 0 && named) {
		out[0].name = symname;
		out[0].file = intern(s, file);
		out[0].line = line;
		n = 1;
	}
	return n;
}

static int entry_lines(struct cp_symbolizer *s, struct cp_profile *prof, const struct entry *e, struct cp_line *lines)
{
	uint32_t n = e ? e->n : 0;

	for (uint32_t i = 0; i < n; i++) {
		const struct symline *sl = &s->lines[e->first + i];
		struct cp_function f;
		int64_t name = cp_profile_str(prof, cp_strtab_get(&s->strs, sl->name));
		int64_t file = cp_profile_str(prof, cp_strtab_get(&s->strs, sl->file));
		int64_t fid;

		if (name < 0 || file < 0)
			return cp_error(ENOMEM, "out of memory adding a symbol");
		f.name = f.system_name = (uint32_t)name;
		f.filename = (uint32_t)file;
		f.start_line = 0;
		fid = cp_profile_function(prof, &f);
		if (fid < 0)
			return fid;
		lines[i].function = (uint32_t)fid;
		lines[i].line = sl->line;
		lines[i].column = 0;
	}
	return 0;
}


/* The profile's mapping of a file (or of memory without one).  It says it
 * has functions, file names, line numbers or inline frames only once a
 * location in it has them (mark_mapping): go tool pprof symbolizes the
 * mappings that say they have none (as it marks those it symbolizes). */
static int64_t profile_mapping(struct cp_profile *prof, uint64_t start, uint64_t limit, uint64_t offset,
			       const char *file, const char *build_id)
{
	struct cp_mapping m;
	int64_t f = cp_profile_str(prof, file), b = cp_profile_str(prof, build_id);

	if (f < 0 || b < 0)
		return cp_error(ENOMEM, "out of memory adding the mapping of %s", file);
	memset(&m, 0, sizeof(m));
	m.start = start;
	m.limit = limit;
	m.offset = offset;
	m.filename = (uint32_t)f;
	m.build_id = (uint32_t)b;
	return cp_profile_mapping(prof, &m);
}

/* Mapping id (of prof) holds a location named as e says. */
static void mark_mapping(struct cp_profile *prof, int64_t mapping, const struct entry *e)
{
	struct cp_mapping *m;

	if (mapping <= 0 || !e || !e->found)
		return;
	m = &prof->mappings[mapping - 1];
	m->has_functions |= (e->found & FOUND_FUNCTIONS) != 0;
	m->has_filenames |= (e->found & FOUND_FILENAMES) != 0;
	m->has_line_numbers |= (e->found & FOUND_LINE_NUMBERS) != 0;
	m->has_inline_frames |= (e->found & FOUND_INLINE_FRAMES) != 0;
}

/* The location of addr in mapping named as e says (and the mapping says it
 * has what e holds). */
static int64_t make_location(struct cp_symbolizer *s, struct cp_profile *prof, uint32_t mapping, uint64_t addr,
			     const struct entry *e)
{
	struct cp_line lines[MAX_INLINE];
	int err = entry_lines(s, prof, e, lines);
	int64_t loc;

	if (err)
		return err;
	loc = cp_profile_location(prof, mapping, addr, lines, e ? e->n : 0, false);
	if (loc > 0)
		mark_mapping(prof, mapping, e);
	return loc;
}

int64_t cp_symbolize_mapping(struct cp_symbolizer *s, struct cp_profile *prof, struct cp_proc *p, uint64_t addr)
{
	struct cp_map *m = (struct cp_map *)cp_proc_find_map(p, addr);
	char buf[41];

	(void)s;
	if (!m)
		return -ENOENT;
	return profile_mapping(prof, m->start, m->end, m->pgoff, m->path,
			       cp_map_key(m, p, buf, sizeof(buf)) == buf ? buf : "");
}

/* A location with one frame named name (a JIT's, from its perf map). */
static int64_t named_location(struct cp_symbolizer *s, struct cp_profile *prof, uint32_t mapping, uint64_t addr,
			      const char *name)
{
	struct entry tmp;

	/* the line goes past the cache's lines, where it is not kept */
	if (cp_grow((void **)&s->lines, &s->linecap, s->nlines + 1, sizeof(*s->lines)))
		return cp_error(ENOMEM, "out of memory caching a symbol");
	s->lines[s->nlines].name = intern(s, name);
	s->lines[s->nlines].file = 0;
	s->lines[s->nlines].line = 0;
	tmp.first = (uint32_t)s->nlines;
	tmp.n = 1;
	tmp.found = found_in(&s->lines[s->nlines], 1, false);
	return make_location(s, prof, mapping, addr, &tmp);
}

/* A file that may hold a JIT's code rather than an ELF binary: a memfd
 * (JITs that map their code twice, writable and executable) or a deleted
 * file (also how anonymous shared memory is named: "/dev/zero (deleted)"). */
static bool may_hold_jit_code(const char *path)
{
	size_t n = strlen(path);

	return !strncmp(path, "/memfd:", 7) || (n > 10 && !strcmp(path + n - 10, " (deleted)"));
}

/* The location of addr, in JIT code: named from the process's perf map
 * (/tmp/perf-PID.map), the one place JIT frames are named from.  Without a
 * name: 0 when m is a file (its own lookup stands), else a location in the
 * anonymous mapping (a bare address when none is known). */
static int64_t jit_location(struct cp_symbolizer *s, struct cp_profile *prof, struct cp_proc *p,
			    const struct cp_map *m, uint64_t addr, bool anon)
{
	const char *jit = cp_proc_jit_symbol(p, addr);
	const char *file;
	uint64_t offset;
	int64_t mapping;

	if (!jit && !anon)
		return 0;
	if (!m) /* no mapping known: a bare address, or a name without a mapping */
		return jit ? named_location(s, prof, 0, addr, jit) : cp_profile_location(prof, 0, addr, NULL, 0, false);
	/* anonymous memory has no file offset: its start stands for it, so
	 * that a frame shows its address ("anon+0x7f...") whichever way the
	 * mapping was learnt, and pprof keeps regions of processes apart */
	file = !m->path[0] || !strcmp(m->path, "//anon") ? "//anon" : m->path;
	offset = cp_map_no_file(m->path) ? m->start : m->pgoff;
	mapping = profile_mapping(prof, m->start, m->end, offset, file, "");
	if (mapping < 0)
		return mapping;
	addr = addr - m->start + prof->mappings[mapping - 1].start;
	if (!jit)
		return cp_profile_location(prof, (uint32_t)mapping, addr, NULL, 0, false);
	return named_location(s, prof, (uint32_t)mapping, addr, jit);
}

/* ---- debug files that land late (debuginfod) ---- */

void cp_symbolizer_set_memo(struct cp_symbolizer *s, struct cp_locmemo *m)
{
	s->memo = m;
}

void cp_symbolizer_set_debuginfod(struct cp_symbolizer *s, struct cp_debuginfod *d)
{
	s->dbgd = d;
	s->dbgd_gen = d ? cp_debuginfod_generation(d) : 0;
	cp_modcache_set_debuginfod(s->mc, d);
}

/* Remembers that key was read without the debug file being fetched. */
static void late_add(struct cp_symbolizer *s, const char *key, const struct cp_proc *p, const struct cp_map *m)
{
	struct late *l;

	for (size_t i = 0; i < s->nlate; i++)
		if (!strcmp(s->late[i].key, key))
			return;
	if (s->nlate >= MAX_LATE || strlen(key) >= sizeof(l->key))
		return; /* its names stay as first read */
	if (!s->late && !(s->late = calloc(MAX_LATE, sizeof(*s->late))))
		return;
	l = &s->late[s->nlate];
	memset(l, 0, sizeof(*l));
	if (!(l->path = strdup(m->path)))
		return;
	strcpy(l->key, key);
	l->fd = cp_map_open(p, m, s->u ? cp_unwind_vdso_fd(s->u) : -1);
	s->nlate++;
}

/* Fetches ended: the binaries read without the files that landed are
 * dropped, and the address cache starts over, so that they are read again;
 * those whose fetch failed are forgotten. */
static void late_sync(struct cp_symbolizer *s)
{
	bool any = false;

	s->dbgd_gen = cp_debuginfod_generation(s->dbgd); /* before the states */
	for (size_t i = 0; i < s->nlate;) {
		struct late *l = &s->late[i];
		enum cp_debuginfod_state st = l->landed ? CP_DEBUGINFOD_FOUND : cp_debuginfod_lookup(s->dbgd, l->key, NULL);

		if (st == CP_DEBUGINFOD_ABSENT) {
			free(l->path);
			if (l->fd >= 0)
				close(l->fd);
			*l = s->late[--s->nlate];
			continue;
		}
		if (st == CP_DEBUGINFOD_FOUND && !l->landed)
			l->landed = any = true;
		i++;
	}
	if (cp_modcache_drop_landed(s->mc) || any)
		cache_reset(s);
}

static const struct late *late_landed(const struct cp_symbolizer *s, const char *key)
{
	for (size_t i = 0; i < s->nlate; i++)
		if (s->late[i].landed && !strcmp(s->late[i].key, key))
			return &s->late[i];
	return NULL;
}

int cp_symbolize_refresh(struct cp_symbolizer *s, struct cp_profile *prof)
{
	uint8_t *redo;
	bool any = false;

	if (!s->dbgd || !prof)
		return 0;
	if (cp_debuginfod_generation(s->dbgd) != s->dbgd_gen)
		late_sync(s);
	if (!s->nlate || !prof->nmappings)
		return 0;
	if (!(redo = calloc(prof->nmappings, 1)))
		return cp_error(ENOMEM, "out of memory");
	for (uint32_t i = 0; i < prof->nmappings; i++) {
		struct cp_mapping *mp = &prof->mappings[i];

		if (late_landed(s, cp_profile_string(prof, mp->build_id))) {
			redo[i] = 1; /* (its flags follow what is found now) */
			any = true;
		}
	}
	for (uint32_t i = 0; any && i < prof->nlocations; i++) {
		struct cp_location *loc = &prof->locations[i];
		const struct cp_mapping *mp;
		const struct late *l;
		const struct entry *e;
		struct cp_line lines[MAX_INLINE];
		uint32_t mod;
		uint64_t off;
		int err;

		if (!loc->mapping || !redo[loc->mapping - 1])
			continue;
		mp = &prof->mappings[loc->mapping - 1];
		l = late_landed(s, cp_profile_string(prof, mp->build_id));
		off = loc->address - mp->start + mp->offset;
		mod = intern(s, l->key);
		e = cache_find(s, mod, off);
		if (!e) {
			struct symline sl[MAX_INLINE];
			struct cp_mod *sm;
			uint64_t maddr, alo, ahi;
			uint32_t n;
			bool inl = false;

			if (s->spans.n >= s->max) {
				cache_reset(s);
				mod = intern(s, l->key);
			}
			sm = cp_modcache_get_fd(s->mc, l->key, l->path, l->fd >= 0 ? dup(l->fd) : -1);
			maddr = sm ? cp_mod_addr(sm, off) : 0;
			n = maddr ? lookup(s, sm, maddr, sl, &alo, &ahi, &inl) : 0;
			if (!n)
				continue; /* not in the binary any more: as it was */
			if (!(e = cache_add(s, mod, off, off, off + 1, sl, n, inl))) {
				free(redo);
				return cp_error(ENOMEM, "out of memory caching a symbol");
			}
		}
		if (!e->n)
			continue;
		if ((err = entry_lines(s, prof, e, lines)) ||
		    (err = cp_profile_set_lines(prof, i + 1, lines, e->n))) {
			free(redo);
			return err;
		}
		mark_mapping(prof, prof->locations[i].mapping, e);
	}
	free(redo);
	return 0;
}

int64_t cp_symbolize_user(struct cp_symbolizer *s, struct cp_profile *prof, struct cp_proc *p, uint64_t pc,
			  bool is_return, bool *stable)
{
	uint64_t addr = is_return && pc ? pc - 1 : pc, off;
	struct cp_map *m;
	const struct entry *e;
	const char *key;
	char buf[41];
	uint32_t mod;
	int64_t mapping, loc;
	bool memo, keep;

	s->counts.lookups++;
	if (stable)
		*stable = false;
	if (s->dbgd && cp_debuginfod_generation(s->dbgd) != s->dbgd_gen)
		late_sync(s);
	m = (struct cp_map *)cp_proc_find_map(p, addr);
	if (!m && cp_proc_refresh(p, addr) == 0)
		m = (struct cp_map *)cp_proc_find_map(p, addr);
	if (!m || cp_map_no_file(m->path))
		return jit_location(s, prof, p, m, addr, true);
	key = NULL; /* the build id, else the path: made when needed (most frames need not) */
	if (!m->skey1 || m->skey_gen != s->gen) {
		key = cp_map_key(m, p, buf, sizeof(buf));
		m->skey1 = intern(s, key) + 1;
		m->skey_gen = s->gen;
	}
	mod = m->skey1 - 1;
	off = addr - m->start + m->pgoff;
	/* (a return address's off is already the call's: one kind) */
	memo = s->memo && mod < MEMO_MOD && prof->serial;
	if (memo && (loc = cp_locmemo_get(s->memo, MEMO_MOD | mod, (uint32_t)prof->serial, off, CP_LOCMEMO_USER))) {
		if (stable)
			*stable = true;
		return loc;
	}
	e = cache_find(s, mod, off);
	if (!e) {
		struct symline lines[MAX_INLINE];
		struct cp_mod *sm;
		uint64_t maddr, lo = off, hi = off + 1, alo = 0, ahi = 0;
		uint32_t n;
		bool inl = false;

		s->counts.misses++;
		if (!key)
			key = cp_map_key(m, p, buf, sizeof(buf));
		if (s->spans.n >= s->max) {
			cache_reset(s);
			mod = intern(s, key);
			m->skey1 = mod + 1;
			m->skey_gen = s->gen;
		}
		sm = cp_modcache_get(s->mc, key, p, m);
		maddr = sm ? cp_mod_addr(sm, off) : 0;
		n = maddr ? lookup(s, sm, maddr, lines, &alo, &ahi, &inl) : 0;
		if (sm && sm->debuginfo_pending)
			late_add(s, key, p, m);
		else if (alo <= maddr && maddr < ahi && maddr - alo <= off) /* (in the same segment) */
			lo = off - (maddr - alo), hi = off + (ahi - maddr);
		e = cache_add(s, mod, off, lo, hi, lines, n, inl);
		if (!e)
			return cp_error(ENOMEM, "out of memory caching a symbol");
	}
	if (e->n == 0 && may_hold_jit_code(m->path)) {
		int64_t loc = jit_location(s, prof, p, m, addr, false);

		if (loc != 0)
			return loc;
	}
	/* the profile's mapping, kept with the map for the profile it was made in */
	if (m->pmap_serial == prof->serial && m->pmap_id) {
		mapping = m->pmap_id;
	} else {
		key = key ? key : cp_map_key(m, p, buf, sizeof(buf));
		mapping = profile_mapping(prof, m->start, m->end, m->pgoff, m->path, key == buf ? buf : "");
		if (mapping < 0)
			return mapping;
		m->pmap_serial = prof->serial;
		m->pmap_id = (uint32_t)mapping;
	}
	/* pprof merges the same binary mapped by several processes into one
	 * mapping (keyed by size, offset and build id): addresses are made
	 * relative to the mapping the profile kept */
	addr = addr - m->start + prof->mappings[mapping - 1].start;
	/* (an unnamed address in a JIT's file may be named by its perf map later) */
	keep = e->n > 0 || !may_hold_jit_code(m->path);
	if (stable)
		*stable = keep;
	loc = make_location(s, prof, (uint32_t)mapping, addr, e);
	/* the same for every process that maps the binary: pprof's mapping is
	 * the binary's (profile_mapping), the address its offset */
	if (memo && keep && loc > 0)
		cp_locmemo_put(s->memo, MEMO_MOD | mod, (uint32_t)prof->serial, off, CP_LOCMEMO_USER, (uint32_t)loc);
	return loc;
}

/* ---- kernel ---- */

static void load_ksyms(struct cp_symbolizer *s)
{
	s->ksyms_tried = true;
	s->ksyms = cp_ksyms_load();
	s->counts.kernel_symbols = s->ksyms ? cp_ksyms_count(s->ksyms) : 0;
}

void cp_symbolize_preload(struct cp_symbolizer *s)
{
	if (!s->ksyms_tried)
		load_ksyms(s);
}

int64_t cp_symbolize_kernel(struct cp_symbolizer *s, struct cp_profile *prof, uint64_t pc, bool is_return)
{
	uint64_t addr = is_return && pc ? pc - 1 : pc;
	const struct entry *e;
	int64_t mapping;

	if (!s->ksyms_tried)
		load_ksyms(s);
	s->counts.lookups++;
	e = cache_find(s, s->kernel_mod, addr);
	if (!e) {
		struct symline l;
		const char *module = NULL, *name;
		uint64_t span[2] = { addr, addr + 1 };
		uint32_t n = 0;

		s->counts.misses++;
		if (s->spans.n >= s->max)
			cache_reset(s);
		name = s->ksyms ? cp_ksyms_find(s->ksyms, addr, &module, span) : NULL;
		if (name) {
			l.name = intern(s, name);
			l.file = intern(s, module && *module ? module : "");
			l.line = 0;
			n = 1;
		}
		e = cache_add(s, s->kernel_mod, addr, span[0], span[1], &l, n, false);
		if (!e)
			return cp_error(ENOMEM, "out of memory caching a kernel symbol");
	}
	mapping = profile_mapping(prof, 0xffff800000000000ull, UINT64_MAX, 0, "[kernel.kallsyms]", "");
	if (mapping < 0)
		return mapping;
	return make_location(s, prof, (uint32_t)mapping, addr, e);
}

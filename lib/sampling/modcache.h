/* SPDX-License-Identifier: MIT */
/* Binaries opened offline in libdw, one session per file identity (build id,
 * else path), shared by every process that maps the file and by the
 * unwinder (CFI) and the symbolizer (symbols, DWARF), kept in an LRU: up to
 * a count, and evicted least recently used first when the caller's memory
 * budget says so (cp_modcache_evict).  An evicted binary is read again when
 * next needed. */
#ifndef CP_MODCACHE_H
#define CP_MODCACHE_H

#include <elfutils/libdwfl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../util.h"

#include "gopclntab.h"
#include "proc.h"
#include "scopes.h"

struct cp_mod {
	char *key;
	uint64_t serial; /* this session's, never another's (sessions of one key read again differ) */
	Dwfl *dwfl;
	Dwfl_Module *mod; /* NULL: the file could not be read (remembered) */
	GElf_Addr bias;
	struct {
		uint64_t off, filesz, vaddr;
	} seg[16];
	int nseg;
	uint64_t used;
	int64_t used_ns; /* CLOCK_MONOTONIC of the last use */
	/* the symbolizer's sorted function symbols: 16 bytes each, the name
	 * read when an address is looked up */
	struct cp_modsym {
		uint64_t addr;
		uint32_t size; /* clamped */
		uint32_t idx;  /* the index in the module's symbol table (while
				* sorting, with rank bits), or when names_at is
				* set, where the name is in the file */
	} *syms;
	size_t nsyms;
	struct cp_sparse symx; /* over syms */
	bool syms_read;
	/* the names are read from fd at the offsets in idx, with pread: read
	 * through libelf's mapping of the file, each name would bring 64 KB of
	 * its neighbours into the resident set (the kernel maps the pages
	 * around a fault), and a storm's new addresses in a big binary (node:
	 * 10 MB of symbols) made them all resident */
	bool names_at;
	int fd; /* a descriptor of the binary's file, or -1 */
	bool dwarf_read; /* its DWARF (or debug file) was asked for */
	/* the symbolizer's scope indexes, one per compilation unit looked at,
	 * sorted by the unit's offset */
	struct cp_mod_cu {
		Dwarf_Off off;
		struct cp_scopes *scopes;
	} *cus;
	size_t ncus, cucap;
	/* the module addresses its DWARF's compilation units cover (libdw's
	 * aranges; else, as clang and rustc emit none, the units' own ranges),
	 * sorted and merged, and the same by unit (sorted by lo, with the unit
	 * DIE's offset): read at the first lookup; units_read 1, -1: no
	 * DWARF, -2: DWARF whose units could not be kept (out of memory) */
	struct cp_range *units;
	size_t nunits;
	struct cp_mod_unit {
		uint64_t lo, hi;
		uint64_t die;
	} *unit_of;
	size_t nunit_of;
	int units_read;
	/* Go's function table, read at the first address that neither its
	 * symbols nor its DWARF name (go_read 1; -1: none, not a Go binary) */
	struct cp_gopclntab *go;
	int go_read;
	size_t bytes; /* the heap this module's tables hold (symbols, scopes, units) */
	/* debuginfod: the session's debug file was still being fetched when
	 * libdw looked for it (the session lacks it for good) */
	struct cp_modcache *owner;
	bool debuginfo_pending;
};

/* A libdw find_debuginfo callback that finds none: CFI and symbols from the
 * file itself only. */
int cp_no_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base, const char *file_name,
		    const char *debuglink_file, GElf_Word debuglink_crc, char **debuginfo_file_name);

struct cp_modcache;
/* debuginfo_path: where separate debug files are looked for (NULL: libdw's
 * default); separate_debug false: never load them (CFI from the file itself);
 * vdso_fd stands in for "[vdso]" mappings (not owned; -1: none). */
struct cp_modcache *cp_modcache_new(size_t max, char **debuginfo_path, bool separate_debug, int vdso_fd);
void cp_modcache_free(struct cp_modcache *c);
/* The session for the file mapped by m in p, known as key; NULL if it
 * cannot be read. */
struct cp_mod *cp_modcache_get(struct cp_modcache *c, const char *key, const struct cp_proc *p,
			       const struct cp_map *m);
/* fn(arg) runs before each new binary is opened (the owner's memory
 * budget: it may call cp_modcache_evict). */
void cp_modcache_on_open(struct cp_modcache *c, void (*fn)(void *), void *arg);
/* Closes the least recently used binaries until at most keep are open. */
void cp_modcache_evict(struct cp_modcache *c, size_t keep);
/* The same, but only binaries last used before before_ns (CLOCK_MONOTONIC);
 * returns how many were closed. */
size_t cp_modcache_evict_idle(struct cp_modcache *c, size_t keep, int64_t before_ns);
size_t cp_modcache_count(const struct cp_modcache *c);
/* Closes the binaries whose DWARF (their own or a debug file's) was read, in
 * use or not: libdw keeps what it decoded of it, every compilation unit's
 * line table looked at (1.5 MB for some of CPython's), for as long as the
 * binary is open.  Returns how many. */
size_t cp_modcache_evict_dwarf(struct cp_modcache *c);
/* Drops the pages of the file images of the open binaries last used before
 * before_ns from the resident set (they stay mapped; what is read again
 * comes back from the page cache). */
void cp_modcache_release_pages(struct cp_modcache *c, int64_t before_ns);
/* The same for one binary. */
void cp_mod_release_pages(struct cp_mod *m);
/* Drops the pages of the separate debug files (DWARF) of every open binary,
 * in use or not. */
void cp_modcache_release_debug_pages(struct cp_modcache *c);

/* Separate debug files not found locally come from d (not owned; set
 * before the first get): by build id, never waiting (a file still being
 * fetched sets debuginfo_pending).  Only libdw's build-id lookup is tried
 * locally then: its standard lookup would fetch from $DEBUGINFOD_URLS
 * itself, on the sampling path. */
struct cp_debuginfod;
void cp_modcache_set_debuginfod(struct cp_modcache *c, struct cp_debuginfod *d);
/* Drops the sessions read while their debug file was being fetched and
 * whose file has landed since; returns how many. */
size_t cp_modcache_drop_landed(struct cp_modcache *c);
/* cp_modcache_get for a file already open: fd (consumed) is the file of
 * path, for when the process that mapped it may be gone. */
struct cp_mod *cp_modcache_get_fd(struct cp_modcache *c, const char *key, const char *path, int fd);
/* The module address (for libdw) of a file offset, or 0 when no segment holds it. */
uint64_t cp_mod_addr(const struct cp_mod *m, uint64_t off);
/* Whether a compilation unit of m's DWARF covers the module address addr
 * (or might: its units cannot be read).  When none does (or m has no
 * DWARF), libdw has no answer for addr, and [*lo, *hi) (which holds addr) is
 * cut to the gap between units around it and to addr's segment: where
 * addr's answer from the symbols alone holds. */
bool cp_mod_in_unit(struct cp_mod *m, uint64_t addr, uint64_t *lo, uint64_t *hi);
/* The compilation unit whose ranges hold the module address addr, into
 * *cu, and the DWARF's bias: false when none does.  libdwfl finds a unit
 * through .debug_aranges only, which clang and rustc do not emit. */
bool cp_mod_unit_die(struct cp_mod *m, uint64_t addr, Dwarf_Die *cu, Dwarf_Addr *bias);
/* m's Go function table (gopclntab.h: in link-time addresses, a module
 * address less m->bias), read at the first call; NULL when m has none. */
struct cp_gopclntab *cp_mod_gopclntab(struct cp_mod *m);

#endif

/* SPDX-License-Identifier: MIT */
/* Symbols for sampled addresses: function names from .symtab/.dynsym,
 * inline frames and file:line from DWARF (libdw; separate debug files by
 * build id under /usr/lib/debug/.build-id), or in a Go binary without
 * them from Go's own function table (gopclntab.h), kernel functions from
 * /proc/kallsyms, JIT functions from /tmp/perf-PID.map.  Results are cached by
 * (build id, file offset), so each address of each binary is looked up once
 * however many processes run it.
 *
 * A process table (proc.h) serves one symbolizer: its mappings keep that
 * symbolizer's key for their file (skey1, skey_gen), which a second
 * symbolizer over the same table would take for its own.  Copies of a binary
 * with the same build id share one mapping in a profile (keyed by size,
 * offset and build id, as pprof does). */
#ifndef CP_SYMBOLIZE_H
#define CP_SYMBOLIZE_H

#include <stdbool.h>
#include <stdint.h>

#include "../profile.h"
#include "ksyms.h"
#include "proc.h"
#include "unwind.h"

struct cp_symbolizer;

/* max_entries bounds the cache (0: 1M addresses); it is emptied when full.
 * Binaries are read through u's cache (u NULL: one of its own). */
struct cp_symbolizer *cp_symbolizer_new(struct cp_unwinder *u, size_t max_entries);
/* Empty the address cache and free its memory (a memory budget). */
void cp_symbolize_forget(struct cp_symbolizer *s);
/* Lets go of the resident pages of the kernel's symbol table (mapped from
 * its cache file: what is looked up again faults back). */
void cp_symbolize_release_pages(struct cp_symbolizer *s);
void cp_symbolizer_free(struct cp_symbolizer *s);

/* The location (id in prof) of user address pc in process p.  is_return: pc
 * is a return address (every frame but the first), so the call instruction
 * before it is what is looked up.  Returns the id or -errno.  *stable (when
 * not NULL) says whether the same pc gets the same location for as long as
 * p's mappings stay as they are (not so for JIT code named by a perf map,
 * which the JIT may rewrite). */
int64_t cp_symbolize_user(struct cp_symbolizer *s, struct cp_profile *prof, struct cp_proc *p, uint64_t pc,
			  bool is_return, bool *stable);
/* Just the mapping (id in prof) holding addr in p; -ENOENT if none. */
int64_t cp_symbolize_mapping(struct cp_symbolizer *s, struct cp_profile *prof, struct cp_proc *p, uint64_t addr);
/* Read /proc/kallsyms now (before sampling starts) rather than at the first
 * kernel frame. */
void cp_symbolize_preload(struct cp_symbolizer *s);
/* The same for a kernel address. */
int64_t cp_symbolize_kernel(struct cp_symbolizer *s, struct cp_profile *prof, uint64_t pc, bool is_return);

/* A memo (m not owned; locmemo.h) of the locations made for (binary, file
 * offset) in each profile: a frame of a binary that another process ran in
 * the same profile gets that one's location without its names interned
 * again.  Its keys' pids have bit 30 set (below a pid's, none has it); it is
 * cleared whenever the symbolizer starts its cache over. */
struct cp_locmemo;
void cp_symbolizer_set_memo(struct cp_symbolizer *s, struct cp_locmemo *m);

/* Debug files from debuginfod (d not owned; set before the first lookup).
 * A binary read while its debug file was still being fetched is read again
 * once it lands, and its addresses looked up again. */
struct cp_debuginfod;
void cp_symbolizer_set_debuginfod(struct cp_symbolizer *s, struct cp_debuginfod *d);
/* The locations of prof in binaries whose debug file landed after they were
 * looked up get the names, inline frames and lines it brings.  0 or -errno. */
int cp_symbolize_refresh(struct cp_symbolizer *s, struct cp_profile *prof);

struct cp_symbolize_counts {
	uint64_t lookups, misses, kernel_symbols;
	/* symbol names read from a binary, and names demangled (each is made
	 * once until the cache starts over) */
	uint64_t names_read, demangled;
};
void cp_symbolize_counts(const struct cp_symbolizer *s, struct cp_symbolize_counts *c);

#endif

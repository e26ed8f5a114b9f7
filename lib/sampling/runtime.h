/* SPDX-License-Identifier: MIT */
/* Runtimes: the interpreters whose own frames (a Python function, say) the
 * samples carry beside the native stack.  One interface per runtime (struct
 * cp_runtime: finding it in a process, naming its frames, forgetting a
 * process), one table of them made from bpf/runtimes.h's list, and
 * cp_runtimes, an instance of each for a recorder.  The BPF side of a runtime
 * is its walker (bpf/runtimes/NAME.bpf.h), which sends the sampled thread's
 * frames tagged with the runtime's id; bpf/runtimes.h says what a runtime is
 * made of and where it is registered (one line).
 *
 * The recorder (recorder.c) asks cp_runtimes_detect whenever a process's
 * mappings change, gives the sampler (cp_sampler_set_runtime) what it
 * returns, puts each frame a sample carries above the native frame of the
 * process's entry range it goes with, and names it with cp_runtimes_frame.
 *
 * Ownership: cp_runtimes owns each runtime's state (its caches); a name's
 * strings are the runtime's, valid until its next call.  Errors: -ENOMEM
 * (with the message recorded); a process that cannot be read is not a
 * runtime's (0), and a frame that cannot be read still has a name. */
#ifndef CP_RUNTIME_H
#define CP_RUNTIME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <gelf.h>

#include "sampler.h" /* bpf/sampler.h's struct cp_rt_frame, cp_rt_proc */
#include "proc.h"

/* what a frame is called */
struct cp_rt_name {
	const char *label;   /* what it shows: "name (file.py:first line)" */
	const char *name;    /* the qualified name ("Class.method") */
	const char *sysname; /* the plain name */
	const char *file;
	int64_t first_line;  /* of the function; 0: unknown */
	int64_t line;        /* of the instruction; <= 0: unknown */
	uint64_t key;        /* names this name (function and line) in the caller's memo for
			      * the process: the same each time, never another's (0: none) */
	/* the functions this one was inlined into by a JIT, innermost first
	 * (the frame's own function last): ninl of them (0: none), the
	 * runtime's, valid as the name is */
	const struct cp_rt_name *inl;
	uint32_t ninl;
};

/* where a process runs a runtime (cp_runtime.detect's answer, kept in its
 * cp_proc as rt_*) */
struct cp_rt_found {
	uint64_t entry_lo, entry_hi; /* the native frames (an interpreter loop) its frames go above */
	/* the interpreter's loop when it is a function the entry calls (Ruby's
	 * vm_exec_core under rb_vm_exec): where it is right above an entry
	 * frame, the frames go above it instead (0, 0: none) */
	uint64_t loop_lo, loop_hi;
	/* an entry frame can be missing from the unwound stack (YJIT's code is
	 * left by its frame pointer, past the rb_vm_exec that called it): the
	 * groups no entry frame took go above the outermost one that did, not
	 * past the native stack's end */
	bool entries_skipped;
	unsigned layout;             /* the runtime's own: which version's layout */
};

struct cp_runtime {
	const char *name; /* "python": its frames are in the mapping "[python]" */
	uint32_t id;      /* bpf/runtimes.h's */
	/* its state (verb: the command its log lines name); NULL + errno */
	void *(*new)(const char *verb);
	void (*free)(void *st);
	/* a file (a path mapped executable) that may make a process this
	 * runtime's: only processes that map one are looked at */
	bool (*named)(const char *path);
	/* Does p run it?  1 with data (struct cp_rt_proc's, CP_RT_PROC_DATA
	 * bytes) and *f filled; 0 not (or not a version known); -ENOMEM */
	int (*detect)(void *st, struct cp_proc *p, void *data, struct cp_rt_found *f);
	/* The name of frame fr of process pid (layout: detect's): 0 with *out;
	 * 1 when the frame is left out (not running yet); -1 when it cannot be
	 * read (the process is gone) */
	int (*frame)(void *st, uint32_t pid, unsigned layout, const struct cp_rt_frame *fr, struct cp_rt_name *out);
	/* what it keeps of process pid goes (it exited, or exec'd) */
	void (*forget)(void *st, uint32_t pid);
	/* A runtime with no walker (bpf/runtimes.h's CP_RUNTIMES_NATIVE; frame
	 * NULL, detect's data unused): its functions run as native code, and
	 * it names those frames of a stack unwound in user space.  s: the
	 * sample (its copy of the stack), pcs and fps: cp_unwind_fp's n frames.
	 * Sets out[i].label for each frame named (NULL for the others); returns
	 * how many, or -1 when the process cannot be read.  NULL for a runtime
	 * with a walker. */
	int (*native)(void *st, uint32_t pid, unsigned layout, const struct cp_sample_rec *s, const uint64_t *pcs,
		      const uint64_t *fps, int n, struct cp_rt_name *out);
	/* Such a runtime whose code keeps no frame pointer: the unwinder's rule
	 * for a pc of process pid with no CFI (unwind.h's cp_unwind_hook).  NULL:
	 * its frames are followed by rbp. */
	int (*unwind)(void *st, uint32_t pid, unsigned layout, uint64_t pc, bool exact, uint64_t *cfa_sp,
		      bool *bp_saved);
};

/* The table (bpf/runtimes.h's order), *n rows. */
const struct cp_runtime *const *cp_runtime_table(size_t *n);
/* The runtime with this id, or NULL. */
const struct cp_runtime *cp_runtime_find(uint32_t id);

struct cp_runtimes;
/* An instance of each runtime; a runtime whose state cannot be made is left
 * out (NULL only when out of memory). */
struct cp_runtimes *cp_runtimes_new(const char *verb);
void cp_runtimes_free(struct cp_runtimes *rs);
/* Is path a file some runtime looks at? */
bool cp_runtimes_named(const struct cp_runtimes *rs, const char *path);
/* Which runtime p runs: its id with *out (the sampler's map entry) and *f,
 * 0 when none; -ENOMEM. */
int cp_runtimes_detect(struct cp_runtimes *rs, struct cp_proc *p, struct cp_rt_proc *out, struct cp_rt_found *f);
/* cp_runtime.frame of runtime id (-1: no such runtime) */
int cp_runtimes_frame(struct cp_runtimes *rs, uint32_t id, uint32_t pid, unsigned layout,
		      const struct cp_rt_frame *fr, struct cp_rt_name *out);
/* cp_runtime.native of runtime id (-1: no such runtime, or it has a walker) */
int cp_runtimes_native(struct cp_runtimes *rs, uint32_t id, uint32_t pid, unsigned layout,
		       const struct cp_sample_rec *s, const uint64_t *pcs, const uint64_t *fps, int n,
		       struct cp_rt_name *out);
/* cp_runtime.unwind of runtime id (0: none, or it has no such rule) */
int cp_runtimes_unwind(struct cp_runtimes *rs, uint32_t id, uint32_t pid, unsigned layout, uint64_t pc, bool exact,
		       uint64_t *cfa_sp, bool *bp_saved);
/* Does runtime id have cp_runtime.unwind? */
bool cp_runtimes_unwinds(const struct cp_runtimes *rs, uint32_t id);
/* cp_runtime.forget of runtime id */
void cp_runtimes_forget(struct cp_runtimes *rs, uint32_t id, uint32_t pid);

/* ---- what the runtimes keep ----
 *
 * A cache of what a runtime read of processes (a code object, an iseq),
 * by (pid, address): each entry is a struct whose first member is a struct
 * cp_rt_entry; the cache owns its entries (freed by its free function). */
struct cp_rt_entry {
	struct cp_rt_entry *next;
	uint32_t pid;
	uint64_t addr;
};
struct cp_rt_cache {
	struct cp_rt_entry **buckets;
	size_t nbuckets, n, max;
	void (*free)(struct cp_rt_entry *e);
	/* the processes with entries, and how many: a process without any
	 * (most, in a storm of short runs) is forgotten at once */
	struct cp_rt_owner { uint32_t pid, n; } *owners;
	size_t nowners, ownercap;
};
/* nbuckets buckets, at most max entries (past it the cache starts over);
 * -ENOMEM */
int cp_rt_cache_init(struct cp_rt_cache *c, size_t nbuckets, size_t max, void (*free)(struct cp_rt_entry *e));
void cp_rt_cache_fini(struct cp_rt_cache *c);
/* The entry of (pid, addr), or NULL */
struct cp_rt_entry *cp_rt_cache_find(const struct cp_rt_cache *c, uint32_t pid, uint64_t addr);
/* Keeps e (its pid and addr set); -ENOMEM, and e is freed */
int cp_rt_cache_put(struct cp_rt_cache *c, struct cp_rt_entry *e);
/* Frees entry e, or all of process pid's, or all */
void cp_rt_cache_drop(struct cp_rt_cache *c, struct cp_rt_entry *e);
void cp_rt_cache_forget(struct cp_rt_cache *c, uint32_t pid);
void cp_rt_cache_clear(struct cp_rt_cache *c);

/* The binaries a runtime looked at, by build id and path (a copy of an
 * interpreter patched in place keeps its build id, and must not pass for
 * the original): CP_RT_BINS_MAX of them, then round robin.  Each is a struct
 * of size bytes whose first member is its key (char *, owned here). */
#define CP_RT_BINS_MAX 64
struct cp_rt_bins {
	void *v;
	size_t size, n, next;
};
/* The bin of the file mapping m maps in process p; a new one (all zero but
 * its key) is given to look(ctx, bin, fd, path) with the file open on fd
 * (-1 when it cannot be opened); NULL with errno ENOMEM when out of
 * memory, ENOENT when m's file cannot be told (gone). */
void *cp_rt_bin(struct cp_rt_bins *bs, const struct cp_proc *p, struct cp_map *m,
		void (*look)(void *ctx, void *bin, int fd, const char *path), void *ctx);
void cp_rt_bins_fini(struct cp_rt_bins *bs);

/* len bytes of process pid's memory at addr into buf (process_vm_readv);
 * false when they cannot all be read (addr 0 never can) */
bool cp_runtime_peek(uint32_t pid, uint64_t addr, void *buf, size_t len);
/* For the runtimes' detection: the n bytes a symbol of the ELF file open as
 * e (on fd) starts with, from the file (zero in .bss); false when they are
 * not in the file. */
bool cp_runtime_sym_read(Elf *e, int fd, const GElf_Sym *sym, void *out, size_t n);
/* Calls fn(ctx, name, sym) for each symbol defined in e's .dynsym (and its
 * .symtab too when symtab) whose name starts with prefix; fn returns false
 * to stop (then so does this: false). */
bool cp_runtime_syms(Elf *e, bool symtab, const char *prefix,
		     bool (*fn)(void *ctx, const char *name, const GElf_Sym *sym), void *ctx);
/* The PT_LOAD segments of an ELF file, for the load bias of a mapping of it */
struct cp_rt_loads {
	struct { uint64_t off, vaddr, filesz; } seg[8];
	unsigned n;
};
void cp_runtime_loads(Elf *e, struct cp_rt_loads *l);
/* The load bias of the file mapped by m (its symbols' values + bias are
 * addresses); false when m maps none of its segments. */
bool cp_runtime_bias(const struct cp_rt_loads *l, const struct cp_map *m, uint64_t *bias);

#endif

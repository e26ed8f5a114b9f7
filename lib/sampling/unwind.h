/* SPDX-License-Identifier: MIT */
/* User-stack unwinding without frame pointers: the sampler copies the user
 * registers and the top of the user stack; this unwinds them with the DWARF
 * CFI (.eh_frame, else .debug_frame) of each binary, read offline once per
 * file (build id) and reduced to one small rule per address: the CFA from rsp
 * or rbp, the PLT's expression, the signal trampoline.  Frames with no such
 * rule (JIT code, V8's builtins, other CFA expressions) follow the frame
 * pointer, as libdw and perf do.  No state per process: the rules are cached
 * by (file, offset), up to 1M of them; errors only end a stack early. */
#ifndef CP_UNWIND_H
#define CP_UNWIND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <linux/types.h>

#include "../../bpf/sampler.h"
#include "proc.h"

#define CP_USER_FRAMES_MAX 256

struct cp_unwinder;

/* debuginfo_path: where separate debug files are looked for, kept for the
 * symbolizer (NULL: libdw's default, ":.debug:/usr/lib/debug", which covers
 * /usr/lib/debug/.build-id).  NULL + errno on failure. */
struct cp_unwinder *cp_unwinder_new(const char *debuginfo_path);
void cp_unwinder_free(struct cp_unwinder *u);

/* Unwinds the user part of r for process p into pcs (pcs[0] is the
 * interrupted instruction; the others are return addresses).  Returns the
 * number of frames (0 when the sample has no user part). */
int cp_unwind(struct cp_unwinder *u, struct cp_proc *p, const struct cp_sample_rec *r, uint64_t *pcs, int max);

/* A runtime's rule for frames of its code that have no CFI (a JIT's that
 * keeps no frame pointer): for pc (exact: where the thread is, not a return
 * address) 1 with *cfa_sp (the CFA is sp + it, the return address at CFA - 8)
 * and *bp_saved (the caller's rbp at CFA - 16; else rbp is unchanged); 0
 * when pc is not such code (the frame pointer is followed). */
struct cp_unwind_hook {
	int (*rule)(void *ctx, uint64_t pc, bool exact, uint64_t *cfa_sp, bool *bp_saved);
	void *ctx;
};

/* cp_unwind, and for each frame that has no CFI rule (JIT code, V8's
 * builtins: it was left through the frame pointer) its rbp in fps[i]; 0 for
 * the others.  hook (NULL: none) is asked first for such frames. */
int cp_unwind_fp(struct cp_unwinder *u, struct cp_proc *p, const struct cp_sample_rec *r, uint64_t *pcs,
		 uint64_t *fps, int max, const struct cp_unwind_hook *hook);
/* The word at addr of r's copy of the user stack: false when not in it. */
bool cp_unwind_stack_word(const struct cp_sample_rec *r, uint64_t addr, uint64_t *out);

/* The binaries the unwinder reads CFI from, with their separate debug files
 * (debuginfo_path), for the symbolizer to share; owned by u. */
struct cp_modcache;
struct cp_modcache *cp_unwind_modcache(struct cp_unwinder *u);
/* The vDSO image (a file descriptor, -1 if none), which stands in for
 * "[vdso]" mappings. */
int cp_unwind_vdso_fd(const struct cp_unwinder *u);
/* Drop the cached rules (a memory budget); they are read again as needed. */
void cp_unwind_forget_rules(struct cp_unwinder *u);

/* Counters for the summary and benchmarks. */
struct cp_unwind_counts {
	uint64_t unwinds, frames;
	uint64_t fp;     /* frames left through the frame pointer (no CFI rule) */
	uint64_t signal; /* signal frames crossed */
	uint64_t rules;  /* rules read from the CFI (cache misses) */
	uint64_t hooked; /* frames left by a runtime's rule (cp_unwind_hook) */
};
void cp_unwind_counts(const struct cp_unwinder *u, struct cp_unwind_counts *c);

#endif

/* SPDX-License-Identifier: MIT */
/* User-stack unwinding without frame pointers: the sampler copies the user
 * registers and the top of the user stack; this unwinds them with DWARF CFI
 * (.eh_frame, .debug_frame) through libdw, falling back to frame pointers
 * where a module has no CFI.  One libdw session (Dwfl) per process, built from
 * the process's tracked mappings and kept for the most recently sampled
 * processes only, so memory stays bounded. */
#ifndef CP_UNWIND_H
#define CP_UNWIND_H

#include <stddef.h>
#include <stdint.h>

#include <linux/types.h>

#include "../../bpf/sampler.h"
#include "proc.h"

#define CP_USER_FRAMES_MAX 256

struct cp_unwinder;

/* debuginfo_path: where separate debug files are looked for (NULL: libdw's
 * default, ":.debug:/usr/lib/debug", which covers /usr/lib/debug/.build-id);
 * max_sessions: libdw sessions kept at once (0: 64). */
struct cp_unwinder *cp_unwinder_new(const char *debuginfo_path, size_t max_sessions);
void cp_unwinder_free(struct cp_unwinder *u);

/* Unwinds the user part of r for process p into pcs (pcs[0] is the
 * interrupted instruction; the others are return addresses).  Returns the
 * number of frames (0 when the sample has no user part). */
int cp_unwind(struct cp_unwinder *u, struct cp_proc *p, const struct cp_sample_rec *r, uint64_t *pcs, int max);

/* The libdw session of p (built on demand), for symbolization; NULL if p has
 * no usable mappings. Its type is Dwfl *. */
void *cp_unwind_session(struct cp_unwinder *u, struct cp_proc *p);
/* Drop p's session (the process exited or exec'ed). */
void cp_unwind_forget(struct cp_unwinder *u, struct cp_proc *p);

/* The vDSO image (a file descriptor, -1 if none) and the debuginfo path
 * (NULL: libdw's default), for the symbolizer. */
int cp_unwind_vdso_fd(const struct cp_unwinder *u);
char **cp_unwind_debuginfo_path(struct cp_unwinder *u);

/* Counters for the summary and benchmarks. */
struct cp_unwind_counts {
	uint64_t sessions_built, sessions_evicted, unwinds, frames;
	uint64_t slow; /* unwinds that needed libdw's unwinder (a frame without a simple rule) */
};
void cp_unwind_counts(const struct cp_unwinder *u, struct cp_unwind_counts *c);

#endif

/* SPDX-License-Identifier: MIT */
/* HotSpot (the JVM), a runtime of lib/sampling/runtime.h with no walker (its
 * row is cp_runtime_hotspot): Java methods run interpreted (the template
 * interpreter's code, which keeps frame pointers) or compiled by C1 and C2
 * (code in the code cache that keeps none).  This gives the unwinder the rule
 * for compiled frames and names the Java frames of an unwound stack, with no
 * agent and no flag on the JVM.  The facts it rests on are in
 * docs/internals/hotspot.md.
 *
 * Detection: a process mapping a libjvm.so that exports gHotSpotVMStructs.
 * Those tables (the Serviceability Agent's) are filled when the JVM starts
 * and hold pointers, so they are read from a running JVM's memory, once per
 * binary (build id and path), into a layout: the offsets of the fields read
 * here, the addresses of the statics less the load bias.  A JVM whose tables
 * lack a field this needs is said once in the log; its stacks stay native.
 *
 * Unwinding: a pc in the code cache is looked up in its code heap's segment
 * map; an nmethod's frame is left by its frame size (the return address and
 * the caller's rbp under the CFA).  The blobs found are kept per process by
 * their code's extent, an nmethod's debug info with it, and checked every so
 * many samples by one read of the header (in use, the same code and method).  Other code (the interpreter, stubs) keeps
 * rbp and is followed by it.
 *
 * Naming: an interpreted frame's Method* is in the frame (rbp + 8 *
 * (interpreter_frame_last_sp_offset - 1)), a compiled one's is its
 * nmethod's.  Method -> ConstMethod -> ConstantPool gives the method's name,
 * its class's and the class's source file; kept by (pid, Method*) and read
 * again every so many samples (a method unloaded and another at its address
 * then gets its own name).  The line: from the method's compressed line
 * table, for the bci an interpreted frame keeps (its bcp, saved at each
 * call) or a compiled frame's scope gives.  A compiled frame's methods inlined into it are
 * found in its debug information, kept with the blob: the PcDesc past its pc
 * (a call's is its return address) and the chain of scopes from it; they
 * come as cp_rt_name.inl.
 *
 * Ownership: a cp_hotspot owns its caches; names are valid until the next
 * call.  Errors: -ENOMEM; what cannot be read leaves frames unnamed. */
#ifndef CP_HOTSPOT_H
#define CP_HOTSPOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../../runtime.h"

struct cp_hotspot;

/* the runtime table's row (lib/sampling/runtime.h) */
extern const struct cp_runtime cp_runtime_hotspot;

struct cp_hotspot *cp_hotspot_new(const char *verb);
void cp_hotspot_free(struct cp_hotspot *h);
/* Is this file named as the JVM's library is (libjvm.so)? */
bool cp_hotspot_named(const char *path);
/* A JVM in process p: 1 with *layout (its binary's); 0 when not; -ENOMEM */
int cp_hotspot_detect(struct cp_hotspot *h, struct cp_proc *p, unsigned *layout);
/* The unwinder's rule for pc of process pid (unwind.h's cp_unwind_hook) */
int cp_hotspot_unwind(struct cp_hotspot *h, uint32_t pid, unsigned layout, uint64_t pc, bool exact,
		      uint64_t *cfa_sp, bool *bp_saved);
/* Names the Java frames of a stack (runtime.h's cp_runtime.native) */
int cp_hotspot_frames(struct cp_hotspot *h, uint32_t pid, unsigned layout, const struct cp_sample_rec *s,
		      const uint64_t *pcs, const uint64_t *fps, int n, struct cp_rt_name *out);
void cp_hotspot_forget(struct cp_hotspot *h, uint32_t pid);

/* For the fuzz target: the name of the method at Method* m of process pid
 * with the offsets of Debian 12's OpenJDK 17 (NULL when it cannot be read),
 * and in *line the line of bci from its line table (0: not known); what it
 * reads is kept as for frames. */
const char *cp_hotspot_method17(struct cp_hotspot *h, uint32_t pid, uint64_t m, int32_t bci, int64_t *line);
/* For the fuzz target: the methods of the compiled frame at pc (those
 * inlined first) of process pid whose one code heap is [lo, hi), its segment
 * map at segmap, segments of 1 << log2 bytes, with the offsets of Debian
 * 12's OpenJDK 17: how many (CP_HOTSPOT_INLINE_MAX at most), their names
 * into names[] and their lines into lines[] (0: not known); 0 when pc is
 * not an nmethod's code or its method cannot be read.  The blobs read are
 * not kept; the methods are, as for frames. */
#define CP_HOTSPOT_INLINE_MAX 8
unsigned cp_hotspot_compiled17(struct cp_hotspot *h, uint32_t pid, uint64_t lo, uint64_t hi, uint64_t segmap,
			       int log2, uint64_t pc, const char **names, int64_t *lines);

#endif

/* SPDX-License-Identifier: MIT */
/* V8 (Node.js), a runtime of lib/sampling/runtime.h with no walker (its row
 * is cp_runtime_v8): JavaScript functions run as native code, in V8's JIT
 * code or in its interpreter's builtins, and keep frame pointers.  This names
 * those frames of a stack the recorder unwound, without --perf-basic-prof.
 * The facts it rests on are in docs/internals/v8.md.
 *
 * Detection: a process's mappings are looked at for a binary named as Node
 * is ("node", "nodejs", "libnode.so.*") whose symbols hold V8's post-mortem
 * constants (v8dbg_*): the offsets of the fields read here and the type ids
 * of the objects.  They are read from the file once per binary and make a
 * layout; a V8 without the constants needed is said once in the log, and its
 * processes keep native stacks.
 *
 * Naming: a frame with no CFI rule (cp_unwind_fp gives its rbp) holds its
 * JSFunction at rbp + off_fp_function, in the copy of the stack.  From it,
 * with process_vm_readv: JSFunction -> SharedFunctionInfo -> its name (a
 * String, or the ScopeInfo that holds it) and the start of the function in
 * its source, and Script -> the file, whose line ends (Script.line_ends, else
 * read from the source) turn that start into a line.  Every object's map is
 * checked for the type the constants say: a frame whose objects do not look
 * as expected (another kind of frame, a moved object, another version) keeps
 * its native name, never a wrong one.  What a SharedFunctionInfo names is
 * kept by (pid, its address, its name and script fields) and checked again
 * by reading those fields.  A frame's SharedFunctionInfo is kept by (pid, its
 * JSFunction, its pc, its bytecode array slot) for a few dozen samples: a
 * pc in optimized code and an interpreted frame's bytecode array are its
 * function's own, so a caller's frame, unchanged from sample to sample, is
 * named without a read (about 2 objects read a sample of a Node.js program,
 * not 11).
 *
 * Ownership: a cp_v8 owns its caches; the names cp_v8_frames gives are valid
 * until the next call.  Errors: -ENOMEM; a process or object that cannot be
 * read leaves its frames unnamed. */
#ifndef CP_V8_H
#define CP_V8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../../runtime.h"

struct cp_v8;

/* the runtime table's row (lib/sampling/runtime.h) */
extern const struct cp_runtime cp_runtime_v8;

/* verb: the command named in the log lines */
struct cp_v8 *cp_v8_new(const char *verb);
void cp_v8_free(struct cp_v8 *v);

/* Is this file named as Node's executable or library is? */
bool cp_v8_named(const char *path);

/* A layout from V8's constants: names[i] (without "v8dbg_") has value
 * values[i].  Returns its index (for cp_v8_frames), -1 when a constant this
 * needs is missing, -ENOMEM.  Detection makes them from a binary's symbols;
 * the fuzz target gives its own. */
int cp_v8_layout(struct cp_v8 *v, const char *const *names, const int32_t *values, size_t n);

/* A V8 in process p whose constants are known: 1 with *layout; 0 when not;
 * -ENOMEM. */
int cp_v8_detect(struct cp_v8 *v, struct cp_proc *p, unsigned *layout);

/* Names the JavaScript frames of a stack of process pid (the sample s, its
 * n frames' pcs and fps as cp_unwind_fp gives them): out[i].label is set for
 * each frame named, NULL for the others.  Returns how many were named. */
int cp_v8_frames(struct cp_v8 *v, uint32_t pid, unsigned layout, const struct cp_sample_rec *s,
		 const uint64_t *pcs, const uint64_t *fps, int n, struct cp_rt_name *out);

/* what is kept of process pid goes */
void cp_v8_forget(struct cp_v8 *v, uint32_t pid);

#endif

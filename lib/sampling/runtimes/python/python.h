/* SPDX-License-Identifier: MIT */
/* CPython, the first runtime of lib/sampling/runtime.h (its table's row is
 * cp_runtime_python): which processes run a CPython whose frame layout is
 * known, and what the Python frames its walker (bpf/runtimes/python.bpf.h)
 * sends are called.
 *
 * Detection: a process's executable mappings are looked at for a binary (the
 * interpreter, or libpython) that exports _PyRuntime and Py_Version in its
 * .dynsym; Py_Version (read from the file) gives the version, and the version
 * a layout: the offsets of the fields the BPF program follows (struct
 * cp_py_proc) and of those read here (the code object, strings, bytes).  The
 * layouts are data, one per version (python.c: layouts[]).  A binary of
 * another version is said once in the log, and its processes keep native
 * stacks only.
 *
 * Naming: a frame's code object is read once from the process's memory
 * (process_vm_readv: qualified name, file, first line, line table) and kept by
 * (pid, address); the instruction gives the line (the 3.11 location table).
 *
 * Ownership: a cp_python owns its caches; cp_python_code's result is valid
 * until the next call.  Errors: cp_python_detect returns 0 when the process is
 * not a known CPython (or cannot be read); -ENOMEM.  A code object that
 * cannot be read (the process is gone) gives NULL. */
#ifndef CP_PYTHON_H
#define CP_PYTHON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../../runtime.h"
#include "../../../../bpf/runtimes/python.h"

struct cp_python;

/* the runtime table's row (lib/sampling/runtime.h) */
extern const struct cp_runtime cp_runtime_python;

/* verb: the command named in the log lines (record, top) */
struct cp_python *cp_python_new(const char *verb);
void cp_python_free(struct cp_python *py);

/* Is this file (a path) named as an interpreter or libpython is
 * ("python3.11", "libpython3.12.so.1.0")?  Only such files are looked at. */
bool cp_python_named(const char *path);
/* A known CPython in process p: 1 with *out (the BPF map's value), the
 * address range [*eval_lo, *eval_hi) of _PyEval_EvalFrameDefault in p (the
 * native frames the Python frames go with) and *layout (for cp_python_code);
 * 0 when not (or not known); -ENOMEM. */
int cp_python_detect(struct cp_python *py, struct cp_proc *p, struct cp_py_proc *out, uint64_t *eval_lo,
		     uint64_t *eval_hi, unsigned *layout);

struct cp_py_code {
	const char *label;    /* what a frame shows: "name (file.py:first line)", the file's base name */
	const char *name;     /* the qualified name ("Class.method", "<module>") */
	const char *sysname;  /* the plain name */
	const char *file;     /* co_filename */
	int64_t first_line;
};
/* The code object at code (a frame's, CP_RT_* flags masked) in process pid,
 * and the line of instruction instr; NULL when it cannot be read.  *skip:
 * the frame is not yet running (3.11's incomplete frames: left out). */
const struct cp_py_code *cp_python_code(struct cp_python *py, uint32_t pid, unsigned layout, uint64_t code,
					uint64_t instr, bool generator, int64_t *line, bool *skip);
/* Forget process pid's code objects (it exited, or exec'd). */
void cp_python_forget(struct cp_python *py, uint32_t pid);

/* The offset cprof uses for a field of CPython major.minor's structures
 * ("tstate.native_thread_id", "code.co_linetable": python.c lists them), or
 * -1 when it has none: for the test against the installed headers. */
long cp_python_offset(unsigned major, unsigned minor, const char *field);

/* The line of code unit index `at` in a 3.11 location table (co_linetable)
 * of a code object starting at first_line; -1 when it has none. */
int64_t cp_python_line(const uint8_t *table, size_t len, int64_t first_line, int64_t at);

#endif

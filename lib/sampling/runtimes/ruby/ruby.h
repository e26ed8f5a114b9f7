/* SPDX-License-Identifier: MIT */
/* Ruby (CRuby), a runtime of lib/sampling/runtime.h (its table's row is
 * cp_runtime_ruby): which processes run a CRuby whose layout is known, and
 * what the Ruby frames its walker (bpf/runtimes/ruby.bpf.h) sends are called.
 *
 * Detection: a process's executable mappings are looked at for a binary (the
 * interpreter, or libruby) that exports ruby_current_vm_ptr, ruby_version
 * and rb_vm_exec in its .dynsym; ruby_version (read from the file) gives the
 * version, and the version a layout: the offsets the BPF program follows
 * (struct cp_rb_proc) and those read here (iseqs, strings, arrays, the line
 * tables).  The layouts are data, one per version (ruby.c: layouts[]).  The
 * native frames the Ruby frames go above are rb_vm_exec's (one for each run
 * of the interpreter that C started), or the interpreter's loop it calls,
 * vm_exec_core, when that is right above it (YJIT's code runs from
 * rb_vm_exec without it): vm_exec_core by its symbol when the binary has
 * one, else the largest function rb_vm_exec calls (its extent from
 * .eh_frame_hdr's table).  A binary of another version is said once in the
 * log, and its processes keep native stacks only.
 *
 * Naming: a frame's iseq is read once from the process's memory
 * (process_vm_readv: its label, path, first line and line table) and kept by
 * (pid, address), and read again when a frame's pc is not among its
 * instructions (the GC freed it and another iseq has its memory); the
 * frame's pc gives the line (the iseq's insn_info entries, found by position
 * through its succinct index table, or its positions array).
 *
 * Ownership: a cp_ruby owns its caches; a name's strings are valid until the
 * next call.  Errors: cp_ruby_detect returns 0 when the process is not a
 * known CRuby (or cannot be read); -ENOMEM.  An iseq that cannot be read (the
 * process is gone, or the memory is not an iseq) gives -1. */
#ifndef CP_RUBY_H
#define CP_RUBY_H

#include <stdbool.h>
#include <stdint.h>

#include "../../runtime.h"
#include "../../../../bpf/runtimes/ruby.h"

struct cp_ruby;

/* the runtime table's row (lib/sampling/runtime.h) */
extern const struct cp_runtime cp_runtime_ruby;

/* verb: the command named in the log lines (record, top) */
struct cp_ruby *cp_ruby_new(const char *verb);
void cp_ruby_free(struct cp_ruby *rb);

/* Is this file (a path) named as a Ruby interpreter or libruby is
 * ("ruby3.1", "libruby-3.1.so.3.1")?  Only such files are looked at. */
bool cp_ruby_named(const char *path);
/* A known CRuby in process p: 1 with *out (the BPF map's value) and *f; 0
 * when not (or not known); -ENOMEM. */
int cp_ruby_detect(struct cp_ruby *rb, struct cp_proc *p, struct cp_rb_proc *out, struct cp_rt_found *f);
/* The name of the iseq at iseq of process pid (layout: detect's), running
 * at pc: 0 with *out; 1 when the memory there is not an iseq (a frame being
 * pushed as it was sampled, or one freed): the frame is left out; -1 when it
 * cannot be read.  Only names are kept: what failed is read again next time. */
int cp_ruby_frame(struct cp_ruby *rb, uint32_t pid, unsigned layout, uint64_t iseq, uint64_t pc,
		  struct cp_rt_name *out);
/* Forget process pid's iseqs (it exited, or exec'd). */
void cp_ruby_forget(struct cp_ruby *rb, uint32_t pid);

/* The offset cprof uses for a field of CRuby major.minor's structures
 * ("cfp.ep", "body.location.label": ruby.c lists them), or -1 when it has
 * none: for the test against the installed MJIT header. */
long cp_ruby_offset(unsigned major, unsigned minor, const char *field);

#endif

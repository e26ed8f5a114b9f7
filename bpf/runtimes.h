/* SPDX-License-Identifier: MIT */
/* The runtimes whose own frames the sampler reads beside the native stack:
 * the one list, read by the BPF program (bpf/sampler.bpf.c, which calls each
 * runtime's walker) and by user space (lib/sampling/runtime.c, which makes
 * its table of struct cp_runtime from it).  A runtime NAME is
 *   bpf/runtimes/NAME.h      its per-process data (at most CP_RT_PROC_DATA
 *                            bytes), shared with user space;
 *   bpf/runtimes/NAME.bpf.h  its walker: static __u32 NAME_frames(const void
 *                            *data, struct cp_sample_rec *r, __u32 tid,
 *                            __u64 off), which writes the sampled thread's
 *                            frames (struct cp_rt_frame) at r->ustack[off]
 *                            and returns how many;
 *   lib/sampling/runtimes/NAME/  its user side: const struct cp_runtime
 *                            cp_runtime_NAME (lib/sampling/runtime.h);
 * and its line below: X(id, NAME), the id a number of its own (not 0), with
 * its walker's #include in the block under it.
 *
 * A runtime whose functions run as native code (a JIT's, an interpreter's
 * builtins, with frame pointers) needs no walker: user space names those
 * frames of the unwound stack (cp_runtime.native).  It is listed in
 * CP_RUNTIMES_NATIVE, with only its user side. */
#ifndef CP_RUNTIMES_H
#define CP_RUNTIMES_H

#define CP_RUNTIMES(X) \
	X(1, python) \
	X(4, ruby)

#define CP_RUNTIMES_NATIVE(X) \
	X(2, v8) \
	X(3, hotspot)

/* their ids: CP_RT_ID_python, ... */
enum cp_rt_id {
	CP_RT_ID_NONE = 0,
#define CP_RT_ENUM(id, name) CP_RT_ID_##name = id,
	CP_RUNTIMES(CP_RT_ENUM)
	CP_RUNTIMES_NATIVE(CP_RT_ENUM)
#undef CP_RT_ENUM
};

#ifdef CP_BPF_WALKERS /* bpf/sampler.bpf.c, after the helpers the walkers use */
#include "runtimes/python.bpf.h"
#include "runtimes/ruby.bpf.h"
#endif

#endif

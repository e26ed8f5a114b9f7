/* SPDX-License-Identifier: MIT */
/* CPython's walker (bpf/runtimes/python.h says what it follows): included by
 * bpf/sampler.bpf.c through bpf/runtimes.h, after ptr_at(). */
#ifndef CP_BPF_PYTHON_WALK_H
#define CP_BPF_PYTHON_WALK_H

#include "python.h"

/* the 8 bytes at off of a frame read (0 past what was read) */
static __always_inline __u64 py_field(const __u8 *buf, __u16 off)
{
	__u64 v = 0;

	off &= 127;
	if (off <= CP_PY_FRAME_READ - 8)
		__builtin_memcpy(&v, buf + off, 8);
	return v;
}

/* The walk over a process's thread states, then frames (bpf_loop callbacks:
 * verified once, not once per step) */
struct py_walk {
	const struct cp_py_proc *pp;
	__u32 tid, n;
	__u64 ts, frame, hit; /* hit: ts is the sampled thread's */
	struct cp_sample_rec *r;
	__u64 off; /* where the frames go: ustack[off] */
};

static long py_thread_step(__u32 i, void *arg)
{
	struct py_walk *w = arg;

	(void)i;
	if (!w->ts)
		return 1;
	if ((__u32)ptr_at(w->ts + w->pp->tstate_native_tid) == w->tid) {
		w->hit = 1;
		return 1;
	}
	w->ts = ptr_at(w->ts + w->pp->tstate_next);
	return 0;
}

static long py_frame_step(__u32 i, void *arg)
{
	struct py_walk *w = arg;
	const struct cp_py_proc *pp = w->pp;
	struct cp_rt_frame *f;
	__u8 buf[128];
	__u64 code, off;

	if (!w->frame || i >= CP_RT_FRAMES_MAX)
		return 1;
	if (bpf_probe_read_user(buf, CP_PY_FRAME_READ, (void *)w->frame))
		return 1;
	code = py_field(buf, pp->frame_code) & ~7ull;
	if (pp->frame_is_entry < CP_PY_FRAME_READ && buf[pp->frame_is_entry] & 1)
		code |= CP_RT_ENTRY;
	if (pp->frame_owner < CP_PY_FRAME_READ) {
		__u8 owner = buf[pp->frame_owner];

		if (owner == pp->owner_generator)
			code |= CP_PY_GENERATOR;
		if (owner == pp->owner_cstack)
			code |= CP_RT_ENTRY | CP_RT_SHIM;
	}
	off = w->off + (__u64)i * sizeof(struct cp_rt_frame);
	if (off > CP_USTACK_MAX + (CP_RT_FRAMES_MAX - 1) * sizeof(struct cp_rt_frame))
		return 1;
	f = (struct cp_rt_frame *)&w->r->ustack[off];
	f->addr = code;
	f->data = py_field(buf, pp->frame_instr);
	w->n = i + 1;
	w->frame = py_field(buf, pp->frame_previous);
	return 0;
}

/* The sampled thread's Python frames at r->ustack[off] (the buffer has room
 * for them past the stack's end): its thread state, then its frames.  How
 * many. */
static __always_inline __u32 python_frames(const void *data, struct cp_sample_rec *r, __u32 tid, __u64 off)
{
	const struct cp_py_proc *pp = data;
	struct py_walk w = {};

	w.pp = pp;
	w.tid = tid;
	w.r = r;
	w.off = off;
	w.ts = ptr_at(ptr_at(pp->runtime + pp->runtime_interp_head) + pp->interp_threads_head);
	bpf_loop(CP_PY_THREADS_MAX, py_thread_step, &w, 0);
	if (w.hit) {
		w.frame = pp->tstate_cframe ? ptr_at(ptr_at(w.ts + pp->tstate_cframe) + pp->cframe_current_frame)
					    : ptr_at(w.ts + pp->tstate_current_frame);
		bpf_loop(CP_RT_FRAMES_MAX, py_frame_step, &w, 0);
	}
	return w.n;
}

#endif

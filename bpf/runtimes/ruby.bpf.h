/* SPDX-License-Identifier: MIT */
/* Ruby's walker (bpf/runtimes/ruby.h says what it follows): included by
 * bpf/sampler.bpf.c through bpf/runtimes.h, after ptr_at(). */
#ifndef CP_BPF_RUBY_WALK_H
#define CP_BPF_RUBY_WALK_H

#include "ruby.h"

#define CP_RB_CFP_READ 48

/* the 8 bytes at off of a control frame read (0 past what was read) */
static __always_inline __u64 rb_field(const __u8 *buf, __u16 off)
{
	__u64 v = 0;

	off &= 63;
	if (off <= CP_RB_CFP_READ - 8)
		__builtin_memcpy(&v, buf + off, 8);
	return v;
}

/* The walk over a ractor's threads, then an ec's control frames (bpf_loop
 * callbacks, as CPython's) */
struct rb_walk {
	const struct cp_rb_proc *rp;
	__u32 tid, n;
	__u64 head, node, ec; /* ec: the sampled thread's (0: not found yet) */
	__u64 cfp, end;
	struct cp_sample_rec *r;
	__u64 off; /* where the frames go: ustack[off] */
};

static long rb_thread_step(__u32 i, void *arg)
{
	struct rb_walk *w = arg;
	__u64 th;

	(void)i;
	if (!w->node || w->node == w->head)
		return 1;
	th = w->node - w->rp->thread_node;
	if ((__u32)ptr_at(th + w->rp->thread_tid) == w->tid) {
		w->ec = ptr_at(th + w->rp->thread_ec);
		return 1;
	}
	w->node = ptr_at(w->node); /* list_node.next */
	return 0;
}

static long rb_frame_step(__u32 i, void *arg)
{
	struct rb_walk *w = arg;
	const struct cp_rb_proc *rp = w->rp;
	struct cp_rt_frame *f;
	__u8 buf[CP_RB_CFP_READ];
	__u64 iseq, pc, flags, magic, off, addr;

	(void)i;
	if (w->cfp >= w->end || w->n >= CP_RT_FRAMES_MAX)
		return 1;
	if (bpf_probe_read_user(buf, CP_RB_CFP_READ, (void *)w->cfp))
		return 1;
	w->cfp += rp->cfp_size;
	pc = rb_field(buf, rp->cfp_pc);
	iseq = rb_field(buf, rp->cfp_iseq);
	flags = ptr_at(rb_field(buf, rp->cfp_ep));
	magic = flags & CP_RB_FRAME_MAGIC_MASK;
	if (iseq && pc && !(flags & CP_RB_FRAME_FLAG_CFRAME) && magic != CP_RB_FRAME_MAGIC_CFUNC &&
	    magic != CP_RB_FRAME_MAGIC_IFUNC && magic != CP_RB_FRAME_MAGIC_DUMMY)
		addr = iseq & ~7ull;
	else if (flags & CP_RB_FRAME_FLAG_FINISH)
		addr = CP_RT_SHIM; /* no Ruby function, but it ends a vm_exec */
	else
		return 0;
	if (flags & CP_RB_FRAME_FLAG_FINISH)
		addr |= CP_RT_ENTRY;
	off = w->off + (__u64)w->n * sizeof(struct cp_rt_frame);
	if (off > CP_USTACK_MAX + (CP_RT_FRAMES_MAX - 1) * sizeof(struct cp_rt_frame))
		return 1;
	f = (struct cp_rt_frame *)&w->r->ustack[off];
	f->addr = addr;
	f->data = pc;
	w->n++;
	return 0;
}

/* The sampled thread's Ruby frames at r->ustack[off]: its execution
 * context, then its control frames.  How many. */
static __always_inline __u32 ruby_frames(const void *data, struct cp_sample_rec *r, __u32 tid, __u64 off)
{
	const struct cp_rb_proc *rp = data;
	struct rb_walk w = {};
	__u64 ractor, stack;

	w.rp = rp;
	w.tid = tid;
	w.r = r;
	w.off = off;
	ractor = ptr_at(ptr_at(rp->vm_ptr) + rp->vm_main_ractor);
	if (!ractor)
		return 0;
	/* the thread that holds the VM's lock (the usual one on the CPU), else a walk */
	w.ec = ptr_at(ractor + rp->ractor_running_ec);
	if (!w.ec || (__u32)ptr_at(ptr_at(w.ec + rp->ec_thread) + rp->thread_tid) != tid) {
		w.ec = 0;
		w.head = ractor + rp->ractor_threads;
		w.node = ptr_at(w.head);
		bpf_loop(CP_RB_THREADS_MAX, rb_thread_step, &w, 0);
		if (!w.ec)
			return 0;
	}
	w.cfp = ptr_at(w.ec + rp->ec_cfp);
	stack = ptr_at(w.ec + rp->ec_stack);
	w.end = stack + ptr_at(w.ec + rp->ec_stack_size) * 8;
	if (!w.cfp || w.cfp < stack || w.end < w.cfp || !rp->cfp_size)
		return 0;
	bpf_loop(CP_RB_FRAMES_SEEN, rb_frame_step, &w, 0);
	return w.n;
}

#endif

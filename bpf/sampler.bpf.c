// SPDX-License-Identifier: GPL-2.0 OR MIT
/* The kernel side of `cprof record`: a perf_event program on a cpu-clock
 * event per online CPU.  Per sample it sends, through a ring buffer: pid,
 * tid, both names, cpu, cgroup id, the kernel stack (the kernel's unwinder)
 * and, for user tasks, the user registers and up to 16 KiB of the user stack
 * above the stack pointer, which user space unwinds with DWARF CFI (libdw), as
 * perf's --call-graph dwarf does.  Filters (pids, a cgroup, idle) run here so
 * that nothing is copied for samples nobody asked for. */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "sampler.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

#define PF_KTHREAD 0x00200000
/* how far below the main stack's top sp may be and still be on it (the
 * kernel keeps mmap_base at least 128 MiB below the stack) */
#define MAIN_STACK_SPAN (64ull << 20)

/* knobs, set before load */
const volatile bool filter_pids = false;   /* only tgids in `pids` */
const volatile bool filter_cgroup = false; /* only tasks under cgroups[0] */
const volatile bool follow_forks = false;  /* children of a tgid in `pids` join it */
const volatile bool with_idle = false;     /* keep samples of the idle task */
/* off-CPU: a wait predicted to last d ns has its stacks sent with probability
 * min(1, d / offcpu_period_ns) (cp_switch below) */
const volatile __u64 offcpu_period_ns = 10000000;
const volatile __u64 offcpu_thr_per_ns = 429; /* 2^32 / offcpu_period_ns */
const volatile __u64 offcpu_min_ns = 0;       /* shorter waits are not counted */

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 16 << 20); /* resized before load */
} samples SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, __u8);
} pids SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_CGROUP_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} cgroups SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct cp_sampler_stats);
} stats SEC(".maps");

/* where a record is put together before it goes into the ring with just the
 * stack it has (a reservation would take the whole CP_USTACK_MAX) */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct cp_sample_buf);
} scratch SEC(".maps");

/* processes that run a runtime of bpf/runtimes.h, by tgid: which, and where
 * its frames are (user space fills it) */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct cp_rt_proc);
} rtprocs SEC(".maps");

/* off-CPU: when the thread left the CPU and why, kept with the thread (not
 * per CPU: it comes back on another one) */
struct offcpu_task {
	__u64 start; /* when it left the CPU; 0: on it */
	__u64 pred[3]; /* the length of its waits, predicted, by kind (pred_of) */
	__u32 seq;   /* its waits, numbered */
	__u32 state; /* CP_OFFCPU_* of the wait */
	__u32 sent;  /* the wait's stacks were sent */
	__u32 rng;   /* xorshift32 state for the choice (0: not seeded yet) */
	__u64 acc;   /* the length of its waits since the last end sent */
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct offcpu_task);
} offcpu_tasks SEC(".maps");

/* bpf_find_vma's callback: the end of the mapping holding the stack pointer */
static long vma_end(struct task_struct *task, struct vm_area_struct *vma, void *end)
{
	(void)task;
	*(__u64 *)end = vma->vm_end;
	return 0;
}

/* Is the current task one of those asked for (pids, cgroup, idle)? */
static __always_inline bool wanted(__u32 tgid, __u32 tid)
{
	if (tid == 0 && !with_idle)
		return false;
	if (filter_pids && !bpf_map_lookup_elem(&pids, &tgid))
		return false;
	if (filter_cgroup && bpf_current_task_under_cgroup(&cgroups, 0) != 1)
		return false;
	return true;
}

static __always_inline __u64 ptr_at(__u64 addr)
{
	__u64 v = 0;

	if (!addr || bpf_probe_read_user(&v, sizeof(v), (void *)addr))
		return 0;
	return v;
}

/* the runtimes' walkers (bpf/runtimes.h), which use ptr_at() */
#define CP_BPF_WALKERS
#include "runtimes.h"

/* The sampled thread's runtime frames, into b right after its stack (at
 * ustack[off]: the buffer has room for them past the stack's end), by the
 * walker of the runtime tgid runs.  Their size in bytes, 0 when tgid runs
 * none (user space fills rtprocs).  A global function: the verifier checks
 * it once on its own, instead of once for each of the many ways through the
 * stack copy in send() (219k instructions processed at load with CPython's
 * walker inlined there, 18k without: most of the recorder's start-up). */
__noinline __u64 rt_frames(struct cp_sample_buf *b, __u32 tgid, __u32 tid, __u64 off)
{
	const struct cp_rt_proc *rp;
	__u32 n = 0;

	if (!b)
		return 0;
	rp = bpf_map_lookup_elem(&rtprocs, &tgid);
	if (!rp)
		return 0;
	switch (rp->runtime) {
#define CP_RT_WALK(id, name)                                     \
	case id:                                                 \
		n = name##_frames(rp->data, &b->r, tid, off);    \
		break;
		CP_RUNTIMES(CP_RT_WALK)
#undef CP_RT_WALK
	}
	if (n > CP_RT_FRAMES_MAX)
		n = 0;
	b->r.rt_frames = n;
	b->r.runtime = n ? rp->runtime : 0;
	return (__u64)n * sizeof(struct cp_rt_frame);
}

/* A record of the current task, its kernel stack (from ctx) and its user
 * registers and stack, into the ring: one function for the cpu-clock samples
 * and the off-CPU ones.  in_kernel: the task was in the kernel (for the
 * execve check; a thread leaving the CPU always is). */
static __always_inline void send(void *ctx, struct cp_sampler_stats *st, __u32 tgid, __u32 tid, __u32 flags,
				 __u32 offcpu_seq, __u32 offcpu_thr, __u32 offcpu_state, bool in_kernel)
{
	struct cp_sample_buf *b;
	struct cp_sample_rec *r;
	__u64 rtlen = 0;
	struct task_struct *task;
	__u32 zero = 0;
	__u64 ulen;
	bool wake;
	long n;

	b = bpf_map_lookup_elem(&scratch, &zero);
	if (!b)
		return;
	r = &b->r;

	task = bpf_get_current_task_btf();
	r->time_ns = bpf_ktime_get_ns();
	r->cgroup_id = bpf_get_current_cgroup_id();
	r->pid = tgid;
	r->tid = tid;
	r->cpu = bpf_get_smp_processor_id();
	r->flags = flags;
	r->offcpu_ns = 0;
	r->offcpu_acc = 0;
	r->offcpu_seq = offcpu_seq;
	r->offcpu_thr = offcpu_thr;
	r->offcpu_state = offcpu_state;
	r->rt_frames = 0;
	r->runtime = 0;
	bpf_get_current_comm(r->comm, sizeof(r->comm));
	BPF_CORE_READ_STR_INTO(&r->pcomm, task, group_leader, comm);

	/* off-CPU: without the tracepoint's own two frames (the program, bpf_trace_run) */
	n = bpf_get_stack(ctx, r->kstack, sizeof(r->kstack), flags & CP_SAMPLE_OFFCPU ? 2 : 0);
	r->kstack_len = n > 0 ? (__u32)n : 0;
	r->ustack_len = 0;

	if (task->flags & PF_KTHREAD || !task->mm) {
		r->flags |= CP_SAMPLE_KTHREAD;
	} else {
		struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(task);
		__u64 sp, end, top;
		__u32 i;

		r->regs[CP_REG_IP] = BPF_CORE_READ(regs, ip);
		r->regs[CP_REG_SP] = sp = BPF_CORE_READ(regs, sp);
		r->regs[CP_REG_BP] = BPF_CORE_READ(regs, bp);
		r->regs[CP_REG_BX] = BPF_CORE_READ(regs, bx);
		r->regs[CP_REG_R12] = BPF_CORE_READ(regs, r12);
		r->regs[CP_REG_R13] = BPF_CORE_READ(regs, r13);
		r->regs[CP_REG_R14] = BPF_CORE_READ(regs, r14);
		r->regs[CP_REG_R15] = BPF_CORE_READ(regs, r15);
		r->flags |= CP_SAMPLE_USER;
		/* in the kernel, in execve (x86-64 syscall numbers): lib/sampling/recorder.c
		 * leaves the user part out when the ip is not in the new program (the
		 * registers are the old program's until execve sets the new ones; a
		 * thread may also leave the CPU in between, preempted) */
		if (in_kernel) {
			__u64 nr = BPF_CORE_READ(regs, orig_ax);

			if (nr == 59 /* execve */ || nr == 322 /* execveat */)
				r->flags |= CP_SAMPLE_EXECVE;
		}
		/* As much as there is up to the end of the stack's mapping (most
		 * threads use far less than CP_USTACK_MAX), in one read; when the
		 * mapping cannot be looked up (its lock is busy) or the read fails
		 * (a page is not resident), chunk by chunk: a read that crosses
		 * into an unmapped page fails whole. */
		/* The main thread's stack needs no lookup: it is mapped from sp up
		 * to the process's first frame (mm->start_stack, where argc is);
		 * mmap regions start at least 128 MiB below it.  Unwinding stops
		 * at that frame, so the arguments and environment above it are
		 * left out.  (bpf_find_vma takes the mmap lock, and gives up when
		 * a writer holds it, as malloc's mmap and munmap do often.) */
		top = BPF_CORE_READ(task, mm, start_stack) + 64;
		if (sp < top && top - sp <= MAIN_STACK_SPAN) {
			__u64 len = top - sp;

			if (len > CP_USTACK_MAX)
				len = CP_USTACK_MAX;
			if (bpf_probe_read_user(r->ustack, len, (void *)sp) == 0)
				r->ustack_len = len;
		}
		end = 0;
		if (r->ustack_len == 0 && bpf_find_vma(task, sp, vma_end, &end, 0) == 0 && end > sp) {
			__u64 len = end - sp;

			if (len > CP_USTACK_MAX)
				len = CP_USTACK_MAX;
			if (bpf_probe_read_user(r->ustack, len, (void *)sp) == 0)
				r->ustack_len = len;
		}
		if (r->ustack_len == 0 && bpf_probe_read_user(r->ustack, CP_USTACK_MAX, (void *)sp) == 0) {
			r->ustack_len = CP_USTACK_MAX;
		} else if (r->ustack_len == 0) {
			for (i = 0; i < CP_USTACK_CHUNKS; i++) {
				if (bpf_probe_read_user(&r->ustack[i * CP_USTACK_CHUNK], CP_USTACK_CHUNK,
							(void *)(sp + i * CP_USTACK_CHUNK)))
					break;
			}
			r->ustack_len = i * CP_USTACK_CHUNK;
			/* the last part below the end of the mapping, in smaller steps */
			if (i < CP_USTACK_CHUNKS) {
				__u32 base = i * CP_USTACK_CHUNK, j;

				for (j = 0; j < CP_USTACK_CHUNK / 64 - 1; j++) {
					__u32 off = base + j * 64;

					if (off > CP_USTACK_MAX - 64)
						break;
					if (bpf_probe_read_user(&r->ustack[off], 64, (void *)(sp + off)))
						break;
				}
				r->ustack_len = base + j * 64;
			}
		}
		if (r->ustack_len == 0)
			st->ustack_fault++;
	}

	/* the record up to the end of the stack copied; the reader is woken
	 * only when the ring fills up (it drains on a timer) */
	ulen = r->ustack_len;
	if (ulen > CP_USTACK_MAX)
		ulen = CP_USTACK_MAX;
	/* a runtime's thread: its frames, after the stack (8-aligned) */
	if (!(r->flags & CP_SAMPLE_KTHREAD)) {
		__u64 off = (ulen + 7) & ~7ull;

		if (off > CP_USTACK_MAX)
			off = CP_USTACK_MAX;
		rtlen = rt_frames(b, tgid, tid, off);
		if (rtlen > CP_RT_FRAMES_MAX * sizeof(struct cp_rt_frame)) {
			rtlen = 0;
			r->rt_frames = 0;
			r->runtime = 0;
		}
		if (rtlen)
			ulen = off;
	}
	wake = bpf_ringbuf_query(&samples, BPF_RB_AVAIL_DATA) > bpf_ringbuf_query(&samples, BPF_RB_RING_SIZE) / 8;
	if (bpf_ringbuf_output(&samples, r, __builtin_offsetof(struct cp_sample_rec, ustack) + ulen + rtlen,
			       wake ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP))
		st->dropped++;
}

SEC("perf_event")
int cp_sample(struct bpf_perf_event_data *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, tid = (__u32)id, zero = 0;
	struct cp_sampler_stats *st;

	if (!wanted(tgid, tid))
		return 0;
	st = bpf_map_lookup_elem(&stats, &zero);
	if (!st)
		return 0;
	st->samples++;
	send(ctx, st, tgid, tid, 0, 0, 0, 0, ctx->regs.ip >= 0xffff800000000000ull);
	return 0;
}

/* A thread's waits of one kind are alike, and kinds differ: a thread that
 * sleeps on a pipe for microseconds is preempted now and then for
 * milliseconds.  One prediction for both would follow each preemption up and
 * send stacks for the short sleeps after it, so each kind has its own. */
static __always_inline __u32 pred_of(__u32 state)
{
	return state == CP_OFFCPU_RUNQ ? 0 : state == CP_OFFCPU_DISK ? 1 : 2;
}

/* The time of a switch, in ns: the run queue's clock (sched_clock), which
 * __schedule has just brought up to date, read through the task's CFS run
 * queue (3 loads) instead of bpf_ktime_get_ns, which costs a third of this
 * program on a guest (44 of about 140 ns here).  Waits end on other CPUs
 * than they start: the run queues' clocks are one clock (sched_clock_cpu)
 * while it is stable; a wait whose end reads before its start counts 0.
 * Without CFS groups (no cfs_rq->rq) the monotonic clock; 0: none. */
static __always_inline __u64 switch_clock(struct task_struct *t)
{
	if (bpf_core_field_exists(((struct cfs_rq *)0)->rq)) {
		struct cfs_rq *cfs = t->se.cfs_rq;
		struct rq *rq = cfs ? cfs->rq : NULL;

		return rq ? rq->clock : 0;
	}
	return bpf_ktime_get_ns();
}

/* Off-CPU: at every switch (tp_btf/sched_switch, current is prev), prev, a
 * thread leaving the CPU, does two things; next, the idle task or a thread
 * coming back, costs nothing (every switch of the machine comes here, and
 * half of a ping-pong's are to or from the idle task).
 *
 * The wait before the run that ends now: it ended when prev came back on a
 * CPU (sched_info.last_arrival, the run queue's clock, which the kernel
 * sets at every arrival).  Its length goes into the prediction and the sum
 * of the thread's waits (acc), and, if the wait was chosen (its stacks were
 * sent when it began), out in a small record (CP_SAMPLE_OFFCPU_END) that
 * user space joins to them.  A wait is so closed at the thread's next
 * switch, not at its return: one program run a switch, not two.
 *
 * The wait that begins now: it may be long or short, which is not known
 * yet, so its stacks (which only prev can read: its user memory is
 * current's) are sent now with a probability p chosen from the thread's
 * last waits of the same kind (a sleep, I/O, or preempted: pred_of), and
 * user space weights the wait by its length / p when it ends.  Sending
 * lengthens the wait, so that alone is biased: every wait's length is also
 * added up (acc) and goes with the next end sent, and user space scales the
 * thread's values to those exact sums (lib/sampling/offtotals.h).  p =
 * min(1, predicted / offcpu_period_ns), at least 1/4096, and 1 for a
 * thread's first four waits and its first of each kind; the prediction
 * follows a longer wait at once and a shorter one by a quarter: a thread
 * that waits long (a daemon's sleep) is caught every time, a context-switch
 * storm of 10 us waits costs a stack in a thousand. */
SEC("tp_btf/sched_switch")
int BPF_PROG(cp_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	__u64 now, thr, pred, k0;
	__u32 tgid, tid, zero = 0;
	struct cp_sampler_stats *st;
	struct offcpu_task *o;
	unsigned int state;
	bool dead;

	(void)next;
	tgid = prev->tgid; /* current is prev */
	tid = prev->pid;
	if (tid == 0 || prev->flags & PF_KTHREAD)
		return 0;
	state = prev->__state;
	dead = state & 0x80; /* TASK_DEAD: its last switch, it will not come back */
	/* a dying thread has storage only if it was wanted; its tgid may have
	 * left `pids` already (cp_exit), and its last wait is to be closed */
	if (!dead && !wanted(tgid, tid))
		return 0;
	now = switch_clock(prev);
	if (!now)
		return 0;
	o = bpf_task_storage_get(&offcpu_tasks, prev, 0, dead ? 0 : BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!o)
		return 0;
	if (o->start) {
		__u64 back = prev->sched_info.last_arrival;
		__u64 d = back > o->start ? back - o->start : 0;
		__u64 *pk = &o->pred[pred_of(o->state)];
		struct cp_sample_rec *r;

		/* the prediction: up to a longer wait at once, down by a quarter
		 * of the way to a shorter one */
		*pk = d >= *pk ? d : *pk - *pk / 4 + d / 4;
		if (d >= offcpu_min_ns)
			o->acc += d;
		if (o->sent && (r = bpf_map_lookup_elem(&scratch, &zero)) && (st = bpf_map_lookup_elem(&stats, &zero))) {
			r->time_ns = bpf_ktime_get_ns(); /* user space orders records by it */
			r->cgroup_id = 0;
			r->pid = tgid;
			r->tid = tid;
			r->cpu = bpf_get_smp_processor_id();
			r->flags = CP_SAMPLE_OFFCPU_END;
			r->offcpu_ns = d;
			r->offcpu_acc = o->acc;
			o->acc = 0;
			r->offcpu_seq = o->seq;
			r->offcpu_thr = 0;
			r->offcpu_state = o->state;
			r->rt_frames = 0;
			r->runtime = 0;
			if (bpf_ringbuf_output(&samples, r, CP_SAMPLE_END_LEN, BPF_RB_NO_WAKEUP))
				st->dropped++;
		}
		o->start = 0;
		o->sent = 0;
	}
	if (dead)
		return 0;
	o->start = now;
	o->state = preempt || state == 0 /* TASK_RUNNING: yielded */ ? CP_OFFCPU_RUNQ
		 : state & 2 /* TASK_UNINTERRUPTIBLE */ ? CP_OFFCPU_DISK : CP_OFFCPU_SLEEP;
	o->seq++;
	pred = o->pred[pred_of(o->state)];
	/* the probability, in 2^-32: 0 stands for 1 (a thread's first waits,
	 * while its predictions are young, and its first of a kind, with
	 * nothing to predict it from, are all sent) */
	if (o->seq <= 4 || pred == 0 || pred >= offcpu_period_ns) {
		thr = 0;
	} else {
		__u32 x = o->rng ? o->rng : bpf_get_prandom_u32() | 1;

		thr = pred * offcpu_thr_per_ns; /* < 2^32 */
		if (thr < (1ull << 20))
			thr = 1ull << 20; /* 1/4096 */
		/* the thread's own generator (xorshift32, seeded from the
		 * kernel's once): a helper call less on every switch */
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		o->rng = x;
		if (x >= thr)
			return 0;
	}
	st = bpf_map_lookup_elem(&stats, &zero);
	if (!st)
		return 0;
	o->sent = 1;
	st->offcpu_sent++;
	k0 = bpf_ktime_get_ns();
	send(ctx, st, tgid, tid, CP_SAMPLE_OFFCPU, o->seq, (__u32)thr, o->state, true);
	/* the wait starts after the copy: tens of microseconds here, which
	 * would otherwise be charged to the waits chosen (and, a ping-pong's
	 * partner waiting on this thread meanwhile, lengthen them); the copy
	 * is timed with the monotonic clock, the waits with the run queue's */
	o->start = now + (bpf_ktime_get_ns() - k0);
	return 0;
}

/* raw tracepoints, not tp_btf: those need the kernel's whole BTF to attach
 * (lib/sampling/btfmin.h), so the task fields are read with CO-RE */
SEC("raw_tp/sched_process_fork")
int BPF_PROG(cp_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 ptgid = BPF_CORE_READ(parent, tgid), ctgid = BPF_CORE_READ(child, tgid);
	__u8 one = 1;

	if (!follow_forks || ptgid == ctgid)
		return 0;
	if (bpf_map_lookup_elem(&pids, &ptgid))
		bpf_map_update_elem(&pids, &ctgid, &one, BPF_ANY);
	return 0;
}

SEC("raw_tp/sched_process_exit")
int BPF_PROG(cp_exit, struct task_struct *task)
{
	__u32 tgid = BPF_CORE_READ(task, tgid);

	/* the last thread of a followed process leaves: forget its tgid */
	if (follow_forks && BPF_CORE_READ(task, pid) == tgid)
		bpf_map_delete_elem(&pids, &tgid);
	return 0;
}

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
	__type(value, struct cp_sample_rec);
} scratch SEC(".maps");

/* bpf_find_vma's callback: the end of the mapping holding the stack pointer */
static long vma_end(struct task_struct *task, struct vm_area_struct *vma, void *end)
{
	(void)task;
	*(__u64 *)end = vma->vm_end;
	return 0;
}

SEC("perf_event")
int cp_sample(struct bpf_perf_event_data *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, tid = (__u32)id, zero = 0;
	struct cp_sampler_stats *st;
	struct cp_sample_rec *r;
	struct task_struct *task;
	__u64 ulen;
	bool wake;
	long n;

	if (tid == 0 && !with_idle)
		return 0;
	if (filter_pids && !bpf_map_lookup_elem(&pids, &tgid))
		return 0;
	if (filter_cgroup && bpf_current_task_under_cgroup(&cgroups, 0) != 1)
		return 0;
	st = bpf_map_lookup_elem(&stats, &zero);
	if (!st)
		return 0;
	st->samples++;
	r = bpf_map_lookup_elem(&scratch, &zero);
	if (!r)
		return 0;

	task = bpf_get_current_task_btf();
	r->time_ns = bpf_ktime_get_ns();
	r->cgroup_id = bpf_get_current_cgroup_id();
	r->pid = tgid;
	r->tid = tid;
	r->cpu = bpf_get_smp_processor_id();
	r->flags = 0;
	bpf_get_current_comm(r->comm, sizeof(r->comm));
	BPF_CORE_READ_STR_INTO(&r->pcomm, task, group_leader, comm);

	n = bpf_get_stack(ctx, r->kstack, sizeof(r->kstack), 0);
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
		 * leaves the user part out when the ip is not in the new program */
		if (ctx->regs.ip >= 0xffff800000000000ull) {
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
	wake = bpf_ringbuf_query(&samples, BPF_RB_AVAIL_DATA) > bpf_ringbuf_query(&samples, BPF_RB_RING_SIZE) / 8;
	if (bpf_ringbuf_output(&samples, r, __builtin_offsetof(struct cp_sample_rec, ustack) + ulen,
			       wake ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP))
		st->dropped++;
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

/* SPDX-License-Identifier: MIT */
/* The record layout shared by bpf/sampler.bpf.c and lib/sampling/sampler.c: fixed-width
 * types only, no padding surprises (every field is naturally aligned). */
#ifndef CP_SAMPLER_H
#define CP_SAMPLER_H

#define CP_KSTACK_MAX 127        /* kernel frames (the kernel's own limit) */
#define CP_USTACK_CHUNK 512      /* the user stack is copied in chunks ... */
#define CP_USTACK_CHUNKS 32      /* ... up to 16 KiB above the stack pointer */
#define CP_USTACK_MAX (CP_USTACK_CHUNK * CP_USTACK_CHUNKS)
#define CP_COMM_LEN 16

/* user registers, in this order (x86-64) */
enum { CP_REG_IP, CP_REG_SP, CP_REG_BP, CP_REG_BX, CP_REG_R12, CP_REG_R13, CP_REG_R14, CP_REG_R15, CP_NREGS };

/* sample flags */
#define CP_SAMPLE_USER 1u   /* regs and ustack hold the interrupted user context */
#define CP_SAMPLE_KTHREAD 2u /* a kernel thread: no user part */
#define CP_SAMPLE_EXECVE 4u  /* taken in the kernel inside execve: once the new program's
			      * memory is in place, the user registers are still the old
			      * program's until execve sets up the new ones */
#define CP_SAMPLE_OFFCPU 8u  /* not a cpu-clock sample: the thread is leaving the CPU, in
			      * state offcpu_state, and the stacks are where it waits; chosen
			      * with probability offcpu_thr / 2^32 (0: always) as its wait
			      * number offcpu_seq */
#define CP_SAMPLE_OFFCPU_END 16u /* the thread is back on a CPU after offcpu_ns: the end of
				  * its wait offcpu_seq; only the record's header is sent
				  * (CP_SAMPLE_END_LEN bytes) */

/* why a thread was off the CPU (offcpu_state) */
#define CP_OFFCPU_SLEEP 'S'   /* interruptible sleep: waiting for an event (a timer, a socket, a lock) */
#define CP_OFFCPU_DISK 'D'    /* uninterruptible: usually I/O */
#define CP_OFFCPU_RUNQ 'R'    /* runnable, preempted: waiting for a CPU (run-queue latency) */

#define CP_SAMPLE_END_LEN __builtin_offsetof(struct cp_sample_rec, comm)

struct cp_sample_rec {
	__u64 time_ns;    /* CLOCK_MONOTONIC */
	__u64 cgroup_id;
	__u32 pid, tid;   /* tgid and thread id, as user space sees them (init namespace) */
	__u32 cpu, flags;
	__u64 offcpu_ns;          /* CP_SAMPLE_OFFCPU_END: how long the wait was */
	__u32 offcpu_seq, offcpu_thr; /* CP_SAMPLE_OFFCPU(_END) */
	__u32 offcpu_state, pad;  /* CP_SAMPLE_OFFCPU(_END): CP_OFFCPU_* */
	char comm[CP_COMM_LEN];   /* the thread's name */
	char pcomm[CP_COMM_LEN];  /* the process's (thread group leader's) name */
	__u64 regs[CP_NREGS];
	__u32 kstack_len, ustack_len; /* in bytes */
	__u64 kstack[CP_KSTACK_MAX];
	__u8 ustack[CP_USTACK_MAX];   /* only ustack_len bytes are sent */
};

/* per-CPU counters, summed by user space */
struct cp_sampler_stats {
	__u64 samples, dropped, ustack_fault;
	__u64 offcpu_sent; /* off-CPU: the stacks sent of threads leaving a CPU */
};

#endif

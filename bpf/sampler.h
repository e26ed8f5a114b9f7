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

/* A runtime's frames (an interpreter's functions, beside the native stack):
 * bpf/runtimes.h lists the runtimes.  User space tells the program which
 * processes run one (the rtprocs map, by tgid: struct cp_rt_proc, the
 * runtime's own data in data[]), and a sample of such a process carries its
 * frames after the user stack (at its length rounded up to 8), tagged with
 * the runtime's id (cp_sample_rec.runtime).  A frame is two words: addr, the
 * runtime's function (a code object, say) with flags in its low 3 bits, and
 * data, where in it (an instruction's address).  CP_RT_ENTRY marks the first
 * frame of an interpreter's loop: the frames up to it go above the loop's
 * native frame (the process's entry range, found by user space). */
#define CP_RT_FRAMES_MAX 96 /* runtime frames sent per sample */
#define CP_RT_PROC_DATA 48  /* bytes of a runtime's per-process data */
#define CP_RT_ENTRY 1ull    /* the first frame of an interpreter loop */
#define CP_RT_FLAG 2ull     /* the runtime's own (CPython: a generator's frame) */
#define CP_RT_SHIM 4ull     /* a loop's entry marker with no function (CP_RT_ENTRY too) */
struct cp_rt_frame {
	__u64 addr, data;
};
struct cp_rt_proc {
	__u32 runtime; /* bpf/runtimes.h's id */
	__u32 pad;
	__u8 data[CP_RT_PROC_DATA] __attribute__((aligned(8))); /* the runtime's (bpf/runtimes/NAME.h) */
};

struct cp_sample_rec {
	__u64 time_ns;    /* CLOCK_MONOTONIC */
	__u64 cgroup_id;
	__u32 pid, tid;   /* tgid and thread id, as user space sees them (init namespace) */
	__u32 cpu, flags;
	__u64 offcpu_ns;          /* CP_SAMPLE_OFFCPU_END: how long the wait was */
	__u64 offcpu_acc;         /* CP_SAMPLE_OFFCPU_END: the length of all the thread's waits
				   * (of at least offcpu_min_ns) since its last end sent, this one
				   * included: exact, where the waits chosen are a sample */
	__u32 offcpu_seq, offcpu_thr; /* CP_SAMPLE_OFFCPU(_END) */
	__u32 offcpu_state;       /* CP_SAMPLE_OFFCPU(_END): CP_OFFCPU_* */
	__u16 rt_frames;          /* runtime frames after the user stack (struct cp_rt_frame) */
	__u16 runtime;            /* whose (bpf/runtimes.h's id; 0: none) */
	char comm[CP_COMM_LEN];   /* the thread's name */
	char pcomm[CP_COMM_LEN];  /* the process's (thread group leader's) name */
	__u64 regs[CP_NREGS];
	__u32 kstack_len, ustack_len; /* in bytes */
	__u64 kstack[CP_KSTACK_MAX];
	__u8 ustack[CP_USTACK_MAX];   /* only ustack_len bytes are sent */
};

/* where a record is put together: the runtime frames follow the stack copied */
struct cp_sample_buf {
	struct cp_sample_rec r;
	struct cp_rt_frame rt[CP_RT_FRAMES_MAX];
};

/* per-CPU counters, summed by user space */
struct cp_sampler_stats {
	__u64 samples, dropped, ustack_fault;
	__u64 offcpu_sent; /* off-CPU: the stacks sent of threads leaving a CPU */
};

#endif

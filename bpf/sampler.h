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

/* Python: where a CPython process keeps its frames, per version (user space's
 * lib/sampling/python.c fills one per process into the pyprocs map).  From
 * runtime (the address of _PyRuntime): the first interpreter, its first
 * thread state, the list of thread states (next) to the sampled thread's
 * (native_thread_id); its current frame (through cframe when
 * tstate_cframe is not 0, as in 3.11 and 3.12); then the frames (previous),
 * each read whole (CP_PY_FRAME_READ bytes).  An evaluation loop's first frame
 * is marked by a flag (frame_is_entry < CP_PY_FRAME_READ: 3.11) or followed
 * by a frame owned by the C stack (owner_cstack: 3.12, 3.13). */
#define CP_PY_FRAMES_MAX 96     /* Python frames sent per sample */
#define CP_PY_THREADS_MAX 64    /* thread states looked at for the sampled thread */
#define CP_PY_FRAME_READ 80
struct cp_py_proc {
	__u64 runtime;
	__u16 runtime_interp_head, interp_threads_head, tstate_next, tstate_native_tid;
	__u16 tstate_cframe, cframe_current_frame, tstate_current_frame;
	__u16 frame_code, frame_previous, frame_instr, frame_is_entry, frame_owner;
	__u16 frame_len, owner_generator;
	__u16 owner_cstack; /* 3.12+: the entry frame an evaluation loop puts on the C stack */
	__u16 pad[3];
};
/* A Python frame as sent, after the user stack (at its length rounded up to
 * 8): the code object's address with CP_PY_ENTRY (the frame was the first of
 * an evaluation loop: _PyEval_EvalFrameDefault's), CP_PY_GENERATOR (a
 * generator's or coroutine's frame) and CP_PY_SHIM in its low bits, and the
 * address of the instruction last started (3.13: being run). */
#define CP_PY_ENTRY 1ull
#define CP_PY_GENERATOR 2ull
#define CP_PY_SHIM 4ull /* 3.12+: the C stack's entry frame, no Python function (CP_PY_ENTRY too) */
struct cp_py_frame {
	__u64 code, instr;
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
	__u32 py_frames;          /* Python frames after the user stack (struct cp_py_frame) */
	char comm[CP_COMM_LEN];   /* the thread's name */
	char pcomm[CP_COMM_LEN];  /* the process's (thread group leader's) name */
	__u64 regs[CP_NREGS];
	__u32 kstack_len, ustack_len; /* in bytes */
	__u64 kstack[CP_KSTACK_MAX];
	__u8 ustack[CP_USTACK_MAX];   /* only ustack_len bytes are sent */
};

/* where a record is put together: the Python frames follow the stack copied */
struct cp_sample_buf {
	struct cp_sample_rec r;
	struct cp_py_frame py[CP_PY_FRAMES_MAX];
};

/* per-CPU counters, summed by user space */
struct cp_sampler_stats {
	__u64 samples, dropped, ustack_fault;
	__u64 offcpu_sent; /* off-CPU: the stacks sent of threads leaving a CPU */
};

#endif

/* SPDX-License-Identifier: MIT */
/* CPython's per-process data for its walker (bpf/runtimes/python.bpf.h),
 * filled by user space (lib/sampling/runtimes/python/python.c), per version:
 * where a process keeps its frames.  From runtime (the address of
 * _PyRuntime): the first interpreter, its first thread state, the list of
 * thread states (next) to the sampled thread's (native_thread_id); its
 * current frame (through cframe when tstate_cframe is not 0, as in 3.11 and
 * 3.12); then the frames (previous), each read whole (CP_PY_FRAME_READ
 * bytes).  An evaluation loop's first frame is marked by a flag
 * (frame_is_entry < CP_PY_FRAME_READ: 3.11) or followed by a frame owned by
 * the C stack (owner_cstack: 3.12, 3.13).
 *
 * A frame as sent (struct cp_rt_frame): addr, the code object's address
 * with CP_RT_ENTRY (the first of an evaluation loop), CP_PY_GENERATOR (a
 * generator's or coroutine's frame) and CP_RT_SHIM (3.12+: the C stack's
 * entry frame, no Python function); data, the address of the instruction
 * last started (3.13: being run). */
#ifndef CP_BPF_PYTHON_H
#define CP_BPF_PYTHON_H

#define CP_PY_THREADS_MAX 64 /* thread states looked at for the sampled thread */
#define CP_PY_FRAME_READ 80
#define CP_PY_GENERATOR CP_RT_FLAG

struct cp_py_proc {
	__u64 runtime;
	__u16 runtime_interp_head, interp_threads_head, tstate_next, tstate_native_tid;
	__u16 tstate_cframe, cframe_current_frame, tstate_current_frame;
	__u16 frame_code, frame_previous, frame_instr, frame_is_entry, frame_owner;
	__u16 frame_len, owner_generator;
	__u16 owner_cstack; /* 3.12+: the entry frame an evaluation loop puts on the C stack */
	__u16 pad[3];
};
_Static_assert(sizeof(struct cp_py_proc) <= CP_RT_PROC_DATA, "fits struct cp_rt_proc");

#endif

/* SPDX-License-Identifier: MIT */
/* Ruby's (CRuby, the YARV interpreter) per-process data for its walker
 * (bpf/runtimes/ruby.bpf.h), filled by user space
 * (lib/sampling/runtimes/ruby/ruby.c), per version: where a process keeps
 * its frames.  From vm_ptr (the address of ruby_current_vm_ptr): the VM, its
 * main ractor, the execution context running there (running_ec) when its
 * thread (ec -> thread, whose tid) is the sampled one, else the ractor's
 * list of threads (threads.set, linked through each thread's lt_node) to the
 * sampled thread's, and its ec (a fiber's, when one runs).  The ec's control
 * frames run from cfp up to the end of its VM stack (vm_stack +
 * vm_stack_size words), cfp_size bytes each: pc, iseq, ep; the frame's flags
 * are ep[0] (VM_ENV_DATA_INDEX_FLAGS).
 *
 * A frame as sent (struct cp_rt_frame): addr, the iseq's address, with
 * CP_RT_ENTRY when the frame was pushed by C code that runs the interpreter
 * for it (VM_FRAME_FLAG_FINISH: the first of a vm_exec); data, its pc.  A
 * frame that is not a Ruby method's, block's or script's (a C function's, a
 * dummy one) is not sent, but its FINISH flag is (CP_RT_ENTRY|CP_RT_SHIM). */
#ifndef CP_BPF_RUBY_H
#define CP_BPF_RUBY_H

#define CP_RB_THREADS_MAX 64 /* threads looked at for the sampled thread */
#define CP_RB_FRAMES_SEEN 256 /* control frames looked at (C functions' included) */

#define CP_RB_FRAME_MAGIC_MASK 0x7fff0001ull
#define CP_RB_FRAME_MAGIC_CFUNC 0x55550001ull
#define CP_RB_FRAME_MAGIC_IFUNC 0x66660001ull
#define CP_RB_FRAME_MAGIC_DUMMY 0x79990001ull
#define CP_RB_FRAME_FLAG_FINISH 0x20ull
#define CP_RB_FRAME_FLAG_CFRAME 0x80ull

struct cp_rb_proc {
	__u64 vm_ptr;
	__u16 vm_main_ractor, ractor_threads, ractor_running_ec, thread_node, thread_ec, thread_tid;
	__u16 ec_thread, ec_stack, ec_stack_size, ec_cfp;
	__u16 cfp_size, cfp_pc, cfp_iseq, cfp_ep;
	__u16 pad[2];
};
_Static_assert(sizeof(struct cp_rb_proc) <= CP_RT_PROC_DATA, "fits struct cp_rt_proc");

#endif

/* SPDX-License-Identifier: MIT */
/* The libbpf skeleton's lifecycle: open -> configure -> load -> attach one
 * cpu-clock perf event per online CPU -> drain -> destroy.  Beside the BPF
 * samples it opens a perf "dummy" event per CPU that reports mmap, comm
 * (exec), fork and exit records system-wide, so that processes can be
 * symbolized even after they are gone. */
#ifndef CP_SAMPLER_H_LIB
#define CP_SAMPLER_H_LIB

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <linux/types.h>

#include "../../bpf/sampler.h"

struct cp_sampler;

struct cp_sampler_opts {
	int freq;              /* Hz per CPU */
	const uint32_t *pids;  /* only these processes (npids > 0) */
	size_t npids;
	bool follow_forks;     /* and the processes they start */
	const char *cgroup;    /* only tasks in this cgroup v2 directory (and below) */
	bool idle;             /* keep samples of the idle task */
	bool offcpu;           /* also off-CPU records: stacks of threads leaving the CPU
				* (CP_SAMPLE_OFFCPU), chosen with a probability, and the
				* lengths of the waits chosen (CP_SAMPLE_OFFCPU_END) */
	uint64_t offcpu_period_ns; /* a wait predicted shorter than this is chosen with probability
				    * predicted / it (0: 10 ms; at most 1 s) */
	uint64_t offcpu_min_ns;    /* waits shorter than this are left out of offcpu_acc */
};

struct cp_mmap_event {
	uint32_t pid, tid;
	uint64_t start, len, pgoff;
	uint32_t prot;
	const uint8_t *build_id; /* NULL when the kernel gave no build id */
	size_t build_id_len;
	const char *path;
	uint64_t time_ns;
};

struct cp_sampler_ops {
	void (*sample)(void *arg, const struct cp_sample_rec *r);
	void (*mmap)(void *arg, const struct cp_mmap_event *e);
	void (*comm)(void *arg, uint32_t pid, uint32_t tid, const char *comm, bool exec, uint64_t time_ns);
	void (*fork)(void *arg, uint32_t pid, uint32_t ppid, uint32_t tid, uint64_t time_ns);
	void (*exit)(void *arg, uint32_t pid, uint32_t tid, uint64_t time_ns);
};

/* Loads and attaches.  NULL + errno with the message in cp_errmsg(): it says
 * what is missing (privileges, a kernel feature). */
struct cp_sampler *cp_sampler_new(const struct cp_sampler_opts *o, const struct cp_sampler_ops *ops, void *arg);
void cp_sampler_free(struct cp_sampler *s);
/* Add a process to the pid filter. 0 or -errno. */
int cp_sampler_add_pid(struct cp_sampler *s, uint32_t pid);
/* Process pid runs a runtime (lib/sampling/runtime.h): its frames are sent
 * with its samples, by the walker of rp->runtime (rp NULL: no more).  0 or
 * -errno. */
int cp_sampler_set_runtime(struct cp_sampler *s, uint32_t pid, const struct cp_rt_proc *rp);
/* Wait up to timeout_ms for data, then deliver what is pending in time
 * order: each mmap/comm/fork/exit record just before the first sample taken
 * after it (records newer than every sample wait for the next call, at most
 * 50 ms).  Returns the number of samples delivered or -errno (-EINTR when a
 * signal arrived). */
int cp_sampler_poll(struct cp_sampler *s, int timeout_ms);
/* Stop taking samples (what is in the ring stays to be drained). */
void cp_sampler_stop(struct cp_sampler *s);
/* Deliver what is pending without waiting (in time order; after
 * cp_sampler_stop, all the records once the samples are drained). */
int cp_sampler_drain(struct cp_sampler *s);

struct cp_sampler_counts {
	uint64_t samples;      /* taken (after filtering) */
	uint64_t dropped;      /* lost: the ring buffer was full */
	uint64_t ustack_fault; /* user stack could not be read */
	uint64_t lost_records; /* mmap/comm/... records lost */
	uint64_t offcpu_sent; /* off-CPU: stacks sent of threads leaving a CPU */
	uint64_t bpf_run_ns, bpf_run_cnt; /* the program's run time (kernel.bpf_stats_enabled) */
};
void cp_sampler_counts(struct cp_sampler *s, struct cp_sampler_counts *c);

#endif

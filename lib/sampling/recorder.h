/* SPDX-License-Identifier: MIT */
/* The sampling pipeline record and top share: the BPF sampler, the process
 * records it reports (mmap, exec, fork, exit), the DWARF unwinder and the
 * symbolizer, turning each sample into a stack in a cp_profile.
 *
 * Two ways to collect: for the store (cp_recorder_series: a series per
 * program, its processes' samples labelled pid; the processes' cpu samples
 * in one profile, each process's rows its own), or one profile for
 * everything whose samples carry the labels pid and comm (cp_recorder_take).
 * Samples always carry pid, thread_id and thread_name. */
#ifndef CP_RECORDER_H
#define CP_RECORDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "proc.h"
#include "../profile.h"
#include "sampler.h"
#include "../store/store.h"

struct cp_recorder;

/* record's and top's default --max-memory */
#define CP_RECORD_MAX_MEMORY ((uint64_t)64 << 20)

struct cp_recorder_opts {
	int freq;             /* Hz per CPU */
	const uint32_t *pids; /* only these processes (npids > 0) */
	size_t npids;
	bool follow_forks;    /* and what they start */
	const char *cgroup;   /* only tasks in this cgroup v2 directory */
	bool idle;            /* keep the idle task's samples */
	bool no_kernel;       /* leave kernel frames out */
	bool no_runtimes;     /* name no runtime's frames from its memory (runtime.h): Python's are
			       * left out, JIT code is named from perf maps only */
	const char *debuginfo; /* where separate debug files are (NULL: libdw's default) */
	const char *debuginfod; /* debuginfod servers, as $DEBUGINFOD_URLS (NULL: none); fetched
				 * off the sampling path, a profile taken gets what landed */
	const char *verb;       /* the command, in warnings ("record") */
	bool for_store;       /* for cp_recorder_series; else one profile with pid and comm labels */
	bool with_time;       /* the one profile has cpu nanoseconds beside the sample count */
	uint64_t max_memory;  /* resident bytes the caches are cut to stay under (0: no limit; budget.h) */
	bool offcpu;          /* also the time threads spend off the CPU (sampler.h): for the store,
			       * series of type "offcpu" (nanoseconds, labelled state S, D or R) and
			       * "wall"; in the one profile, two more values after the others (the
			       * third and fourth with with_time, else the second and third), offcpu
			       * and wall nanoseconds */
	uint64_t offcpu_period_ns, offcpu_min_ns; /* sampler.h's; period 0: cp_recorder_offcpu_period */
};

/* The off-CPU period when none is given: the sampling period, 1/freq (freq 0:
 * the default 19 Hz), within 1 ms and 1 s, so that a thread's waits get about
 * as many stacks per second of waiting as its CPU time gets samples per
 * second of running (a wall-clock profile of the two is evenly sampled). */
uint64_t cp_recorder_offcpu_period(int freq);

/* Loads the symbol tables and starts sampling.  NULL + errno, with the
 * message (privileges, a kernel feature) in cp_errmsg(). */
struct cp_recorder *cp_recorder_new(const struct cp_recorder_opts *o);
/* cp_recorder_new on a command to profile from its first instruction: cmd
 * (argv; NULL: none, and this is cp_recorder_new) is started held in child
 * (cp_launch_init'ed by the caller) and sampled by pid with its forks (o's
 * pids are not used).  The caller then readies what else it needs (a
 * store) and calls cp_launch_release(child), polls it, and always
 * cp_launch_ends it.  NULL + errno with the message in cp_errmsg(): the
 * command could not start, or the sampler's reason; the command then
 * never runs. */
struct cp_launch;
struct cp_recorder *cp_recorder_start(const struct cp_recorder_opts *o, char *const cmd[], struct cp_launch *child);
void cp_recorder_free(struct cp_recorder *r);
/* Wait up to timeout_ms, then take what is pending.  0, or -errno (-EINTR
 * at a signal); an error inside the pipeline (out of memory) also comes
 * back here. */
int cp_recorder_poll(struct cp_recorder *r, int timeout_ms);
/* Stop sampling and take everything still in the ring buffers.  The next
 * profiles handed over (take, series) first wait, a bounded time, for the
 * debug files being fetched. */
int cp_recorder_finish(struct cp_recorder *r);
/* The sampling period in nanoseconds (1 s / freq). */
int64_t cp_recorder_period(const struct cp_recorder *r);
/* Samples turned into stacks so far. */
uint64_t cp_recorder_samples(const struct cp_recorder *r);
void cp_recorder_counts(struct cp_recorder *r, struct cp_sampler_counts *c);

/* for_store: the store's series of the interval start_ns..end_ns (wall
 * clock).  A series is a program: the processes with samples since the last
 * reset whose labels (this policy: comm, "?" when unknown; node; and where
 * known exe, container, unit (systemd) and pod; then the extra labels (-l),
 * each replacing one of these of the same name or added) are the same make
 * one append of each type, their samples told apart by their sample label
 * pid.  Types: CP_RECORDER_CPU_TYPE, the sampling period in nanoseconds a
 * sample (the rows of the program's processes in the recorder's shared
 * profile, as sel); with off-CPU time, then "offcpu" and "wall" (the
 * processes' profiles merged).  Every profile's time becomes start_ns and
 * its duration end_ns - start_ns (at least 1 ns).  The appends point into
 * the recorder's profiles, its processes, node and extra, and into s: use
 * them before cp_recorder_reset; then cp_recorder_series_release.  0 or
 * -ENOMEM (s then empty). */
#define CP_RECORDER_CPU_TYPE "process_cpu" /* process_cpu:cpu:nanoseconds:cpu:nanoseconds:delta */
struct cp_recorder_series {
	struct cp_store_append *a;
	size_t n;
	/* private */
	struct cp_kv *kv;
	uint32_t *sel;            /* the programs' rows in the shared profile */
	struct cp_profile **made; /* the programs' off-CPU and wall profiles made for the appends */
	size_t nmade;
};
/* The policy for one process, as cp_recorder_series applies it: writes the
 * labels to kv (room for nextra + CP_SERIES_OWN_LABELS), sorted by name,
 * pointing into p, node and extra; returns how many. */
#define CP_SERIES_OWN_LABELS 6 /* comm, node, exe, container, unit, pod */
size_t cp_series_labels(const struct cp_proc *p, const char *node, const struct cp_kv *extra, size_t nextra,
			struct cp_kv *kv);
int cp_recorder_series(struct cp_recorder *r, const char *node, const struct cp_kv *extra, size_t nextra,
		       int64_t start_ns, int64_t end_ns, struct cp_recorder_series *s);
void cp_recorder_series_release(struct cp_recorder_series *s);
/* for_store: drops the processes' profiles (and forgets exited processes). */
void cp_recorder_reset(struct cp_recorder *r);
/* Forgets processes that exited more than 2 s ago and have nothing pending. */
void cp_recorder_prune(struct cp_recorder *r);
/* !for_store: the profile so far, handed over (a new one starts); NULL
 * when out of memory. */
struct cp_profile *cp_recorder_take(struct cp_recorder *r);
/* Processes known (alive or with records pending). */
size_t cp_recorder_nprocs(const struct cp_recorder *r);

/* The summary of a run of ns nanoseconds: "N samples in 2.0 s", the samples
 * lost (the ring buffer full) and, at --log-level debug, cp_recorder_debug. */
void cp_recorder_summary(struct cp_recorder *r, FILE *out, int64_t ns);
/* For CPROF_DEBUG: the unwinder's, symbolizer's and sampler's counters. */
void cp_recorder_debug(struct cp_recorder *r, FILE *out);
/* How many unwind rules were read from CFI so far (the unwinder's misses). */
uint64_t cp_recorder_unwind_rules(struct cp_recorder *r);

#endif

/* SPDX-License-Identifier: MIT */
/* What cprof top shows, aggregated from profiles: functions (self and
 * total, their binary and process), processes, threads, and for one
 * function its direct callers and callees.  Profiles of any origin add up
 * (names are interned in the aggregation's own table); a sample's process
 * and thread come from its labels pid, comm, thread_id and thread_name, or
 * from defaults (a stored series' labels). */
#ifndef CP_VIEW_AGGREGATE_H
#define CP_VIEW_AGGREGATE_H

#include <stdbool.h>
#include <stdint.h>

#include "../profile.h"
#include "../strtab.h"

struct cp_aggregate_opts {
	bool no_kernel, no_user; /* leave these frames out (a sample with none left counts as [kernel] / [user]) */
	uint32_t pid, tid;       /* zoom: only this process / thread (0: all) */
	const char *focus_name;  /* the function whose callers and callees are collected (NULL: none) */
	const char *focus_binary;
};

struct cp_agg_fn {
	uint32_t name, binary; /* string ids in agg->names */
	bool kernel;
	int64_t self, total;
	uint32_t pid, comm;    /* the first process seen; nprocs how many */
	uint32_t nprocs;
};

struct cp_agg_proc {
	uint32_t pid, comm, nthreads;
	int64_t value;
};

struct cp_agg_thread {
	uint32_t tid, pid, name, comm;
	int64_t value;
};

struct cp_agg_edge {
	uint32_t fn; /* index into fns */
	int64_t value;
};

struct cp_aggregate {
	struct cp_strtab names;
	struct cp_aggregate_opts o;
	struct cp_agg_fn *fns;
	uint32_t nfns, fncap;
	struct cp_agg_proc *procs;
	uint32_t nprocs, pcap;
	struct cp_agg_thread *threads;
	uint32_t nthreads, tcap;
	struct cp_agg_edge *callers, *callees; /* of the focus: the functions right above and below it */
	uint32_t ncallers, ncallees, crcap, cecap;
	int64_t focus_self, focus_total;
	int64_t total;    /* every sample kept (zoom applied) */
	int64_t nsamples; /* the same, counted by samples (not values) */
	void *priv;       /* hash tables */
};

struct cp_aggregate *cp_aggregate_new(const struct cp_aggregate_opts *o);
void cp_aggregate_free(struct cp_aggregate *a);
/* Adds the samples of p (value vidx).  pid/comm: the process of samples
 * without a pid label (0 / NULL: unknown).  0 or -ENOMEM. */
int cp_aggregate_add(struct cp_aggregate *a, const struct cp_profile *p, int vidx, uint32_t pid, const char *comm);
/* The function with this name and binary, or -1. */
int64_t cp_aggregate_find(const struct cp_aggregate *a, const char *name, const char *binary);
static inline const char *cp_aggregate_str(const struct cp_aggregate *a, uint32_t id)
{
	return cp_strtab_get(&a->names, id);
}

#endif

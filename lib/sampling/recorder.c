/* SPDX-License-Identifier: MIT */
/* The sampling pipeline: sampler records -> processes -> unwinding ->
 * symbolizing -> stacks in profiles (see recorder.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "debuginfod.h"
#include "../error.h"
#include "../index.h"
#include "launch.h"
#include "locmemo.h"
#include "offtotals.h"
#include "../log.h"
#include "recorder.h"
#include "runtime.h"
#include "symbolize.h"
#include "unwind.h"
#include "budget.h"
#include "../util.h"

/* the location memo: 2^16 frames, 24 bytes each: 1.5 MB in one huge page */
#define MEMO_BITS 16
/* the memo's pid for the kernel frames of the cpu profile: above every
 * pid (at most 2^22), below the symbolizer's keys (bit 30) */
#define KPID ((1u << 30) - 1)

/* a fetch from debuginfod is given up after this, and the end of a
 * recording waits at most this for those in flight */
#define DEBUGINFOD_TIMEOUT_MS 15000

struct cp_recorder {
	struct cp_recorder_opts o;
	struct cp_procs *procs;
	struct cp_unwinder *unw;
	struct cp_symbolizer *sym;
	struct cp_runtimes *rts;    /* the runtimes whose frames samples carry (runtime.h) */
	struct cp_debuginfod *dbgd; /* NULL: no servers */
	struct cp_sampler *sampler;
	struct cp_profile *one; /* !for_store: everything in one profile */
	/* for_store: every process's cpu samples of the interval, each
	 * process's rows listed in its profs: the processes that come and go
	 * share its functions and locations, named once (a profile each made
	 * every short-lived program's frames named, and stored, again) */
	struct cp_profile *shared;
	int64_t period;
	uint64_t offcpu_period;
	uint64_t nsamples;
	int error; /* the first failure inside a callback */
	bool finished, waited; /* debuginfod: the last hand-over waits for the fetches */
	uint64_t *pcs;
	uint64_t *fps;              /* a native runtime's: the frames' rbp (cp_unwind_fp) */
	struct cp_rt_name *natnames; /* and the names it gave them */
	uint32_t *locs;
	struct cp_budget budget;
	/* the locations frames were given, in the profiles of this interval:
	 * cleared whenever one of those profiles goes */
	struct cp_locmemo *memo;
	/* off-CPU: threads' stacks waiting for the end of their wait, by tid */
	struct pending *pending;
	uint64_t interval; /* counts the intervals: the profiles' locations are an interval's */
	uint64_t offcpu_unmatched;
	struct cp_offtotals *offtotals; /* the exact totals the sampled waits are scaled to */
};

static void runtime_check(struct cp_recorder *r, struct cp_proc *p);

/* a process's profiles of the interval (its cp_proc's user pointer) */
struct profs {
	uint32_t *rows;          /* its cpu samples: their indices in the recorder's shared profile */
	size_t nrows, rcap;
	struct cp_profile *off;  /* may be NULL */
	bool off_scaled;         /* off's values are its threads' exact totals (offtotals.h) */
};

static void profile_free_user(void *p)
{
	struct profs *ps = p;

	free(ps->rows);
	cp_profile_free(ps->off);
	free(ps);
}

/* The cpu profile: for the store, the time each sample stands for (the
 * period, as Pyroscope's process_cpu:cpu); the one profile has the count of
 * samples first, as Go's CPU profiles do, then cpu time when asked. */
static struct cp_profile *new_profile(struct cp_recorder *r, bool with_time)
{
	struct cp_profile *p = cp_profile_new();
	bool err;

	if (!p)
		return NULL;
	if (r->o.for_store)
		err = cp_profile_add_sample_type(p, "cpu", "nanoseconds");
	else /* the one profile: off-CPU time, then wall-clock time (both), are its last values */
		err = cp_profile_add_sample_type(p, "samples", "count") ||
		      (with_time && cp_profile_add_sample_type(p, "cpu", "nanoseconds")) ||
		      (r->o.offcpu && (cp_profile_add_sample_type(p, "offcpu", "nanoseconds") ||
				       cp_profile_add_sample_type(p, "wall", "nanoseconds")));
	if (err || cp_profile_set_period_type(p, "cpu", "nanoseconds", r->period)) {
		cp_profile_free(p);
		return NULL;
	}
	return p;
}

/* a process's off-CPU profile: the time away, its period the sampling's */
static struct cp_profile *new_offcpu_profile(struct cp_recorder *r)
{
	struct cp_profile *p = cp_profile_new();

	if (!p)
		return NULL;
	if (cp_profile_add_sample_type(p, "offcpu", "nanoseconds") ||
	    cp_profile_set_period_type(p, "offcpu", "nanoseconds", (int64_t)r->offcpu_period)) {
		cp_profile_free(p);
		return NULL;
	}
	return p;
}

static struct profs *proc_profs(struct cp_proc *p)
{
	if (!p->user)
		p->user = calloc(1, sizeof(struct profs));
	return p->user;
}

static int str_label(struct cp_profile *p, struct cp_label *l, const char *k, const char *v)
{
	int64_t ks = cp_profile_str(p, k), vs = cp_profile_str(p, v);

	if (ks < 0 || vs < 0)
		return cp_error(ENOMEM, "out of memory adding the label '%s'", k);
	memset(l, 0, sizeof(*l));
	l->key = (uint32_t)ks;
	l->str = (uint32_t)vs;
	return 0;
}

/* The process a sample belongs to, read from /proc on first sight. */
static struct cp_proc *sample_proc(struct cp_recorder *r, const struct cp_sample_rec *s)
{
	struct cp_proc *p = cp_procs_get(r->procs, s->pid, true);

	if (!p)
		return NULL;
	if (!p->proc_read && s->pid != 0)
		cp_proc_read(p); /* gone already: the mmap records are what we have */
	if (!p->meta_read && s->pid != 0)
		cp_proc_read_meta(p);
	if (s->pcomm[0])
		memcpy(p->comm, s->pcomm, sizeof(p->comm));
	p->comm[sizeof(p->comm) - 1] = 0;
	return p;
}

/* pprof takes a profile's first mapping for the main binary ("File:") */
static void main_mapping_first(struct cp_recorder *r, struct cp_profile *prof, struct cp_proc *p)
{
	for (size_t i = 0; p->exe && i < p->nmaps; i++) {
		if (!strcmp(p->maps[i].path, p->exe)) {
			cp_symbolize_mapping(r->sym, prof, p, p->maps[i].start);
			return;
		}
	}
}

/* a sample's runtime frames: n of runtime id's; or, for a runtime whose
 * frames are native ones, the names of the user frames (nat[i].label NULL:
 * not the runtime's) */
struct rtframes {
	uint32_t id, n;
	const struct cp_rt_frame *f;
	const struct cp_rt_name *nat;
};

/* The location of a frame runtime rt named nm in prof, in the mapping
 * "[NAME]" (at addr); -1 when out of memory. */
static int64_t named_rt_location(struct cp_profile *prof, const struct cp_runtime *rt, const struct cp_rt_name *nm,
				 uint64_t addr)
{
	char mapname[64];
	int64_t map;
	struct cp_function fn;
	struct cp_line l[16];
	struct cp_rt_name bare = { 0 };
	size_t n;

	snprintf(mapname, sizeof(mapname), "[%s]", rt->name);
	map = cp_profile_mapping(prof, &(struct cp_mapping){ .filename = (uint32_t)cp_profile_str(prof, mapname),
							    .has_functions = true, .has_filenames = true,
							    .has_line_numbers = true });
	if (map < 0)
		return -1;
	if (!nm) { /* gone, or not a function of the runtime's: a frame all the same */
		bare.label = mapname;
		nm = &bare;
	}
	/* the function, then those a JIT inlined it into (pprof's lines of a
	 * location, innermost first) */
	n = nm->ninl < 15 ? nm->ninl + 1 : 16;
	for (size_t k = 0; k < n; k++) {
		const struct cp_rt_name *f = k ? &nm->inl[k - 1] : nm;

		fn = (struct cp_function){ (uint32_t)cp_profile_str(prof, f->label),
					   (uint32_t)cp_profile_str(prof, f->name ? f->name : ""),
					   (uint32_t)cp_profile_str(prof, f->file ? f->file : ""), f->first_line };
		l[k] = (struct cp_line){ (uint32_t)cp_profile_function(prof, &fn), f->line > 0 ? f->line : 0, 0 };
	}
	return cp_profile_location(prof, (uint32_t)map, addr, l, n, false);
}

/* The location of runtime frame f (runtime id) of process p in prof (the
 * memo's, else made), or 0 when the frame is left out (not running yet), -1
 * when out of memory.  A frame that cannot be read is one all the same,
 * named for the runtime ("[python]"). */
static int64_t runtime_location(struct cp_recorder *r, struct cp_profile *prof, struct cp_proc *p, uint32_t mpid,
				uint32_t id, const struct cp_rt_frame *f)
{
	const struct cp_runtime *rt = cp_runtime_find(id);
	/* by instruction and function (not a native pc): memory a function
	 * freed can hold another one's instructions later */
	uint64_t key = (f->data ^ (f->addr & ~7ull) * 0x9e3779b97f4a7c15ull) | 1ull << 63;
	struct cp_rt_name nm = { 0 };
	int64_t loc;
	int got;

	if ((loc = cp_locmemo_get(r->memo, mpid, p->maps_gen, key, CP_LOCMEMO_USER)))
		return loc;
	if (!rt)
		return 0;
	got = cp_runtimes_frame(r->rts, id, p->pid, p->rt_layout, f, &nm);
	if (got > 0)
		return 0;
	loc = named_rt_location(prof, rt, got < 0 ? NULL : &nm, got < 0 ? 0 : f->data);
	if (loc <= 0)
		return -1;
	if (got == 0) /* (one that could not be read may be read later: its memory reused) */
		cp_locmemo_put(r->memo, mpid, p->maps_gen, key, CP_LOCMEMO_USER, (uint32_t)loc);
	return loc;
}

/* The profile process p's samples of this interval go to: its cpu or
 * off-CPU one, or the one profile (made on first use); NULL: out of memory. */
static struct cp_profile *sample_profile(struct cp_recorder *r, struct cp_proc *p, bool off)
{
	struct cp_profile *prof;

	if (!r->o.for_store) {
		if (!r->one && !(r->one = new_profile(r, r->o.with_time)))
			return NULL;
		prof = r->one;
	} else if (!off) {
		if (!proc_profs(p) || (!r->shared && !(r->shared = new_profile(r, false))))
			return NULL;
		prof = r->shared;
	} else {
		struct profs *ps = proc_profs(p);

		if (!ps || (!ps->off && !(ps->off = new_offcpu_profile(r))))
			return NULL;
		prof = ps->off;
	}
	if (prof->nmappings == 0)
		main_mapping_first(r, prof, p);
	return prof;
}

/* Does an interpreter loop's group of runtime frames go above user frame i
 * of upcs (nu of them)?  At an entry frame, unless the loop right above it
 * takes them; at a loop right above an entry frame. */
static bool rt_group_at(const struct cp_proc *p, const uint64_t *upcs, int nu, int i)
{
#define IN(pc, lo, hi) ((pc) >= (lo) && (pc) < (hi))
	if (IN(upcs[i], p->rt_entry_lo, p->rt_entry_hi))
		return !(i > 0 && IN(upcs[i - 1], p->rt_loop_lo, p->rt_loop_hi));
	return i + 1 < nu && IN(upcs[i], p->rt_loop_lo, p->rt_loop_hi) &&
	       IN(upcs[i + 1], p->rt_entry_lo, p->rt_entry_hi);
#undef IN
}

/* The locations of a stack in prof, into r->locs: kernel pcs leaf first,
 * then user pcs leaf first with the runtime's frames (rf, NULL: none) among
 * them.  Returns
 * their number, or -1 (out of memory). */
static int64_t stack_locations(struct cp_recorder *r, struct cp_proc *p, struct cp_profile *prof, bool off,
			       const uint64_t *kpcs, uint32_t nk, const uint64_t *upcs, int nu,
			       const struct rtframes *rf)
{
	const struct cp_rt_frame *rt = rf ? rf->f : NULL;
	uint32_t nrt = rf ? rf->n : 0;
	uint32_t j = 0;
	size_t nlocs = 0;
	int64_t loc;
	int npos = 0, pos = 0; /* entry frames in the stack; taken */
	/* the memo's locations are the profile's: a process's off-CPU profile is
	 * another than its cpu one */
	uint32_t mpid = off && r->o.for_store ? p->pid | 0x80000000u : p->pid;
	/* the kernel's locations: every process's in the cpu profile (shared,
	 * or the one), a process's own in its off-CPU one (KPID: no pid) */
	uint32_t kpid = off && r->o.for_store ? mpid : KPID;

	/* kernel frames first (leaf first), then user frames */
	for (uint32_t i = 0; !r->o.no_kernel && i < nk; i++) {
		unsigned kind = i > 0 ? CP_LOCMEMO_KERNEL_RET : CP_LOCMEMO_KERNEL;

		if (!(loc = cp_locmemo_get(r->memo, kpid, 0, kpcs[i], kind))) {
			loc = cp_symbolize_kernel(r->sym, prof, kpcs[i], i > 0);
			if (loc < 0)
				goto fail;
			cp_locmemo_put(r->memo, kpid, 0, kpcs[i], kind, (uint32_t)loc);
		}
		r->locs[nlocs++] = (uint32_t)loc;
	}
	for (int i = 0; nrt && p->rt_entries_skipped && i < nu; i++)
		npos += rt_group_at(p, upcs, nu, i);
	for (int i = 0; i <= nu; i++) {
		unsigned kind = i > 0 ? CP_LOCMEMO_USER_RET : CP_LOCMEMO_USER;
		bool stable;

		/* runtime frames: each interpreter loop's above its native frame
		 * (the innermost first), those left over (the native stack ended
		 * early) at the end */
		if (j < nrt && (i == nu || rt_group_at(p, upcs, nu, i))) {
			bool last = i < nu && ++pos == npos; /* the outermost entry, when some can be missing */

			for (; j < nrt; j++) {
				bool entry = rt[j].addr & CP_RT_ENTRY && !last;

				if (rt[j].addr & CP_RT_SHIM) /* the loop's entry marker, no function */
					loc = 0;
				else if ((loc = runtime_location(r, prof, p, mpid, rf->id, &rt[j])) < 0)
					goto fail;
				if (loc)
					r->locs[nlocs++] = (uint32_t)loc;
				if (entry && i < nu) {
					j++;
					break;
				}
			}
		}
		if (i == nu)
			break;
		if (rf && rf->nat && rf->nat[i].label) { /* a native runtime's function: not by pc */
			uint64_t key = rf->nat[i].key | 1ull << 63;

			if (!rf->nat[i].key || !(loc = cp_locmemo_get(r->memo, mpid, p->maps_gen, key, CP_LOCMEMO_USER))) {
				if ((loc = named_rt_location(prof, cp_runtime_find(rf->id), &rf->nat[i], 0)) <= 0)
					goto fail;
				if (rf->nat[i].key)
					cp_locmemo_put(r->memo, mpid, p->maps_gen, key, CP_LOCMEMO_USER, (uint32_t)loc);
			}
			r->locs[nlocs++] = (uint32_t)loc;
			continue;
		}
		if (!(loc = cp_locmemo_get(r->memo, mpid, p->maps_gen, upcs[i], kind))) {
			loc = cp_symbolize_user(r->sym, prof, p, upcs[i], i > 0, &stable);
			if (loc < 0)
				goto fail;
			if (stable)
				cp_locmemo_put(r->memo, mpid, p->maps_gen, upcs[i], kind, (uint32_t)loc);
		}
		r->locs[nlocs++] = (uint32_t)loc;
	}
	return (int64_t)nlocs;
fail:
	return -1;
}

/* A sample of process p with the stack of nlocs locations in r->locs (made
 * in prof by stack_locations): a cpu-clock sample (off false: one sample,
 * the period), or a wait off the CPU (off: weight ns, in state). */
static void add_located(struct cp_recorder *r, struct cp_proc *p, struct cp_profile *prof, uint32_t tid_,
			const char *comm_, size_t nlocs, bool off, char state, int64_t weight)
{
	struct cp_label labels[5];
	size_t nl = 0;
	char tid[16], pid[16];
	int64_t stack, ls;
	int64_t values[4];
	uint32_t n0;

	if (nlocs == 0 && r->o.no_kernel)
		return; /* a kernel thread's sample, and kernel frames are not wanted */
	stack = cp_profile_stack(prof, r->locs, nlocs);
	if (stack < 0)
		goto fail;
	snprintf(tid, sizeof(tid), "%u", tid_);
	snprintf(pid, sizeof(pid), "%u", p->pid);
	if (str_label(prof, &labels[nl++], "thread_id", tid) || str_label(prof, &labels[nl++], "thread_name", comm_) ||
	    str_label(prof, &labels[nl++], "pid", pid))
		goto fail;
	/* the store's series name the program (cp_series_labels) */
	if (!r->o.for_store && str_label(prof, &labels[nl++], "comm", p->comm))
		goto fail;
	if (off || (r->o.offcpu && !r->o.for_store)) { /* the one profile's wall: CPU, S, D or R */
		char st[2] = { state, 0 };

		if (str_label(prof, &labels[nl++], "state", off ? st : "CPU"))
			goto fail;
	}
	ls = cp_profile_labelset(prof, labels, nl);
	if (ls < 0)
		goto fail;
	if (r->o.for_store) {
		values[0] = off ? weight : r->period;
	} else { /* the one profile: samples, [cpu ns,] [offcpu ns, wall ns] */
		size_t k = 0;

		values[k++] = off ? 0 : 1;
		if (r->o.with_time)
			values[k++] = off ? 0 : r->period;
		if (r->o.offcpu) {
			values[k++] = off ? weight : 0;
			values[k++] = off ? weight : r->period;
		}
	}
	n0 = prof->nsamples;
	if (cp_profile_add_sample(prof, (uint32_t)stack, (uint32_t)ls, values))
		goto fail;
	if (prof == r->shared && prof->nsamples > n0) { /* a row of its own: the thread's id is a label */
		struct profs *ps = p->user;

		if (cp_grow((void **)&ps->rows, &ps->rcap, ps->nrows + 1, sizeof(*ps->rows)))
			goto fail;
		ps->rows[ps->nrows++] = n0;
	}
	r->nsamples++;
	return;
fail:
	r->error = -ENOMEM;
}

/* A stack (kernel pcs leaf first, then user pcs leaf first) of process p
 * into its profile (add_located). */
static void add_sample(struct cp_recorder *r, struct cp_proc *p, uint32_t tid, const char *comm,
		       const uint64_t *kpcs, uint32_t nk, const uint64_t *upcs, int nu, const struct rtframes *rf,
		       bool off, char state, int64_t weight)
{
	struct cp_profile *prof = sample_profile(r, p, off);
	int64_t n = prof ? stack_locations(r, p, prof, off, kpcs, nk, upcs, nu, rf) : -1;

	if (n < 0)
		r->error = -ENOMEM;
	else
		add_located(r, p, prof, tid, comm, (size_t)n, off, state, weight);
}

/* ---- off-CPU: a thread's stacks wait for the length of its wait ---- */

#define PENDING_BITS 12

struct pending {
	uint32_t tid, pid, seq, thr;
	char state, used;
	char comm[CP_COMM_LEN + 1];
	uint32_t nk, nu, nrt, rtid;
	uint64_t *pcs; /* nk kernel pcs, then nu user pcs, then nrt frames of runtime rtid */
	size_t cap;
	/* the stack's locations, made when it came, in the off-CPU profile of
	 * interval `interval`: an exec or munmap before the wait's end changes
	 * what the addresses mean (pcs: made again after a flush) */
	uint32_t *locs;
	size_t lcap;
	uint32_t nlocs;
	uint64_t interval;
};

#define PENDING_PROBES 8

/* The slot of tid's wait: where it is, else (make) a free one among the
 * next PENDING_PROBES, else NULL (make: the first of them, overwritten). */
static struct pending *pending_slot(struct cp_recorder *r, uint32_t tid, bool make)
{
	uint32_t mask = (1u << PENDING_BITS) - 1, h = (uint32_t)cp_hash_u64(tid, 0) & mask;
	struct pending *free_slot = NULL;

	for (uint32_t i = 0; i < PENDING_PROBES; i++) {
		struct pending *w = &r->pending[(h + i) & mask];

		if (w->used && w->tid == tid)
			return w;
		if (!w->used && !free_slot)
			free_slot = w;
	}
	if (!make)
		return NULL;
	return free_slot ? free_slot : &r->pending[h];
}

/* the stacks of a thread leaving the CPU, kept until it is back, and
 * their locations in process p's off-CPU profile */
static void offcpu_start(struct cp_recorder *r, struct cp_proc *p, const struct cp_sample_rec *s, uint32_t nk,
			 int nu, const struct rtframes *rf)
{
	struct pending *w = pending_slot(r, s->tid, true);
	uint32_t nrt = rf ? rf->n : 0;
	size_t n = (size_t)nk + (size_t)nu + 2 * (size_t)nrt;
	struct cp_profile *prof = sample_profile(r, p, true);
	int64_t nlocs = prof ? stack_locations(r, p, prof, true, (const uint64_t *)s->kstack, nk, r->pcs, nu, rf)
			     : -1;

	if (w->used)
		r->offcpu_unmatched++; /* a lost end, or no room: overwritten */
	if (nlocs < 0 || cp_grow((void **)&w->pcs, &w->cap, n, sizeof(*w->pcs)) ||
	    cp_grow((void **)&w->locs, &w->lcap, (size_t)nlocs + 1, sizeof(*w->locs))) {
		r->error = -ENOMEM;
		return;
	}
	memcpy(w->locs, r->locs, (size_t)nlocs * sizeof(*w->locs));
	w->nlocs = (uint32_t)nlocs;
	w->interval = r->interval;
	if (nk)
		memcpy(w->pcs, s->kstack, nk * sizeof(*w->pcs));
	if (nu)
		memcpy(w->pcs + nk, r->pcs, (size_t)nu * sizeof(*w->pcs));
	if (nrt) /* the runtime's frames, two words each, after them */
		memcpy(w->pcs + nk + nu, rf->f, nrt * sizeof(*rf->f));
	w->nk = nk;
	w->nu = (uint32_t)nu;
	w->nrt = nrt;
	w->rtid = nrt ? rf->id : 0;
	w->tid = s->tid;
	w->pid = s->pid;
	w->seq = s->offcpu_seq;
	w->thr = s->offcpu_thr;
	w->state = (char)s->offcpu_state;
	memcpy(w->comm, s->comm, CP_COMM_LEN);
	w->comm[CP_COMM_LEN] = 0;
	w->used = 1;
}

/* a thread back on a CPU: its wait, weighted by its length / the
 * probability its stacks were sent with */
static void offcpu_end(struct cp_recorder *r, const struct cp_sample_rec *s)
{
	struct pending *w = pending_slot(r, s->tid, false);
	struct rtframes rf;
	struct cp_proc *p;
	int64_t weight;

	if (!w || w->seq != s->offcpu_seq) {
		r->offcpu_unmatched++;
		if (w)
			w->used = 0;
		return;
	}
	w->used = 0;
	if (s->offcpu_ns < r->o.offcpu_min_ns) {
		cp_offtotals_add(r->offtotals, w->tid, 0, s->offcpu_acc);
		return;
	}
	weight = w->thr ? (int64_t)((double)s->offcpu_ns * 4294967296.0 / w->thr) : (int64_t)s->offcpu_ns;
	cp_offtotals_add(r->offtotals, w->tid, (double)weight, s->offcpu_acc);
	if (!(p = cp_procs_get(r->procs, w->pid, false)))
		return;
	if (w->interval == r->interval) { /* the locations made when the stack came */
		struct cp_profile *prof = sample_profile(r, p, true);

		if (!prof) {
			r->error = -ENOMEM;
			return;
		}
		memcpy(r->locs, w->locs, w->nlocs * sizeof(*r->locs));
		add_located(r, p, prof, w->tid, w->comm, w->nlocs, true, w->state, weight);
		return;
	}
	/* a flush came between: made again (with the mappings of now) */
	rf = (struct rtframes){ w->rtid, w->nrt, (const struct cp_rt_frame *)(w->pcs + w->nk + w->nu), NULL };
	add_sample(r, p, w->tid, w->comm, w->pcs, w->nk, w->nu ? w->pcs + w->nk : NULL, (int)w->nu,
		   p->rt_id && p->rt_id == w->rtid && w->nrt ? &rf : NULL, true, w->state, weight);
}

/* ---- open waits across a flush ---- */

/* The slots of the waits open now whose locations are this interval's, by
 * pid (malloc'ed into *out): how many, or -ENOMEM */
static int64_t open_waits(struct cp_recorder *r, uint32_t **out)
{
	size_t n = 0, cap = 0;
	uint64_t *v = NULL; /* pid << 32 | slot */
	uint32_t *slots;

	*out = NULL;
	for (uint32_t i = 0; r->pending && i < (1u << PENDING_BITS); i++) {
		if (!r->pending[i].used || r->pending[i].interval != r->interval)
			continue;
		if (cp_grow((void **)&v, &cap, n + 1, sizeof(*v))) {
			free(v);
			return cp_error(ENOMEM, "out of memory keeping the open waits' stacks");
		}
		v[n++] = (uint64_t)r->pending[i].pid << 32 | i;
	}
	if (!n)
		return 0;
	if (!(slots = malloc(n * sizeof(*slots)))) {
		free(v);
		return cp_error(ENOMEM, "out of memory keeping the open waits' stacks");
	}
	cp_qsort(v, n, sizeof(*v), cp_cmp_u64_key);
	for (size_t i = 0; i < n; i++)
		slots[i] = (uint32_t)v[i];
	free(v);
	*out = slots;
	return (int64_t)n;
}

/* The locations of waits slots[0..n), made in profile old, made again in
 * now, for the next interval: their frames keep the names they were given
 * (a runtime's frames are named from the stack copy, gone when the wait
 * ends; made again from the pcs they would be native).  0 or -ENOMEM. */
static int carry_waits(struct cp_recorder *r, const struct cp_profile *old, struct cp_profile *now,
		       const uint32_t *slots, size_t n)
{
	size_t total = 0, at = 0;
	uint32_t *all;
	int err;

	for (size_t i = 0; i < n; i++)
		total += r->pending[slots[i]].nlocs;
	if (!(all = malloc((total + 1) * sizeof(*all))))
		return cp_error(ENOMEM, "out of memory keeping the open waits' stacks");
	for (size_t i = 0; i < n; i++) {
		memcpy(all + at, r->pending[slots[i]].locs, r->pending[slots[i]].nlocs * sizeof(*all));
		at += r->pending[slots[i]].nlocs;
	}
	err = cp_profile_import_locations(now, old, all, total);
	at = 0;
	for (size_t i = 0; i < n && !err; i++) {
		struct pending *w = &r->pending[slots[i]];

		memcpy(w->locs, all + at, w->nlocs * sizeof(*all));
		at += w->nlocs;
		w->interval = r->interval + 1;
	}
	free(all);
	return err;
}

/* Does p (its mappings changed since the last look) run a runtime we know?
 * Its samples then carry the runtime's frames. */
static void runtime_check(struct cp_recorder *r, struct cp_proc *p)
{
	struct cp_rt_proc rp;
	struct cp_rt_found f;
	uint32_t was = p->rt_id;
	bool native;
	int id;

	p->rt_gen = p->maps_gen + 1;
	if (!r->rts || (!p->nmaps && !was))
		return;
	id = cp_runtimes_detect(r->rts, p, &rp, &f);
	if (id < 0) {
		r->error = id;
		return;
	}
	/* the same interpreter where it was: the program has it already (an
	 * interpreter's start maps dozens of modules, each a new generation) */
	if (id && (uint32_t)id == was && f.entry_lo == p->rt_entry_lo && f.entry_hi == p->rt_entry_hi &&
	    f.loop_lo == p->rt_loop_lo && f.loop_hi == p->rt_loop_hi && f.layout == p->rt_layout)
		return;
	if (was && (uint32_t)id != was)
		cp_runtimes_forget(r->rts, was, p->pid);
	/* a runtime with a walker is the sampler's to follow; one without
	 * (its frames are native ones) is named from the unwound stack */
	native = id && cp_runtime_find((uint32_t)id)->native;
	if (native && was && !p->rt_native)
		cp_sampler_set_runtime(r->sampler, p->pid, NULL);
	if (id && (native || cp_sampler_set_runtime(r->sampler, p->pid, &rp) == 0)) {
		p->rt_id = (uint32_t)id;
		p->rt_native = native;
		p->rt_entry_lo = f.entry_lo;
		p->rt_entry_hi = f.entry_hi;
		p->rt_loop_lo = f.loop_lo;
		p->rt_loop_hi = f.loop_hi;
		p->rt_entries_skipped = f.entries_skipped;
		p->rt_layout = f.layout;
		return;
	}
	p->rt_id = 0;
	p->rt_entry_lo = p->rt_entry_hi = p->rt_loop_lo = p->rt_loop_hi = 0;
	if (was) {
		if (!p->rt_native)
			cp_sampler_set_runtime(r->sampler, p->pid, NULL);
		p->rt_native = false;
		if ((uint32_t)id == was)
			cp_runtimes_forget(r->rts, was, p->pid);
	}
}

/* the unwinder's hook into a runtime's rule for its code (cp_unwind_hook) */
struct rt_hook {
	struct cp_runtimes *rts;
	uint32_t id, pid;
	unsigned layout;
};

static int rt_rule(void *ctx, uint64_t pc, bool exact, uint64_t *cfa_sp, bool *bp_saved)
{
	const struct rt_hook *h = ctx;

	return cp_runtimes_unwind(h->rts, h->id, h->pid, h->layout, pc, exact, cfa_sp, bp_saved);
}

static void on_sample(void *arg, const struct cp_sample_rec *s)
{
	struct cp_recorder *r = arg;
	struct rtframes rf = { 0 };
	struct cp_proc *p;
	char comm[CP_COMM_LEN + 1];
	uint32_t nk;
	bool stale;
	int n;

	if (r->error)
		return;
	if (s->flags & CP_SAMPLE_OFFCPU_END) { /* only the header is there */
		offcpu_end(r, s);
		return;
	}
	p = sample_proc(r, s);
	if (!p) {
		r->error = -ENOMEM;
		return;
	}
	if (p->rt_gen != p->maps_gen + 1)
		runtime_check(r, p);
	nk = r->o.no_kernel ? 0 : s->kstack_len / 8 < CP_KSTACK_MAX ? s->kstack_len / 8 : CP_KSTACK_MAX;
	stale = false;
	if ((s->flags & CP_SAMPLE_USER) && !cp_proc_find_map(p, s->regs[CP_REG_IP])) {
		if (s->flags & CP_SAMPLE_EXECVE)
			stale = true; /* the old program's registers, the new program's mappings */
		else
			cp_proc_refresh(p, s->regs[CP_REG_IP]); /* its mmap record is not in yet */
	}
	if (p->rt_id && !stale && p->rt_native) { /* its functions' frames are native ones: named here */
		struct rt_hook h = { r->rts, p->rt_id, p->pid, p->rt_layout };
		struct cp_unwind_hook hook = { rt_rule, &h };
		int named;

		n = cp_unwind_fp(r->unw, p, s, r->pcs, r->fps, CP_USER_FRAMES_MAX,
				 cp_runtimes_unwinds(r->rts, p->rt_id) ? &hook : NULL);
		named = n > 0 ? cp_runtimes_native(r->rts, p->rt_id, p->pid, p->rt_layout, s, r->pcs, r->fps, n,
						   r->natnames) : 0;
		if (named == -ENOMEM) {
			r->error = named;
			return;
		}
		if (named > 0) {
			rf.id = p->rt_id;
			rf.nat = r->natnames;
		}
	} else {
		n = stale ? 0 : cp_unwind(r->unw, p, s, r->pcs, CP_USER_FRAMES_MAX);
	}
	/* the runtime's frames, tagged with whose they are: those of a runtime
	 * the process no longer runs (it exec'd) are left out */
	if (p->rt_id && s->rt_frames && s->runtime == p->rt_id && !stale) {
		rf.id = s->runtime;
		rf.f = (const struct cp_rt_frame *)(s->ustack + ((s->ustack_len + 7) & ~7u));
		rf.n = s->rt_frames;
	}
	if (s->flags & CP_SAMPLE_OFFCPU) {
		offcpu_start(r, p, s, nk, n, rf.n || rf.nat ? &rf : NULL);
		return;
	}
	memcpy(comm, s->comm, CP_COMM_LEN);
	comm[CP_COMM_LEN] = 0;
	add_sample(r, p, s->tid, comm, (const uint64_t *)s->kstack, nk, r->pcs, n, rf.n || rf.nat ? &rf : NULL, false, 0, 0);
}

/* ---- process lifecycle records ---- */

static void on_mmap(void *arg, const struct cp_mmap_event *e)
{
	struct cp_recorder *r = arg;
	struct cp_proc *p;
	struct cp_map *m;

	if (!(e->prot & 4 /* PROT_EXEC */) || e->pid == 0 || e->pid == UINT32_MAX)
		return;
	/* every process's records are kept: a child's exec may be read before
	 * the fork that makes it ours (records come per CPU) */
	p = cp_procs_get(r->procs, e->pid, true);
	if (!p)
		return;
	if (p->exec_time && e->time_ns < p->exec_time)
		return; /* the previous program's, read late from another CPU's buffer */
	if (cp_proc_add_map(p, e->start, e->start + e->len, e->pgoff, e->path, e->build_id, e->build_id_len)) {
		r->error = -ENOMEM;
		return;
	}
	m = (struct cp_map *)cp_proc_find_map(p, e->start);
	if (m)
		m->time = e->time_ns;
	if (p->exe_from_mmap && e->path[0] == '/') {
		free(p->exe);
		p->exe = strdup(e->path);
		p->exe_from_mmap = false;
	}
	/* an interpreter (its exec, a dlopen of libpython) that is sampled: its
	 * frames from its first samples, not from those after the first one is
	 * read (with -p or -- CMD, the other processes' are not looked at) */
	if (r->rts && cp_runtimes_named(r->rts, e->path) && (!r->o.npids || p->followed))
		runtime_check(r, p);
}

static void on_comm(void *arg, uint32_t pid, uint32_t tid, const char *comm, bool exec, uint64_t t)
{
	struct cp_recorder *r = arg;
	struct cp_proc *p;

	if (!exec || pid != tid)
		return;
	p = cp_procs_get(r->procs, pid, true);
	if (!p)
		return;
	/* a new program: its mappings follow in mmap records (some may have
	 * been read already, from another CPU's buffer) */
	cp_proc_drop_maps_before(p, t);
	p->have_maps = true;
	p->proc_read = true; /* the records are complete from here on */
	p->exec_time = t;
	p->exe_from_mmap = true;
	snprintf(p->comm, sizeof(p->comm), "%s", comm);
}

static void on_fork(void *arg, uint32_t pid, uint32_t ppid, uint32_t tid, uint64_t t)
{
	struct cp_recorder *r = arg;
	struct cp_proc *parent, *child;

	if (pid != tid || pid == ppid)
		return; /* a thread */
	/* a parent not sampled yet is read now: it is forking, so it is alive,
	 * while its child may exec or exit before its own first sample */
	parent = ppid ? cp_procs_get(r->procs, ppid, true) : NULL;
	child = cp_procs_get(r->procs, pid, true);
	if (!child)
		return;
	if (parent && parent->followed && r->o.follow_forks)
		child->followed = true;
	if (child->exec_time && child->exec_time > t)
		return; /* its exec was seen first */
	if (r->o.npids && !child->followed)
		return; /* with -p or -- CMD, one that is not sampled */
	if (parent && !parent->proc_read && !parent->have_maps)
		cp_proc_read(parent);
	if (parent && parent->have_maps) {
		cp_proc_inherit(child, parent);
		child->proc_read = true;
	}
}

static void on_exit_rec(void *arg, uint32_t pid, uint32_t tid, uint64_t t)
{
	struct cp_recorder *r = arg;
	struct cp_proc *p;

	/* a thread's wait is closed at its next switch away (bpf/sampler.bpf.c),
	 * and its last one, after its exit record: its end is still to come */
	if (pid != tid)
		return;
	p = cp_procs_get(r->procs, pid, false);
	if (p) {
		p->dead = true;
		p->exit_time = t;
		if (p->rt_id) { /* what its runtime keeps, and the BPF map's entry, go */
			cp_sampler_set_runtime(r->sampler, pid, NULL);
			cp_runtimes_forget(r->rts, p->rt_id, pid);
			p->rt_id = 0;
			p->rt_entry_lo = p->rt_entry_hi = p->rt_loop_lo = p->rt_loop_hi = 0;
		}
	}
}

/* ---- the object ---- */

struct cp_recorder *cp_recorder_new(const struct cp_recorder_opts *o)
{
	struct cp_recorder *r = calloc(1, sizeof(*r));
	struct cp_sampler_opts so;
	static const struct cp_sampler_ops ops = { on_sample, on_mmap, on_comm, on_fork, on_exit_rec };
	int err = ENOMEM;

	if (!r)
		goto nomem;
	r->o = *o;
	r->o.pids = NULL; /* the caller's: only read here, below */
	r->period = 1000000000LL / (o->freq > 0 ? o->freq : 19);
	r->offcpu_period = o->offcpu_period_ns ? o->offcpu_period_ns : cp_recorder_offcpu_period(o->freq);
	r->pcs = calloc(CP_USER_FRAMES_MAX, sizeof(*r->pcs));
	r->fps = calloc(CP_USER_FRAMES_MAX, sizeof(*r->fps));
	r->natnames = calloc(CP_USER_FRAMES_MAX, sizeof(*r->natnames));
	r->locs = calloc(CP_USER_FRAMES_MAX + CP_KSTACK_MAX + CP_RT_FRAMES_MAX, sizeof(*r->locs));
	r->procs = cp_procs_new();
	r->unw = cp_unwinder_new(o->debuginfo);
	r->sym = r->unw ? cp_symbolizer_new(r->unw, 0) : NULL;
	r->rts = o->no_runtimes ? NULL : cp_runtimes_new(o->verb ? o->verb : "record");
	r->memo = cp_locmemo_new(MEMO_BITS);
	if (o->offcpu && (!(r->pending = calloc((size_t)1 << PENDING_BITS, sizeof(*r->pending))) ||
			  !(r->offtotals = cp_offtotals_new())))
		goto nomem;
	if (!r->pcs || !r->fps || !r->natnames || !r->locs || !r->procs || !r->unw || !r->sym || !r->memo)
		goto nomem;
	cp_symbolizer_set_memo(r->sym, r->memo);
	cp_budget_init(&r->budget, o->max_memory, r->unw, r->sym, o->verb ? o->verb : "record");
	if (!o->for_store && !(r->one = new_profile(r, o->with_time)))
		goto nomem;
	for (size_t i = 0; i < o->npids; i++) {
		struct cp_proc *p = cp_procs_get(r->procs, o->pids[i], true);

		if (!p)
			goto nomem;
		p->followed = true;
	}
	if (!o->no_kernel)
		cp_symbolize_preload(r->sym);
	memset(&so, 0, sizeof(so));
	so.freq = o->freq;
	so.pids = o->pids;
	so.npids = o->npids;
	so.follow_forks = o->follow_forks;
	so.cgroup = o->cgroup;
	so.idle = o->idle;
	so.offcpu = o->offcpu;
	so.offcpu_period_ns = r->offcpu_period;
	so.offcpu_min_ns = o->offcpu_min_ns;
	r->sampler = cp_sampler_new(&so, &ops, r);
	/* the fetcher after the sampler (whose absence says why first), before
	 * the first sample is read */
	if (!r->sampler || (o->debuginfod && !(r->dbgd = cp_debuginfod_new(o->debuginfod, DEBUGINFOD_TIMEOUT_MS,
									      o->verb)))) {
		err = errno; /* the message is in cp_errmsg() */
		cp_recorder_free(r);
		errno = err;
		return NULL;
	}
	cp_symbolizer_set_debuginfod(r->sym, r->dbgd);
	/* -p: a runtime's process among them has its frames from the first sample */
	for (size_t i = 0; i < o->npids; i++) {
		struct cp_proc *p = cp_procs_get(r->procs, o->pids[i], false);

		if (p && cp_proc_read(p) == 0)
			runtime_check(r, p);
	}
	return r;
nomem:
	cp_recorder_free(r);
	cp_error(err, "out of memory");
	errno = err;
	return NULL;
}

struct cp_recorder *cp_recorder_start(const struct cp_recorder_opts *o, char *const cmd[], struct cp_launch *child)
{
	struct cp_recorder_opts ro = *o;
	struct cp_recorder *r;
	uint32_t pid;
	int err;

	if (!cmd)
		return cp_recorder_new(o);
	if ((err = cp_launch_start(child, cmd))) {
		cp_error(-err, "cannot start %s: %s", cmd[0], strerror(-err));
		errno = -err;
		return NULL;
	}
	pid = (uint32_t)child->pid;
	ro.pids = &pid;
	ro.npids = 1;
	ro.follow_forks = true;
	if (!(r = cp_recorder_new(&ro))) {
		err = errno;
		cp_launch_end(child); /* never released: it exits without running */
		errno = err;
		return NULL;
	}
	return r;
}

void cp_recorder_free(struct cp_recorder *r)
{
	if (!r)
		return;
	cp_sampler_free(r->sampler);
	cp_symbolizer_free(r->sym);
	cp_runtimes_free(r->rts);
	cp_debuginfod_free(r->dbgd);
	cp_unwinder_free(r->unw);
	cp_procs_free(r->procs, profile_free_user);
	cp_profile_free(r->one);
	cp_profile_free(r->shared);
	cp_locmemo_free(r->memo);
	for (size_t i = 0; r->pending && i < (size_t)1 << PENDING_BITS; i++) {
		free(r->pending[i].pcs);
		free(r->pending[i].locs);
	}
	free(r->pending);
	cp_offtotals_free(r->offtotals);
	free(r->pcs);
	free(r->fps);
	free(r->natnames);
	free(r->locs);
	free(r);
}

int cp_recorder_poll(struct cp_recorder *r, int timeout_ms)
{
	int err = cp_sampler_poll(r->sampler, timeout_ms);

	cp_budget_keep(&r->budget);
	if (r->error)
		return r->error;
	return err < 0 ? err : 0;
}

int cp_recorder_finish(struct cp_recorder *r)
{
	cp_sampler_stop(r->sampler);
	while (cp_sampler_drain(r->sampler) >= 4096 && !r->error)
		;
	r->finished = true;
	return r->error;
}

int64_t cp_recorder_period(const struct cp_recorder *r)
{
	return r->period;
}

uint64_t cp_recorder_samples(const struct cp_recorder *r)
{
	return r->nsamples;
}

void cp_recorder_counts(struct cp_recorder *r, struct cp_sampler_counts *c)
{
	cp_sampler_counts(r->sampler, c);
}

size_t cp_recorder_nprocs(const struct cp_recorder *r)
{
	return cp_procs_count(r->procs);
}

/* ---- the series policy ---- */

static int kv_cmp(const void *a, const void *b)
{
	return strcmp(((const struct cp_kv *)a)->name, ((const struct cp_kv *)b)->name);
}

size_t cp_series_labels(const struct cp_proc *p, const char *node, const struct cp_kv *extra, size_t nextra,
			struct cp_kv *kv)
{
	size_t k = 0;

	kv[k++] = (struct cp_kv){ "comm", p->comm[0] ? p->comm : "?" };
	kv[k++] = (struct cp_kv){ "node", node };
	if (p->exe)
		kv[k++] = (struct cp_kv){ "exe", p->exe };
	if (p->container)
		kv[k++] = (struct cp_kv){ "container", p->container };
	if (p->unit)
		kv[k++] = (struct cp_kv){ "unit", p->unit };
	if (p->pod)
		kv[k++] = (struct cp_kv){ "pod", p->pod };
	for (size_t i = 0; i < nextra; i++) {
		size_t j;

		for (j = 0; j < k && strcmp(kv[j].name, extra[i].name); j++)
			;
		kv[j] = extra[i]; /* the extra labels win */
		if (j == k)
			k++;
	}
	cp_qsort(kv, k, sizeof(*kv), kv_cmp); /* one program, one order */
	return k;
}

/* a process with samples in the interval, and its program's labels */
struct member {
	struct cp_proc *p;
	const struct cp_kv *kv;
	size_t k;
};

/* the same program: the same labels (sorted by name) */
static int program_cmp(const struct member *x, const struct member *y)
{
	int c;

	if (x->k != y->k)
		return x->k < y->k ? -1 : 1;
	for (size_t i = 0; i < x->k; i++)
		if ((c = strcmp(x->kv[i].name, y->kv[i].name)) || (c = strcmp(x->kv[i].value, y->kv[i].value)))
			return c;
	return 0;
}

/* by program, then pid (an order that does not depend on the process table's) */
static int member_cmp(const void *a, const void *b)
{
	const struct member *x = a, *y = b;
	int c = program_cmp(x, y);

	return c ? c : x->p->pid < y->p->pid ? -1 : x->p->pid > y->p->pid;
}

static int u32_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

struct gather {
	struct member *m;
	size_t n, cap;
	struct cp_kv *kv; /* cap * width */
	size_t width;
	const char *node;
	const struct cp_kv *extra;
	size_t nextra;
	size_t nrows; /* the members' cpu rows */
};

static void gather_proc(struct cp_proc *p, void *arg)
{
	struct gather *g = arg;
	struct profs *ps = p->user;
	struct cp_kv *kv;

	if (!ps || (!ps->nrows && (!ps->off || !ps->off->nsamples)) || g->n >= g->cap)
		return;
	kv = g->kv + g->n * g->width;
	g->m[g->n] = (struct member){ p, kv, cp_series_labels(p, g->node, g->extra, g->nextra, kv) };
	g->nrows += ps->nrows;
	g->n++;
}

/* a program's members m[0..n) and its cpu rows in the shared profile, sorted */
struct program {
	const struct member *m;
	size_t n;
	const uint32_t *rows;
	size_t nrows;
};

/* the append of prof's samples (or only sel[0..nsel), rows of the shared
 * profile) as the series name of program g */
static void add_append(struct cp_recorder_series *s, struct cp_profile *prof, const uint32_t *sel, size_t nsel,
		       const char *name, const struct program *g, int64_t start, int64_t duration)
{
	if (!prof || !(sel ? nsel : prof->nsamples))
		return;
	prof->time_nanos = start;
	prof->duration_nanos = duration;
	s->a[s->n++] = (struct cp_store_append){ .profile = prof, .name = name, .labels = g->m[0].kv,
						 .nlabels = g->m[0].k, .sel = sel, .nsel = nsel };
}

static bool in_rows(const struct cp_profile *src, uint32_t sample, void *arg)
{
	const struct program *g = arg;
	size_t lo = 0, hi = g->nrows;

	(void)src;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (g->rows[mid] < sample)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < g->nrows && g->rows[lo] == sample;
}

/* A copy of p (tagged and filtered by o) whose one value is wall-clock time. */
static struct cp_profile *wall_part(const struct cp_profile *p, const struct cp_merge_opts *o, int64_t period)
{
	struct cp_profile *w = cp_profile_copy(p, o);
	int64_t t, u;

	if (!w)
		return NULL;
	t = cp_profile_str(w, "wall");
	u = cp_profile_str(w, "nanoseconds");
	if (t < 0 || u < 0 || w->ntypes != 1) {
		cp_profile_free(w);
		return NULL;
	}
	w->sample_types[0] = (struct cp_valuetype){ (uint32_t)t, (uint32_t)u };
	w->period_type = w->sample_types[0];
	w->period = period;
	return w;
}

/* Program g's wall-clock profile of the interval: its cpu samples (the
 * time each stands for, the period), labelled state "CPU", and its off-CPU
 * time off (states S, D, R); NULL when it has neither, or out of memory. */
static struct cp_profile *wall_profile(struct cp_recorder *r, const struct program *g, const struct cp_profile *off)
{
	struct cp_merge_opts on = { .tag_key = "state", .tag_value = "CPU", .keep = in_rows, .keep_arg = (void *)g };
	struct cp_profile *w = NULL, *o = NULL;

	if (g->nrows && !(w = wall_part(r->shared, &on, r->period)))
		return NULL;
	if (off && off->nsamples) {
		if (!(o = wall_part(off, NULL, r->period)) || (w && cp_profile_merge(w, o, NULL))) {
			cp_profile_free(o);
			cp_profile_free(w);
			return NULL;
		}
		if (w)
			cp_profile_free(o);
		else
			w = o;
	}
	return w;
}

/* Program g's off-CPU profile into *out: its one process's, else theirs
 * merged (made, kept in s); NULL when none has any.  Each process's values
 * become its threads' exact totals first, once per interval, whatever the
 * number of tries at storing them.  0 or -ENOMEM (with its message). */
static int program_offcpu(struct cp_recorder *r, const struct program *g, struct cp_recorder_series *s,
			  struct cp_profile **out)
{
	struct cp_profile *m = NULL;

	*out = NULL;
	for (size_t i = 0; i < g->n; i++) {
		struct profs *ps = g->m[i].p->user;

		if (!ps->off || !ps->off->nsamples)
			continue;
		if (!ps->off_scaled) {
			if (cp_offtotals_scale(r->offtotals, ps->off, 0, (size_t)-1))
				return cp_error(ENOMEM, "out of memory scaling the off-CPU time of a flush");
			ps->off_scaled = true;
		}
		if (!*out) {
			*out = ps->off;
			continue;
		}
		if (!m) { /* a second process: the program's own profile */
			if (!(m = cp_profile_copy(*out, NULL)))
				return cp_error(ENOMEM, "out of memory merging the off-CPU profiles of a program");
			s->made[s->nmade++] = m;
			*out = m;
		}
		if (cp_profile_merge(m, ps->off, NULL))
			return cp_error(ENOMEM, "out of memory merging the off-CPU profiles of a program");
	}
	return 0;
}

/* After the end: the fetches in flight get their time (a fetch gives up
 * itself after DEBUGINFOD_TIMEOUT_MS, and says so). */
static void wait_fetches(struct cp_recorder *r)
{
	if (r->dbgd && r->finished && !r->waited) {
		cp_debuginfod_wait(r->dbgd, DEBUGINFOD_TIMEOUT_MS + 2000);
		r->waited = true;
	}
}

/* names from debug files that landed since the samples were taken */
static void refresh_one(struct cp_proc *p, void *arg)
{
	struct cp_recorder *r = arg;
	struct profs *ps = p->user;
	int err;

	if (ps && ps->off && ps->off->nsamples && !r->error && (err = cp_symbolize_refresh(r->sym, ps->off)))
		r->error = err;
}

int cp_recorder_series(struct cp_recorder *r, const char *node, const struct cp_kv *extra, size_t nextra,
		       int64_t start_ns, int64_t end_ns, struct cp_recorder_series *s)
{
	struct gather g = { .cap = cp_recorder_nprocs(r), .width = nextra + CP_SERIES_OWN_LABELS, .node = node,
			    .extra = extra, .nextra = nextra };
	int64_t duration = end_ns - start_ns > 0 ? end_ns - start_ns : 1;
	struct program *pg = NULL;
	size_t npg = 0, i, j, used = 0;
	int err = 0;

	memset(s, 0, sizeof(*s));
	if (!g.cap)
		return 0;
	wait_fetches(r);
	if (r->shared && (r->error = cp_symbolize_refresh(r->sym, r->shared)) == 0)
		cp_procs_each(r->procs, refresh_one, r);
	if (r->error)
		return r->error;
	g.m = calloc(g.cap, sizeof(*g.m));
	s->kv = g.kv = calloc(g.cap * g.width, sizeof(*s->kv));
	if (!g.m || !g.kv)
		goto nomem;
	cp_procs_each(r->procs, gather_proc, &g);
	cp_qsort(g.m, g.n, sizeof(*g.m), member_cmp);
	s->sel = calloc(g.nrows + 1, sizeof(*s->sel));
	pg = calloc(g.n + 1, sizeof(*pg));
	s->a = calloc(g.n * (r->o.offcpu ? 3 : 1) + 1, sizeof(*s->a));
	s->made = calloc(2 * g.n + 1, sizeof(*s->made));
	if (!s->sel || !pg || !s->a || !s->made)
		goto nomem;
	/* the programs, and their cpu series first: those share one profile,
	 * which the store then merges once */
	for (i = 0; i < g.n; i = j, npg++) {
		uint32_t *rows = s->sel + used;
		size_t n = 0;

		for (j = i; j < g.n && !program_cmp(&g.m[i], &g.m[j]); j++) {
			struct profs *ps = g.m[j].p->user;

			if (ps->nrows)
				memcpy(rows + n, ps->rows, ps->nrows * sizeof(*rows));
			n += ps->nrows;
		}
		cp_qsort(rows, n, sizeof(*rows), u32_cmp); /* in_rows looks them up */
		used += n;
		pg[npg] = (struct program){ &g.m[i], j - i, rows, n };
		add_append(s, r->shared, rows, n, CP_RECORDER_CPU_TYPE, &pg[npg], start_ns, duration);
	}
	for (i = 0; r->o.offcpu && i < npg; i++) {
		struct cp_profile *off, *wall;

		if ((err = program_offcpu(r, &pg[i], s, &off)))
			goto out;
		add_append(s, off, NULL, 0, "offcpu", &pg[i], start_ns, duration);
		if (!(wall = wall_profile(r, &pg[i], off)) && (pg[i].nrows || off))
			goto nomem;
		if (wall)
			s->made[s->nmade++] = wall;
		add_append(s, wall, NULL, 0, "wall", &pg[i], start_ns, duration);
	}
	goto out;
nomem:
	err = cp_error(ENOMEM, "out of memory gathering the series of a flush");
out:
	free(g.m);
	free(pg);
	if (err)
		cp_recorder_series_release(s);
	return err;
}

void cp_recorder_series_release(struct cp_recorder_series *s)
{
	for (size_t i = 0; i < s->nmade; i++)
		cp_profile_free(s->made[i]);
	free(s->made);
	free(s->a);
	free(s->kv);
	free(s->sel);
	memset(s, 0, sizeof(*s));
}

static void drop_profile(struct cp_proc *p, void *arg)
{
	(void)arg;
	if (p->user)
		profile_free_user(p->user);
	p->user = NULL;
}

void cp_recorder_reset(struct cp_recorder *r)
{
	uint32_t *slots = NULL;
	int64_t n = r->pending ? open_waits(r, &slots) : 0;
	struct { uint32_t pid; struct cp_profile *off; } *next = NULL;
	size_t nnext = 0;

	/* each process's open waits: into its next off-CPU profile, made now
	 * (what cannot be carried is made again from the pcs at the end) */
	if (n > 0 && (next = calloc((size_t)n, sizeof(*next))))
		for (int64_t i = 0, j; i < n; i = j) {
			uint32_t pid = r->pending[slots[i]].pid;
			struct cp_proc *p = cp_procs_get(r->procs, pid, false);
			struct profs *ps = p ? p->user : NULL;
			struct cp_profile *off;

			for (j = i + 1; j < n && r->pending[slots[j]].pid == pid; j++)
				;
			if (!ps || !ps->off || !(off = new_offcpu_profile(r)))
				continue;
			main_mapping_first(r, off, p);
			if (carry_waits(r, ps->off, off, slots + i, (size_t)(j - i))) {
				cp_profile_free(off);
				continue;
			}
			next[nnext].pid = pid;
			next[nnext++].off = off;
		}
	free(slots);
	cp_procs_each(r->procs, drop_profile, NULL);
	for (size_t i = 0; i < nnext; i++) {
		struct cp_proc *p = cp_procs_get(r->procs, next[i].pid, false);
		struct profs *ps = p ? proc_profs(p) : NULL;

		if (ps)
			ps->off = next[i].off;
		else
			cp_profile_free(next[i].off);
	}
	free(next);
	cp_profile_free(r->shared);
	r->shared = NULL;
	r->interval++;
	if (r->offtotals)
		cp_offtotals_clear(r->offtotals);
	cp_locmemo_clear(r->memo);
	cp_recorder_prune(r);
	/* the interval's profiles are gone: their memory is the next one's
	 * (a malloc_trim here cost 12% of the recorder's CPU in the storm, in
	 * TLB shootdowns; the budget trims when the resident set is over it) */
}

struct dead_list {
	uint32_t *pids;
	size_t n, cap;
	uint64_t before;
};

static void find_dead(struct cp_proc *p, void *arg)
{
	struct dead_list *d = arg;
	struct profs *ps = p->user;

	/* gone a while (its last samples are drained) and nothing pending */
	if (p->dead && p->exit_time < d->before && (!ps || (!ps->nrows && (!ps->off || !ps->off->nsamples))) &&
	    d->n < d->cap)
		d->pids[d->n++] = p->pid;
}

void cp_recorder_prune(struct cp_recorder *r)
{
	struct dead_list d = { NULL, 0, cp_procs_count(r->procs), 0 };
	int64_t now = cp_mono_ns();

	d.before = now > 2000000000 ? (uint64_t)(now - 2000000000) : 0;
	if (!d.cap || !(d.pids = malloc(d.cap * sizeof(*d.pids))))
		return;
	cp_procs_each(r->procs, find_dead, &d);
	for (size_t i = 0; i < d.n; i++)
		cp_procs_remove(r->procs, d.pids[i], profile_free_user);
	if (d.n) /* their profiles, and a pid used again starts its maps' generations over */
		cp_locmemo_clear(r->memo);
	free(d.pids);
}

/* the one profile's off-CPU and wall values (the third and fourth, or
 * second and third without cpu time: add_sample) to the exact totals */
static int offcpu_scale_one(struct cp_recorder *r, struct cp_profile *p)
{
	size_t off = r->o.with_time ? 2 : 1;

	return cp_offtotals_scale(r->offtotals, p, off, off + 1);
}

struct cp_profile *cp_recorder_take(struct cp_recorder *r)
{
	struct cp_profile *p = r->one, *next = new_profile(r, r->o.with_time);

	if (!next)
		return NULL;
	wait_fetches(r);
	if (cp_symbolize_refresh(r->sym, p) || (r->o.offcpu && offcpu_scale_one(r, p))) {
		cp_profile_free(next);
		return NULL;
	}
	if (r->pending && p) { /* the open waits: into the next profile */
		uint32_t *slots;
		int64_t n = open_waits(r, &slots);

		if (n > 0)
			(void)carry_waits(r, p, next, slots, (size_t)n); /* (else made again from the pcs) */
		free(slots);
	}
	if (r->offtotals)
		cp_offtotals_clear(r->offtotals);
	r->one = next;
	r->interval++;
	cp_locmemo_clear(r->memo);
	return p;
}

uint64_t cp_recorder_unwind_rules(struct cp_recorder *r)
{
	struct cp_unwind_counts u;

	cp_unwind_counts(r->unw, &u);
	return u.rules;
}

void cp_recorder_debug(struct cp_recorder *r, FILE *out)
{
	struct cp_sampler_counts c;
	struct cp_unwind_counts u;
	struct cp_symbolize_counts y;
	uint64_t probes, hits;

	cp_sampler_counts(r->sampler, &c);
	cp_unwind_counts(r->unw, &u);
	cp_symbolize_counts(r->sym, &y);
	cp_locmemo_counts(r->memo, &probes, &hits);
	fprintf(out, " [taken %llu, dropped %llu, no ustack %llu, lost records %llu; unwinds %llu, "
		     "frames %llu (%llu by frame pointer, %llu signal), %llu CFI rules read; location memo %llu "
		     "probes, %llu hits; lookups %llu, misses %llu, names read %llu, demangled %llu; "
		     "processes %zu; bpf %llu ns in %llu runs; %llu MB resident, caches cut %llu times]",
		(unsigned long long)c.samples, (unsigned long long)c.dropped, (unsigned long long)c.ustack_fault,
		(unsigned long long)c.lost_records, (unsigned long long)u.unwinds, (unsigned long long)u.frames,
		(unsigned long long)u.fp, (unsigned long long)u.signal, (unsigned long long)u.rules,
		(unsigned long long)probes, (unsigned long long)hits,
		(unsigned long long)y.lookups, (unsigned long long)y.misses, (unsigned long long)y.names_read,
		(unsigned long long)y.demangled, cp_procs_count(r->procs),
		(unsigned long long)c.bpf_run_ns, (unsigned long long)c.bpf_run_cnt,
		(unsigned long long)(cp_rss_bytes() >> 20), (unsigned long long)r->budget.evictions);
	if (r->o.offcpu)
		fprintf(out, " [off-CPU: %llu stacks sent, %llu unmatched]", (unsigned long long)c.offcpu_sent,
			(unsigned long long)r->offcpu_unmatched);
}

void cp_recorder_summary(struct cp_recorder *r, FILE *out, int64_t ns)
{
	struct cp_sampler_counts c;

	cp_recorder_counts(r, &c);
	fprintf(out, "%llu samples in %.1f s", (unsigned long long)cp_recorder_samples(r), (double)ns / 1e9);
	if (c.dropped)
		fprintf(out, " (%llu lost: ring buffer full)", (unsigned long long)c.dropped);
	if (cp_log_enabled(CP_LOG_DEBUG))
		cp_recorder_debug(r, out);
}

uint64_t cp_recorder_offcpu_period(int freq)
{
	uint64_t p = 1000000000ull / (uint64_t)(freq > 0 ? freq : 19) / 1000000 * 1000000; /* whole ms */

	return p < 1000000 ? 1000000 : p > 1000000000 ? 1000000000 : p;
}

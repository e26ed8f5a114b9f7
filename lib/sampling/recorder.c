/* SPDX-License-Identifier: MIT */
/* The sampling pipeline: sampler records -> processes -> unwinding ->
 * symbolizing -> stacks in profiles (see recorder.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "debuginfod.h"
#include "../error.h"
#include "launch.h"
#include "locmemo.h"
#include "../log.h"
#include "recorder.h"
#include "symbolize.h"
#include "unwind.h"
#include "budget.h"
#include "../util.h"

/* the location memo: 2^16 frames, 24 bytes each: 1.5 MB in one huge page */
#define MEMO_BITS 16

/* a fetch from debuginfod is given up after this, and the end of a
 * recording waits at most this for those in flight */
#define DEBUGINFOD_TIMEOUT_MS 15000

struct cp_recorder {
	struct cp_recorder_opts o;
	struct cp_procs *procs;
	struct cp_unwinder *unw;
	struct cp_symbolizer *sym;
	struct cp_debuginfod *dbgd; /* NULL: no servers */
	struct cp_sampler *sampler;
	struct cp_profile *one; /* !per_process: everything in one profile */
	int64_t period;
	uint64_t nsamples;
	int error; /* the first failure inside a callback */
	bool finished, waited; /* debuginfod: the last hand-over waits for the fetches */
	uint64_t *pcs;
	uint32_t *locs;
	struct cp_budget budget;
	/* the locations frames were given, in the profiles of this interval:
	 * cleared whenever one of those profiles goes */
	struct cp_locmemo *memo;
};

static void profile_free_user(void *p)
{
	cp_profile_free(p);
}

static struct cp_profile *new_profile(struct cp_recorder *r, bool with_time)
{
	struct cp_profile *p = cp_profile_new();

	if (!p)
		return NULL;
	if (cp_profile_add_sample_type(p, "samples", "count") ||
	    (with_time && cp_profile_add_sample_type(p, "cpu", "nanoseconds")) ||
	    cp_profile_set_period_type(p, "cpu", "nanoseconds", r->period)) {
		cp_profile_free(p);
		return NULL;
	}
	return p;
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

static void on_sample(void *arg, const struct cp_sample_rec *s)
{
	struct cp_recorder *r = arg;
	struct cp_proc *p;
	struct cp_profile *prof;
	struct cp_label labels[4];
	size_t nl = 0, nlocs = 0;
	char tid[16], pid[16], comm[CP_COMM_LEN + 1];
	int64_t stack, ls, loc;
	int64_t values[2];
	bool stale;
	int n;

	if (r->error)
		return;
	p = sample_proc(r, s);
	if (!p) {
		r->error = -ENOMEM;
		return;
	}
	if (!r->o.per_process) {
		if (!r->one && !(r->one = new_profile(r, r->o.with_time)))
			goto fail;
		prof = r->one;
	} else {
		if (!p->user && !(p->user = new_profile(r, false)))
			goto fail;
		prof = p->user;
	}
	if (prof->nmappings == 0)
		main_mapping_first(r, prof, p);
	/* kernel frames first (leaf first), then user frames */
	if (!r->o.no_kernel) {
		for (uint32_t i = 0; i < s->kstack_len / 8 && i < CP_KSTACK_MAX; i++) {
			unsigned kind = i > 0 ? CP_LOCMEMO_KERNEL_RET : CP_LOCMEMO_KERNEL;

			if (!(loc = cp_locmemo_get(r->memo, s->pid, 0, s->kstack[i], kind))) {
				loc = cp_symbolize_kernel(r->sym, prof, s->kstack[i], i > 0);
				if (loc < 0)
					goto fail;
				cp_locmemo_put(r->memo, s->pid, 0, s->kstack[i], kind, (uint32_t)loc);
			}
			r->locs[nlocs++] = (uint32_t)loc;
		}
	}
	stale = false;
	if ((s->flags & CP_SAMPLE_USER) && !cp_proc_find_map(p, s->regs[CP_REG_IP])) {
		if (s->flags & CP_SAMPLE_EXECVE)
			stale = true; /* the old program's registers, the new program's mappings */
		else
			cp_proc_refresh(p, s->regs[CP_REG_IP]); /* its mmap record is not in yet */
	}
	n = stale ? 0 : cp_unwind(r->unw, p, s, r->pcs, CP_USER_FRAMES_MAX);
	for (int i = 0; i < n; i++) {
		unsigned kind = i > 0 ? CP_LOCMEMO_USER_RET : CP_LOCMEMO_USER;
		bool stable;

		if (!(loc = cp_locmemo_get(r->memo, s->pid, p->maps_gen, r->pcs[i], kind))) {
			loc = cp_symbolize_user(r->sym, prof, p, r->pcs[i], i > 0, &stable);
			if (loc < 0)
				goto fail;
			if (stable)
				cp_locmemo_put(r->memo, s->pid, p->maps_gen, r->pcs[i], kind, (uint32_t)loc);
		}
		r->locs[nlocs++] = (uint32_t)loc;
	}
	if (nlocs == 0 && r->o.no_kernel)
		return; /* a kernel thread's sample, and kernel frames are not wanted */
	stack = cp_profile_stack(prof, r->locs, nlocs);
	if (stack < 0)
		goto fail;
	memcpy(comm, s->comm, CP_COMM_LEN);
	comm[CP_COMM_LEN] = 0;
	snprintf(tid, sizeof(tid), "%u", s->tid);
	if (str_label(prof, &labels[nl++], "thread_id", tid) || str_label(prof, &labels[nl++], "thread_name", comm))
		goto fail;
	if (!r->o.per_process) {
		snprintf(pid, sizeof(pid), "%u", s->pid);
		if (str_label(prof, &labels[nl++], "pid", pid) || str_label(prof, &labels[nl++], "comm", p->comm))
			goto fail;
	}
	ls = cp_profile_labelset(prof, labels, nl);
	if (ls < 0)
		goto fail;
	values[0] = 1;
	values[1] = r->period;
	if (cp_profile_add_sample(prof, (uint32_t)stack, (uint32_t)ls, values))
		goto fail;
	r->nsamples++;
	return;
fail:
	r->error = -ENOMEM;
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
	if (child->exec_time && child->exec_time > t)
		return; /* its exec was seen first */
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

	if (pid != tid)
		return;
	p = cp_procs_get(r->procs, pid, false);
	if (p) {
		p->dead = true;
		p->exit_time = t;
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
	r->pcs = calloc(CP_USER_FRAMES_MAX, sizeof(*r->pcs));
	r->locs = calloc(CP_USER_FRAMES_MAX + CP_KSTACK_MAX, sizeof(*r->locs));
	r->procs = cp_procs_new();
	r->unw = cp_unwinder_new(o->debuginfo);
	r->sym = r->unw ? cp_symbolizer_new(r->unw, 0) : NULL;
	r->memo = cp_locmemo_new(MEMO_BITS);
	if (!r->pcs || !r->locs || !r->procs || !r->unw || !r->sym || !r->memo)
		goto nomem;
	cp_budget_init(&r->budget, o->max_memory, r->unw, r->sym, o->verb ? o->verb : "record");
	if (!o->per_process && !(r->one = new_profile(r, o->with_time)))
		goto nomem;
	for (size_t i = 0; i < o->npids; i++)
		if (!cp_procs_get(r->procs, o->pids[i], true))
			goto nomem;
	if (!o->no_kernel)
		cp_symbolize_preload(r->sym);
	memset(&so, 0, sizeof(so));
	so.freq = o->freq;
	so.pids = o->pids;
	so.npids = o->npids;
	so.follow_forks = o->follow_forks;
	so.cgroup = o->cgroup;
	so.idle = o->idle;
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
	cp_debuginfod_free(r->dbgd);
	cp_unwinder_free(r->unw);
	cp_procs_free(r->procs, profile_free_user);
	cp_profile_free(r->one);
	cp_locmemo_free(r->memo);
	free(r->pcs);
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

struct each_ctx {
	cp_recorder_each_fn fn;
	void *arg;
};

static void each_one(struct cp_proc *p, void *arg)
{
	struct each_ctx *c = arg;
	struct cp_profile *prof = p->user;

	if (prof && prof->nsamples)
		c->fn(p, prof, c->arg);
}

void cp_recorder_each(struct cp_recorder *r, cp_recorder_each_fn fn, void *arg)
{
	struct each_ctx c = { fn, arg };

	cp_procs_each(r->procs, each_one, &c);
}

/* ---- the series policy ---- */

struct series_ctx {
	struct cp_recorder_series *s;
	const char *node;
	const struct cp_kv *extra;
	size_t nextra, cap;
	int64_t start, duration;
};

size_t cp_series_labels(const struct cp_proc *p, const char *node, const struct cp_kv *extra, size_t nextra,
			char pid[16], struct cp_kv *kv)
{
	size_t k = 0;

	snprintf(pid, 16, "%u", p->pid);
	kv[k++] = (struct cp_kv){ "comm", p->comm[0] ? p->comm : "?" };
	kv[k++] = (struct cp_kv){ "pid", pid };
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
	return k;
}

static void series_one(const struct cp_proc *p, struct cp_profile *prof, void *arg)
{
	struct series_ctx *c = arg;
	struct cp_recorder_series *s = c->s;
	struct cp_kv *kv;
	size_t k;

	if (s->n >= c->cap)
		return;
	kv = s->kv + s->n * (c->nextra + CP_SERIES_OWN_LABELS);
	k = cp_series_labels(p, c->node, c->extra, c->nextra, s->pid[s->n], kv);
	prof->time_nanos = c->start;
	prof->duration_nanos = c->duration;
	s->a[s->n] = (struct cp_store_append){ .profile = prof, .name = "cpu", .labels = kv, .nlabels = k };
	s->n++;
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
	struct cp_profile *prof = p->user;
	int err;

	if (prof && prof->nsamples && !r->error && (err = cp_symbolize_refresh(r->sym, prof)))
		r->error = err;
}

int cp_recorder_series(struct cp_recorder *r, const char *node, const struct cp_kv *extra, size_t nextra,
		       int64_t start_ns, int64_t end_ns, struct cp_recorder_series *s)
{
	struct series_ctx c = { s, node, extra, nextra, cp_recorder_nprocs(r), start_ns,
				end_ns - start_ns > 0 ? end_ns - start_ns : 1 };

	memset(s, 0, sizeof(*s));
	if (!c.cap)
		return 0;
	s->a = calloc(c.cap, sizeof(*s->a));
	s->kv = calloc(c.cap * (nextra + CP_SERIES_OWN_LABELS), sizeof(*s->kv));
	s->pid = calloc(c.cap, sizeof(*s->pid));
	if (!s->a || !s->kv || !s->pid) {
		cp_recorder_series_release(s);
		return cp_error(ENOMEM, "out of memory gathering the series of a flush");
	}
	wait_fetches(r);
	cp_procs_each(r->procs, refresh_one, r);
	if (r->error) {
		cp_recorder_series_release(s);
		return r->error;
	}
	cp_recorder_each(r, series_one, &c);
	return 0;
}

void cp_recorder_series_release(struct cp_recorder_series *s)
{
	free(s->a);
	free(s->kv);
	free(s->pid);
	memset(s, 0, sizeof(*s));
}

static void drop_profile(struct cp_proc *p, void *arg)
{
	(void)arg;
	cp_profile_free(p->user);
	p->user = NULL;
}

void cp_recorder_reset(struct cp_recorder *r)
{
	cp_procs_each(r->procs, drop_profile, NULL);
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
	struct cp_profile *prof = p->user;

	/* gone a while (its last samples are drained) and nothing pending */
	if (p->dead && p->exit_time < d->before && (!prof || !prof->nsamples) && d->n < d->cap)
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

struct cp_profile *cp_recorder_take(struct cp_recorder *r)
{
	struct cp_profile *p = r->one, *next = new_profile(r, r->o.with_time);

	if (!next)
		return NULL;
	wait_fetches(r);
	if (cp_symbolize_refresh(r->sym, p)) {
		cp_profile_free(next);
		return NULL;
	}
	r->one = next;
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
		     "frames %llu (%llu by frame pointer, %llu signal), %llu CFI rules read; frames named %llu, "
		     "%llu of them again; lookups %llu, misses %llu; "
		     "processes %zu; bpf %llu ns in %llu runs; %llu MB resident, caches cut %llu times]",
		(unsigned long long)c.samples, (unsigned long long)c.dropped, (unsigned long long)c.ustack_fault,
		(unsigned long long)c.lost_records, (unsigned long long)u.unwinds, (unsigned long long)u.frames,
		(unsigned long long)u.fp, (unsigned long long)u.signal, (unsigned long long)u.rules,
		(unsigned long long)probes, (unsigned long long)hits,
		(unsigned long long)y.lookups, (unsigned long long)y.misses, cp_procs_count(r->procs),
		(unsigned long long)c.bpf_run_ns, (unsigned long long)c.bpf_run_cnt,
		(unsigned long long)(cp_rss_bytes() >> 20), (unsigned long long)r->budget.evictions);
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

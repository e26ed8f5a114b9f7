/* SPDX-License-Identifier: MIT */
/* Aggregations for cprof top's views (see aggregate.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../error.h"
#include "../index.h"
#include "aggregate.h"

/* u64 -> u32, open addressing */
struct hmap {
	uint64_t *keys;
	uint32_t *vals; /* UINT32_MAX: empty */
	uint32_t cap, n;
};

static void hmap_release(struct hmap *h)
{
	free(h->keys);
	free(h->vals);
	memset(h, 0, sizeof(*h));
}

static uint32_t *hmap_slot(struct hmap *h, uint64_t key)
{
	uint32_t i = (uint32_t)cp_hash_u64(key, 7) & (h->cap - 1);

	while (h->vals[i] != UINT32_MAX && h->keys[i] != key)
		i = (i + 1) & (h->cap - 1);
	h->keys[i] = key;
	return &h->vals[i];
}

static int hmap_grow(struct hmap *h)
{
	struct hmap n = { NULL, NULL, h->cap ? h->cap * 2 : 64, 0 };

	n.keys = malloc((size_t)n.cap * sizeof(*n.keys));
	n.vals = malloc((size_t)n.cap * sizeof(*n.vals));
	if (!n.keys || !n.vals) {
		hmap_release(&n);
		return cp_error(ENOMEM, "out of memory aggregating the samples");
	}
	memset(n.vals, 0xff, (size_t)n.cap * sizeof(*n.vals));
	for (uint32_t i = 0; i < h->cap; i++)
		if (h->vals[i] != UINT32_MAX)
			*hmap_slot(&n, h->keys[i]) = h->vals[i];
	n.n = h->n;
	hmap_release(h);
	*h = n;
	return 0;
}

/* The value under key, or UINT32_MAX. */
static uint32_t hmap_get(const struct hmap *h, uint64_t key)
{
	uint32_t i;

	if (!h->cap)
		return UINT32_MAX;
	i = (uint32_t)cp_hash_u64(key, 7) & (h->cap - 1);
	while (h->vals[i] != UINT32_MAX) {
		if (h->keys[i] == key)
			return h->vals[i];
		i = (i + 1) & (h->cap - 1);
	}
	return UINT32_MAX;
}

/* Sets key (absent) to val. */
static int hmap_put(struct hmap *h, uint64_t key, uint32_t val)
{
	if ((h->n + 1) * 4 > h->cap * 3 && hmap_grow(h))
		return cp_error(ENOMEM, "out of memory aggregating the samples");
	*hmap_slot(h, key) = val;
	h->n++;
	return 0;
}

struct priv {
	struct hmap fnmap, procmap, thrmap, fnproc, crmap, cemap;
	struct hmap tnmap; /* (thread, name) -> index into tnval: a thread's weight under each of its names */
	int64_t *tnval;
	uint32_t ntn, tncap;
	uint64_t *mark; /* per function: the sample that last counted it */
	uint64_t *crmark, *cemark;
	uint64_t serial;
	uint32_t markcap;
	int64_t focus;   /* function index, -1 */
	uint32_t focus_name, focus_binary;
	uint32_t *stack;  /* a sample's function indices, leaf first */
	size_t stackcap;
};

struct cp_aggregate *cp_aggregate_new(const struct cp_aggregate_opts *o)
{
	struct cp_aggregate *a = calloc(1, sizeof(*a));
	struct priv *v = calloc(1, sizeof(*v));
	int64_t n, b;

	if (!a || !v || cp_strtab_init(&a->names)) {
		free(a);
		free(v);
		return NULL;
	}
	a->priv = v;
	a->o = *o;
	a->o.focus_name = a->o.focus_binary = NULL;
	v->focus = -1;
	v->focus_name = v->focus_binary = UINT32_MAX;
	if (o->focus_name) {
		n = cp_strtab_intern(&a->names, o->focus_name, strlen(o->focus_name));
		b = cp_strtab_intern(&a->names, o->focus_binary ? o->focus_binary : "",
				     o->focus_binary ? strlen(o->focus_binary) : 0);
		if (n < 0 || b < 0) {
			cp_aggregate_free(a);
			return NULL;
		}
		v->focus_name = (uint32_t)n;
		v->focus_binary = (uint32_t)b;
	}
	return a;
}

void cp_aggregate_free(struct cp_aggregate *a)
{
	struct priv *v;

	if (!a)
		return;
	v = a->priv;
	if (v) {
		hmap_release(&v->fnmap);
		hmap_release(&v->procmap);
		hmap_release(&v->thrmap);
		hmap_release(&v->tnmap);
		free(v->tnval);
		hmap_release(&v->fnproc);
		hmap_release(&v->crmap);
		hmap_release(&v->cemap);
		free(v->mark);
		free(v->crmark);
		free(v->cemark);
		free(v->stack);
		free(v);
	}
	cp_strtab_release(&a->names);
	free(a->fns);
	free(a->procs);
	free(a->threads);
	free(a->callers);
	free(a->callees);
	free(a);
}

static int grow(void **arr, uint32_t *cap, uint32_t need, size_t size)
{
	void *n;
	uint32_t c;

	if (need <= *cap)
		return 0;
	c = *cap ? *cap : 16;
	while (c < need)
		c *= 2;
	n = realloc(*arr, (size_t)c * size);
	if (!n)
		return cp_error(ENOMEM, "out of memory aggregating the samples");
	*arr = n;
	*cap = c;
	return 0;
}

/* The function (name, binary), added on first sight; UINT32_MAX when out of memory. */
static uint32_t fn_get(struct cp_aggregate *a, const char *name, const char *binary, bool kernel)
{
	struct priv *v = a->priv;
	int64_t n = cp_strtab_intern(&a->names, name, strlen(name));
	int64_t b = cp_strtab_intern(&a->names, binary, strlen(binary));
	uint64_t key;
	uint32_t id;
	struct cp_agg_fn *f;

	if (n < 0 || b < 0)
		return UINT32_MAX;
	key = (uint64_t)n << 32 | (uint64_t)b;
	id = hmap_get(&v->fnmap, key);
	if (id != UINT32_MAX)
		return id;
	if (grow((void **)&a->fns, &a->fncap, a->nfns + 1, sizeof(*a->fns)))
		return UINT32_MAX;
	if (a->fncap > v->markcap) {
		uint64_t *m = realloc(v->mark, a->fncap * sizeof(*m));
		uint64_t *cr = m ? realloc(v->crmark, a->fncap * sizeof(*cr)) : NULL;
		uint64_t *ce = cr ? realloc(v->cemark, a->fncap * sizeof(*ce)) : NULL;

		if (m)
			v->mark = m;
		if (cr)
			v->crmark = cr;
		if (ce)
			v->cemark = ce;
		if (!m || !cr || !ce)
			return UINT32_MAX;
		memset(m + v->markcap, 0, (a->fncap - v->markcap) * sizeof(*m));
		memset(cr + v->markcap, 0, (a->fncap - v->markcap) * sizeof(*cr));
		memset(ce + v->markcap, 0, (a->fncap - v->markcap) * sizeof(*ce));
		v->markcap = a->fncap;
	}
	id = a->nfns;
	if (hmap_put(&v->fnmap, key, id))
		return UINT32_MAX;
	f = &a->fns[a->nfns++];
	memset(f, 0, sizeof(*f));
	f->name = (uint32_t)n;
	f->binary = (uint32_t)b;
	f->kernel = kernel;
	if (f->name == v->focus_name && f->binary == v->focus_binary)
		v->focus = id;
	return id;
}

int64_t cp_aggregate_find(const struct cp_aggregate *a, const char *name, const char *binary)
{
	const struct priv *v = a->priv;
	int64_t n = cp_strtab_find(&a->names, name, strlen(name));
	int64_t b = cp_strtab_find(&a->names, binary, strlen(binary));
	uint32_t id;

	if (n < 0 || b < 0)
		return -1;
	id = hmap_get(&v->fnmap, (uint64_t)n << 32 | (uint64_t)b);
	return id == UINT32_MAX ? -1 : (int64_t)id;
}

/* What one profile's locations and label sets mean, computed once per add. */
struct pcache {
	uint32_t *loc_off, *loc_len; /* per location id: span in fns */
	uint32_t *fns;               /* function indices, leaf first within a location */
	size_t nfns, fncap;
	struct ls { uint32_t pid, tid, comm, tname; } *ls;
};

static const char *basename_of(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

static int cache_locations(struct cp_aggregate *a, const struct cp_profile *p, struct pcache *c)
{
	char buf[256];

	c->loc_off = calloc((size_t)p->nlocations + 1, sizeof(*c->loc_off));
	c->loc_len = calloc((size_t)p->nlocations + 1, sizeof(*c->loc_len));
	c->fncap = (size_t)p->nlines + p->nlocations + 1;
	c->fns = malloc(c->fncap * sizeof(*c->fns));
	if (!c->loc_off || !c->loc_len || !c->fns)
		return cp_error(ENOMEM, "out of memory aggregating the samples");
	for (uint32_t id = 1; id <= p->nlocations; id++) {
		const struct cp_location *l = cp_profile_loc(p, id);
		const char *bin = "", *mapfile = "";
		bool kernel = false;

		if (l->mapping) {
			mapfile = cp_profile_string(p, p->mappings[l->mapping - 1].filename);
			kernel = !strncmp(mapfile, "[kernel", 7) || !strcmp(mapfile, "[vmlinux]");
			bin = kernel ? "[kernel]" : basename_of(mapfile);
		}
		c->loc_off[id] = (uint32_t)c->nfns;
		if (l->nlines == 0 || (l->nlines == 1 && !p->lines[l->line_off].function)) {
			/* no symbol: one row per binary, not one per address */
			uint32_t fn;

			snprintf(buf, sizeof(buf), "[%s]", bin[0] ? bin : "unknown");
			fn = fn_get(a, kernel ? "[kernel]" : buf, bin, kernel);

			if (fn == UINT32_MAX)
				return cp_error(ENOMEM, "out of memory aggregating the samples");
			c->fns[c->nfns++] = fn;
			c->loc_len[id] = 1;
			continue;
		}
		for (uint32_t i = 0; i < l->nlines; i++) {
			const struct cp_line *ln = &p->lines[l->line_off + i];
			struct cp_frame f = { 0, 0, 0, id, i + 1 < l->nlines };
			uint32_t fn;

			if (ln->function)
				f.name = p->functions[ln->function - 1].name;
			fn = fn_get(a, cp_frame_name(p, &f, buf, sizeof(buf)), bin, kernel);
			if (fn == UINT32_MAX)
				return cp_error(ENOMEM, "out of memory aggregating the samples");
			c->fns[c->nfns++] = fn;
		}
		c->loc_len[id] = (uint32_t)c->nfns - c->loc_off[id];
	}
	return 0;
}

static uint32_t parse_u32(const char *s)
{
	char *end;
	unsigned long v = strtoul(s, &end, 10);

	return *s && !*end && v <= UINT32_MAX ? (uint32_t)v : 0;
}

static int cache_labels(struct cp_aggregate *a, const struct cp_profile *p, struct pcache *c, uint32_t pid,
			const char *comm)
{
	int64_t dcomm = cp_strtab_intern(&a->names, comm ? comm : "", comm ? strlen(comm) : 0);

	c->ls = calloc((size_t)p->nlabelsets + 1, sizeof(*c->ls));
	if (!c->ls || dcomm < 0)
		return cp_error(ENOMEM, "out of memory aggregating the samples");
	for (uint32_t i = 0; i < p->nlabelsets; i++) {
		const struct cp_span *sp = &p->labelsets[i];
		struct ls *l = &c->ls[i];

		l->pid = pid;
		l->comm = (uint32_t)dcomm;
		for (uint32_t j = 0; j < sp->len; j++) {
			const struct cp_label *lb = &p->labels[sp->off + j];
			const char *k = cp_profile_string(p, lb->key), *val = cp_profile_string(p, lb->str);
			int64_t id;

			if (!lb->str)
				continue;
			if (!strcmp(k, "pid"))
				l->pid = parse_u32(val);
			else if (!strcmp(k, "thread_id"))
				l->tid = parse_u32(val);
			else if (!strcmp(k, "comm") || !strcmp(k, "thread_name")) {
				if ((id = cp_strtab_intern(&a->names, val, strlen(val))) < 0)
					return cp_error(ENOMEM, "out of memory aggregating the samples");
				if (k[0] == 'c')
					l->comm = (uint32_t)id;
				else
					l->tname = (uint32_t)id;
			}
		}
	}
	return 0;
}

/* A thread changes its name (a fork's child execs, a thread names itself): it goes by the name most of
 * its weight carries, not the first one seen (a sample or two before an exec). */
static int thread_name(struct cp_aggregate *a, uint32_t t, uint32_t name, int64_t value)
{
	struct priv *v = a->priv;
	uint64_t key = (uint64_t)t << 32 | name;
	uint32_t i = hmap_get(&v->tnmap, key), cur;

	if (i == UINT32_MAX) {
		if (grow((void **)&v->tnval, &v->tncap, v->ntn + 1, sizeof(*v->tnval)) ||
		    hmap_put(&v->tnmap, key, v->ntn))
			return cp_error(ENOMEM, "out of memory aggregating the samples");
		i = v->ntn++;
		v->tnval[i] = 0;
	}
	v->tnval[i] += value;
	if (a->threads[t].name == name)
		return 0;
	cur = hmap_get(&v->tnmap, (uint64_t)t << 32 | a->threads[t].name);
	if (cur == UINT32_MAX || v->tnval[i] > v->tnval[cur])
		a->threads[t].name = name;
	return 0;
}

/* A process: by pid; samples without one (a downsampled day's, which keep programs, not processes;
 * the idle task's pid 0) by their command, a process each.  33 bits. */
static uint64_t proc_key(const struct ls *l)
{
	return l->pid ? l->pid : (uint64_t)1 << 32 | l->comm;
}

static int add_proc(struct cp_aggregate *a, const struct ls *l, int64_t value)
{
	struct priv *v = a->priv;
	uint64_t key = proc_key(l);
	uint32_t id = hmap_get(&v->procmap, key);

	if (id == UINT32_MAX) {
		if (grow((void **)&a->procs, &a->pcap, a->nprocs + 1, sizeof(*a->procs)) ||
		    hmap_put(&v->procmap, key, a->nprocs))
			return cp_error(ENOMEM, "out of memory aggregating the samples");
		id = a->nprocs++;
		a->procs[id] = (struct cp_agg_proc){ l->pid, l->comm, 0, 0 };
	}
	a->procs[id].value += value;
	if (l->tid) {
		uint64_t key = (uint64_t)l->tid << 32 | l->pid;
		uint32_t t = hmap_get(&v->thrmap, key);

		if (t == UINT32_MAX) {
			if (grow((void **)&a->threads, &a->tcap, a->nthreads + 1, sizeof(*a->threads)) ||
			    hmap_put(&v->thrmap, key, a->nthreads))
				return cp_error(ENOMEM, "out of memory aggregating the samples");
			t = a->nthreads++;
			a->threads[t] = (struct cp_agg_thread){ l->tid, l->pid, l->tname ? l->tname : l->comm, l->comm, 0 };
			a->procs[id].nthreads++;
		}
		a->threads[t].value += value;
		return thread_name(a, t, l->tname ? l->tname : l->comm, value);
	}
	return 0;
}

static int add_edge(struct cp_agg_edge **arr, uint32_t *n, uint32_t *cap, struct hmap *m, uint64_t *mark,
		    uint64_t serial, uint32_t fn, int64_t value)
{
	uint32_t id;

	if (mark[fn] == serial)
		return 0; /* once per sample */
	mark[fn] = serial;
	id = hmap_get(m, fn);
	if (id == UINT32_MAX) {
		if (grow((void **)arr, cap, *n + 1, sizeof(**arr)) || hmap_put(m, fn, *n))
			return cp_error(ENOMEM, "out of memory aggregating the samples");
		id = (*n)++;
		(*arr)[id] = (struct cp_agg_edge){ fn, 0 };
	}
	(*arr)[id].value += value;
	return 0;
}

static int add_sample(struct cp_aggregate *a, const struct cp_profile *p, const struct pcache *c, uint32_t s,
		      int64_t value)
{
	struct priv *v = a->priv;
	const struct cp_span *st = &p->stacks[p->samples[s].stack];
	const struct ls *l = &c->ls[p->samples[s].labels];
	size_t n = 0;
	uint32_t fn;

	if ((a->o.pid && l->pid != a->o.pid) || (a->o.tid && l->tid != a->o.tid))
		return 0;
	/* the sample's visible functions, leaf first */
	for (uint32_t i = 0; i < st->len; i++) {
		uint32_t loc = p->stack_locs[st->off + i];

		for (uint32_t j = 0; j < c->loc_len[loc]; j++) {
			fn = c->fns[c->loc_off[loc] + j];
			if (a->fns[fn].kernel ? a->o.no_kernel : a->o.no_user)
				continue;
			if (n == v->stackcap) {
				size_t nc = n ? n * 2 : 64;
				uint32_t *ns = realloc(v->stack, nc * sizeof(*ns));

				if (!ns)
					return cp_error(ENOMEM, "out of memory aggregating the samples");
				v->stack = ns;
				v->stackcap = nc;
			}
			v->stack[n++] = fn;
		}
	}
	if (n == 0) {
		/* only hidden frames (or none): a stand-in keeps the sample counted */
		bool kern = st->len && a->o.no_kernel;

		fn = fn_get(a, kern ? "[kernel]" : st->len ? "[user]" : "[unknown]",
			    kern ? "[kernel]" : st->len ? "[user]" : "", kern);
		if (fn == UINT32_MAX)
			return cp_error(ENOMEM, "out of memory aggregating the samples");
		if (!v->stack && !(v->stack = malloc(64 * sizeof(*v->stack))))
			return cp_error(ENOMEM, "out of memory aggregating the samples");
		v->stackcap = v->stackcap ? v->stackcap : 64;
		v->stack[n++] = fn;
	}
	v->serial++;
	a->total += value;
	a->nsamples++;
	a->fns[v->stack[0]].self += value;
	for (size_t i = 0; i < n; i++) {
		struct cp_agg_fn *f;

		fn = v->stack[i];
		if (v->mark[fn] == v->serial)
			continue; /* recursion: once per sample */
		v->mark[fn] = v->serial;
		f = &a->fns[fn];
		f->total += value;
		if (hmap_get(&v->fnproc, (uint64_t)fn << 33 | proc_key(l)) == UINT32_MAX) {
			if (hmap_put(&v->fnproc, (uint64_t)fn << 33 | proc_key(l), 0))
				return cp_error(ENOMEM, "out of memory aggregating the samples");
			if (!f->nprocs++) {
				f->pid = l->pid;
				f->comm = l->comm;
			}
		}
	}
	if (v->focus >= 0 && v->mark[v->focus] == v->serial) {
		if (v->stack[0] == (uint32_t)v->focus)
			a->focus_self += value;
		a->focus_total += value;
		for (size_t i = 0; i < n; i++) {
			if (v->stack[i] != (uint32_t)v->focus)
				continue;
			if (i + 1 < n && add_edge(&a->callers, &a->ncallers, &a->crcap, &v->crmap, v->crmark, v->serial,
						  v->stack[i + 1], value))
				return cp_error(ENOMEM, "out of memory aggregating the samples");
			if (i > 0 && add_edge(&a->callees, &a->ncallees, &a->cecap, &v->cemap, v->cemark, v->serial,
					      v->stack[i - 1], value))
				return cp_error(ENOMEM, "out of memory aggregating the samples");
		}
	}
	return add_proc(a, l, value);
}

int cp_aggregate_add(struct cp_aggregate *a, const struct cp_profile *p, int vidx, uint32_t pid, const char *comm)
{
	struct pcache c;
	int err;

	memset(&c, 0, sizeof(c));
	if (vidx < 0 || (size_t)vidx >= p->ntypes)
		return cp_error(EINVAL, "no sample type %d", vidx);
	err = cache_locations(a, p, &c);
	if (!err)
		err = cache_labels(a, p, &c, pid, comm);
	for (uint32_t s = 0; !err && s < p->nsamples; s++) {
		int64_t value = cp_profile_values(p, s)[vidx];

		if (value)
			err = add_sample(a, p, &c, s, value);
	}
	free(c.loc_off);
	free(c.loc_len);
	free(c.fns);
	free(c.ls);
	return err ? cp_error(ENOMEM, "out of memory") : 0;
}

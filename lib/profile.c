/* SPDX-License-Identifier: MIT */
#include "profile.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "util.h"

#define GROW(arr, cap, need) cp_grow((void **)&(arr), &(cap), (need), sizeof(*(arr)))

struct cp_profile *cp_profile_new(void)
{
	static uint64_t serials;
	struct cp_profile *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->serial = __atomic_add_fetch(&serials, 1, __ATOMIC_RELAXED);
	if (cp_strtab_init(&p->strs) < 0 || cp_profile_stack(p, NULL, 0) != 0 ||
	    cp_profile_labelset(p, NULL, 0) != 0) {
		cp_profile_free(p);
		errno = ENOMEM;
		return NULL;
	}
	return p;
}

void cp_profile_keep_duplicates(struct cp_profile *p, bool on)
{
	p->dups = p->strs.dups = on;
}

void cp_profile_free(struct cp_profile *p)
{
	if (!p)
		return;
	cp_strtab_release(&p->strs);
	free(p->sample_types);
	free(p->comments);
	free(p->functions);
	cp_index_release(&p->fidx);
	free(p->mappings);
	cp_index_release(&p->midx);
	free(p->locations);
	cp_index_release(&p->lidx);
	free(p->lines);
	free(p->stacks);
	free(p->stack_locs);
	cp_index_release(&p->stidx);
	free(p->labelsets);
	free(p->labels);
	cp_index_release(&p->lsidx);
	free(p->samples);
	free(p->values);
	cp_index_release(&p->saidx);
	free(p);
}

size_t cp_profile_bytes(const struct cp_profile *p)
{
	return sizeof(*p) + cp_strtab_bytes(&p->strs) + p->ntypes * sizeof(*p->sample_types) +
	       p->ncomments * sizeof(*p->comments) + p->fcap * sizeof(*p->functions) + cp_index_bytes(&p->fidx) +
	       p->mcap * sizeof(*p->mappings) + cp_index_bytes(&p->midx) + p->lcap * sizeof(*p->locations) +
	       cp_index_bytes(&p->lidx) + p->linecap * sizeof(*p->lines) + p->stcap * sizeof(*p->stacks) +
	       p->slcap * sizeof(*p->stack_locs) + cp_index_bytes(&p->stidx) + p->lscap * sizeof(*p->labelsets) +
	       p->lbcap * sizeof(*p->labels) + cp_index_bytes(&p->lsidx) + p->sacap * sizeof(*p->samples) +
	       p->sacap * p->ntypes * sizeof(*p->values) + cp_index_bytes(&p->saidx);
}

int64_t cp_profile_strn(struct cp_profile *p, const char *s, size_t len)
{
	return cp_strtab_intern(&p->strs, s, len);
}

int64_t cp_profile_str(struct cp_profile *p, const char *s)
{
	return cp_strtab_intern(&p->strs, s ? s : "", s ? strlen(s) : 0);
}

/* ---- functions ---- */

static int fn_eq(const void *ctx, uint32_t id, const void *key)
{
	const struct cp_function *a = &((const struct cp_profile *)ctx)->functions[id], *b = key;

	return a->name == b->name && a->system_name == b->system_name && a->filename == b->filename &&
	       a->start_line == b->start_line;
}

static uint32_t fn_hash(const struct cp_function *f)
{
	uint64_t h = cp_hash_u64(((uint64_t)f->name << 32) | f->system_name, 1);

	return (uint32_t)cp_hash_u64(h ^ ((uint64_t)f->filename << 32) ^ (uint64_t)f->start_line, 2);
}

int64_t cp_profile_function(struct cp_profile *p, const struct cp_function *f)
{
	uint32_t h = fn_hash(f), id = p->dups ? UINT32_MAX : cp_index_find(&p->fidx, h, fn_eq, p, f);

	if (id != UINT32_MAX)
		return (int64_t)id + 1;
	if (p->nfunctions == UINT32_MAX - 1)
		return cp_error(EOVERFLOW, "the profile has too many functions (%u)", p->nfunctions);
	if (GROW(p->functions, p->fcap, (size_t)p->nfunctions + 1) ||
	    cp_index_add(&p->fidx, h, p->nfunctions))
		return cp_error(ENOMEM, "out of memory adding a function to the profile");
	p->functions[p->nfunctions] = *f;
	return ++p->nfunctions;
}

/* ---- mappings: pprof's key (size rounded up to 4 KiB, offset, build id or file) ---- */

static uint64_t map_size_key(const struct cp_mapping *m)
{
	uint64_t size = m->limit - m->start;

	size += 0xfff;
	return size - (size % 0x1000);
}

static uint32_t map_ident(const struct cp_mapping *m)
{
	return m->build_id ? m->build_id : m->filename;
}

static int map_eq(const void *ctx, uint32_t id, const void *key)
{
	const struct cp_mapping *a = &((const struct cp_profile *)ctx)->mappings[id], *b = key;

	return map_size_key(a) == map_size_key(b) && a->offset == b->offset && map_ident(a) == map_ident(b);
}

int64_t cp_profile_mapping(struct cp_profile *p, const struct cp_mapping *m)
{
	uint32_t h = (uint32_t)cp_hash_u64(map_size_key(m) ^ cp_hash_u64(m->offset, map_ident(m)), 3);
	uint32_t id = p->dups ? UINT32_MAX : cp_index_find(&p->midx, h, map_eq, p, m);

	if (id != UINT32_MAX)
		return (int64_t)id + 1;
	if (p->nmappings == UINT32_MAX - 1)
		return cp_error(EOVERFLOW, "the profile has too many mappings (%u)", p->nmappings);
	if (GROW(p->mappings, p->mcap, (size_t)p->nmappings + 1) ||
	    cp_index_add(&p->midx, h, p->nmappings))
		return cp_error(ENOMEM, "out of memory adding a mapping to the profile");
	p->mappings[p->nmappings] = *m;
	return ++p->nmappings;
}

/* ---- locations ---- */

struct loc_key {
	uint32_t mapping;
	uint64_t address;
	const struct cp_line *lines;
	size_t nlines;
	bool is_folded;
};

static int loc_eq(const void *ctx, uint32_t id, const void *key)
{
	const struct cp_profile *p = ctx;
	const struct cp_location *a = &p->locations[id];
	const struct loc_key *b = key;
	size_t i;

	if (a->mapping != b->mapping || a->address != b->address || a->nlines != b->nlines ||
	    a->is_folded != b->is_folded)
		return 0;
	for (i = 0; i < b->nlines; i++) {
		const struct cp_line *x = &p->lines[a->line_off + i], *y = &b->lines[i];

		if (x->function != y->function || x->line != y->line || x->column != y->column)
			return 0;
	}
	return 1;
}

static uint64_t loc_hash(const struct loc_key *k)
{
	uint64_t h = cp_hash_u64(k->address, ((uint64_t)k->mapping << 1) | k->is_folded);

	for (size_t i = 0; i < k->nlines; i++)
		h = cp_hash_u64(h ^ k->lines[i].function ^ ((uint64_t)k->lines[i].line << 20) ^
					((uint64_t)k->lines[i].column << 50),
				i);
	return h;
}

int cp_profile_set_lines(struct cp_profile *p, uint32_t id, const struct cp_line *lines, size_t nlines)
{
	struct cp_location *l = &p->locations[id - 1];
	struct loc_key k = { l->mapping, l->address, lines, nlines, l->is_folded };
	uint64_t h = loc_hash(&k);

	if ((uint64_t)p->nlines + nlines > UINT32_MAX)
		return cp_error(EOVERFLOW, "the profile has too many lines (%u)", p->nlines);
	if (GROW(p->lines, p->linecap, (size_t)p->nlines + nlines))
		return cp_error(ENOMEM, "out of memory adding lines to the profile");
	/* found under its new key from now on, unless an equal one is */
	if (cp_index_find(&p->lidx, (uint32_t)h, loc_eq, p, &k) == UINT32_MAX &&
	    cp_index_add(&p->lidx, (uint32_t)h, id - 1))
		return cp_error(ENOMEM, "out of memory adding lines to the profile");
	l->line_off = p->nlines;
	l->nlines = (uint32_t)nlines;
	if (nlines)
		memcpy(p->lines + p->nlines, lines, nlines * sizeof(*lines));
	p->nlines += (uint32_t)nlines;
	return 0;
}

int64_t cp_profile_location(struct cp_profile *p, uint32_t mapping, uint64_t address,
			    const struct cp_line *lines, size_t nlines, bool is_folded)
{
	struct loc_key k = { mapping, address, lines, nlines, is_folded };
	uint64_t h = loc_hash(&k);
	struct cp_location *l;
	uint32_t id;

	id = p->dups ? UINT32_MAX : cp_index_find(&p->lidx, (uint32_t)h, loc_eq, p, &k);
	if (id != UINT32_MAX)
		return (int64_t)id + 1;
	if (p->nlocations == UINT32_MAX - 1 || (uint64_t)p->nlines + nlines > UINT32_MAX)
		return cp_error(EOVERFLOW, "the profile has too many locations or lines (%u locations, %u lines)", p->nlocations, p->nlines);
	if (GROW(p->locations, p->lcap, (size_t)p->nlocations + 1) ||
	    GROW(p->lines, p->linecap, (size_t)p->nlines + nlines) ||
	    cp_index_add(&p->lidx, (uint32_t)h, p->nlocations))
		return cp_error(ENOMEM, "out of memory adding a location to the profile");
	l = &p->locations[p->nlocations];
	l->mapping = mapping;
	l->address = address;
	l->line_off = p->nlines;
	l->nlines = (uint32_t)nlines;
	l->is_folded = is_folded;
	if (nlines)
		memcpy(p->lines + p->nlines, lines, nlines * sizeof(*lines));
	p->nlines += (uint32_t)nlines;
	return ++p->nlocations;
}

/* ---- stacks ---- */

struct span_key {
	const void *items;
	size_t n;
};

static int stack_eq(const void *ctx, uint32_t id, const void *key)
{
	const struct cp_profile *p = ctx;
	const struct span_key *k = key;
	const struct cp_span *s = &p->stacks[id];

	return s->len == k->n && (k->n == 0 || !memcmp(p->stack_locs + s->off, k->items, k->n * sizeof(uint32_t)));
}

int64_t cp_profile_stack(struct cp_profile *p, const uint32_t *locs, size_t n)
{
	struct span_key k = { locs, n };
	uint32_t h = (uint32_t)cp_hash_bytes(locs ? (const void *)locs : "", n * sizeof(*locs), 4);
	uint32_t id = p->dups ? UINT32_MAX : cp_index_find(&p->stidx, h, stack_eq, p, &k);

	if (id != UINT32_MAX)
		return id;
	if (p->nstacks == UINT32_MAX - 1 || p->nstack_locs + n > UINT32_MAX)
		return cp_error(EOVERFLOW, "the profile has too many stacks or frames (%u stacks)", p->nstacks);
	if (GROW(p->stacks, p->stcap, (size_t)p->nstacks + 1) ||
	    GROW(p->stack_locs, p->slcap, p->nstack_locs + n + 1) ||
	    cp_index_add(&p->stidx, h, p->nstacks))
		return cp_error(ENOMEM, "out of memory adding a stack to the profile");
	p->stacks[p->nstacks].off = (uint32_t)p->nstack_locs;
	p->stacks[p->nstacks].len = (uint32_t)n;
	if (n)
		memcpy(p->stack_locs + p->nstack_locs, locs, n * sizeof(*locs));
	p->nstack_locs += n;
	return p->nstacks++;
}

/* ---- label sets ---- */

static int label_cmp(const void *a, const void *b)
{
	const struct cp_label *x = a, *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	if (x->str != y->str)
		return x->str < y->str ? -1 : 1;
	if (x->num != y->num)
		return x->num < y->num ? -1 : 1;
	if (x->num_unit != y->num_unit)
		return x->num_unit < y->num_unit ? -1 : 1;
	return 0;
}

static int labelset_eq(const void *ctx, uint32_t id, const void *key)
{
	const struct cp_profile *p = ctx;
	const struct span_key *k = key;
	const struct cp_span *s = &p->labelsets[id];
	size_t i;

	if (s->len != k->n)
		return 0;
	for (i = 0; i < k->n; i++)
		if (label_cmp(&p->labels[s->off + i], (const struct cp_label *)k->items + i))
			return 0;
	return 1;
}

int64_t cp_profile_labelset(struct cp_profile *p, const struct cp_label *labels, size_t n)
{
	struct cp_label stackbuf[16], *sorted = stackbuf;
	struct span_key k;
	uint64_t h = 5;
	uint32_t id;
	int64_t ret;
	size_t i;

	if (n > 16) {
		sorted = malloc(n * sizeof(*sorted));
		if (!sorted)
			return cp_error(ENOMEM, "out of memory sorting %zu labels", n);
	}
	if (n)
		memcpy(sorted, labels, n * sizeof(*sorted));
	cp_qsort(sorted, n, sizeof(*sorted), label_cmp);
	for (i = 0; i < n; i++)
		h = cp_hash_u64(h ^ ((uint64_t)sorted[i].key << 32 | sorted[i].str) ^
					cp_hash_u64((uint64_t)sorted[i].num, sorted[i].num_unit),
				i);
	k.items = sorted;
	k.n = n;
	id = p->dups ? UINT32_MAX : cp_index_find(&p->lsidx, (uint32_t)h, labelset_eq, p, &k);
	if (id != UINT32_MAX) {
		ret = id;
		goto out;
	}
	if (p->nlabelsets == UINT32_MAX - 1 || p->nlabels + n > UINT32_MAX) {
		ret = -EOVERFLOW;
		goto out;
	}
	if (GROW(p->labelsets, p->lscap, (size_t)p->nlabelsets + 1) ||
	    GROW(p->labels, p->lbcap, p->nlabels + n + 1) ||
	    cp_index_add(&p->lsidx, (uint32_t)h, p->nlabelsets)) {
		ret = -ENOMEM;
		goto out;
	}
	p->labelsets[p->nlabelsets].off = (uint32_t)p->nlabels;
	p->labelsets[p->nlabelsets].len = (uint32_t)n;
	if (n)
		memcpy(p->labels + p->nlabels, sorted, n * sizeof(*sorted));
	p->nlabels += n;
	ret = p->nlabelsets++;
out:
	if (sorted != stackbuf)
		free(sorted);
	return ret;
}

/* ---- header ---- */

int cp_profile_add_sample_type(struct cp_profile *p, const char *type, const char *unit)
{
	int64_t t, u;
	struct cp_valuetype *n;

	if (p->nsamples)
		return cp_error(EBUSY, "cannot add a sample type to a profile that has samples");
	t = cp_profile_str(p, type);
	u = cp_profile_str(p, unit);
	if (t < 0 || u < 0)
		return cp_error(ENOMEM, "out of memory adding the sample type %s/%s", type, unit);
	n = realloc(p->sample_types, (p->ntypes + 1) * sizeof(*n));
	if (!n)
		return cp_error(ENOMEM, "out of memory adding the sample type %s/%s", type, unit);
	p->sample_types = n;
	n[p->ntypes].type = (uint32_t)t;
	n[p->ntypes].unit = (uint32_t)u;
	p->ntypes++;
	return 0;
}

int cp_profile_set_period_type(struct cp_profile *p, const char *type, const char *unit, int64_t period)
{
	int64_t t = cp_profile_str(p, type), u = cp_profile_str(p, unit);

	if (t < 0 || u < 0)
		return cp_error(ENOMEM, "out of memory setting the period type %s/%s", type, unit);
	p->period_type.type = (uint32_t)t;
	p->period_type.unit = (uint32_t)u;
	p->period = period;
	return 0;
}

/* ---- samples ---- */

static int sample_eq(const void *ctx, uint32_t id, const void *key)
{
	const struct cp_sample *a = &((const struct cp_profile *)ctx)->samples[id], *b = key;

	return a->stack == b->stack && a->labels == b->labels;
}

int cp_profile_add_sample(struct cp_profile *p, uint32_t stack, uint32_t labels, const int64_t *values)
{
	struct cp_sample k = { stack, labels };
	uint32_t h = (uint32_t)cp_hash_u64(((uint64_t)stack << 32) | labels, 6);
	uint32_t id = cp_index_find(&p->saidx, h, sample_eq, p, &k);
	int64_t *v;
	size_t i;

	if (stack >= p->nstacks || labels >= p->nlabelsets)
		return cp_error(EINVAL, "sample refers to a missing stack or label set");
	if (id == UINT32_MAX) {
		size_t oldcap = p->sacap;

		if (p->nsamples == UINT32_MAX - 1)
			return cp_error(EOVERFLOW, "the profile has too many samples (%u)", p->nsamples);
		if (GROW(p->samples, p->sacap, (size_t)p->nsamples + 1))
			return cp_error(ENOMEM, "out of memory adding a sample");
		/* values has room for sacap samples: grow it only with samples
		 * (a realloc per sample copies the whole array with some
		 * allocators), and before the index refers to the new sample */
		if (p->ntypes && (p->sacap != oldcap || !p->values)) {
			int64_t *nv = realloc(p->values, p->sacap * p->ntypes * sizeof(*nv));

			if (!nv) {
				p->sacap = oldcap;
				return cp_error(ENOMEM, "out of memory adding a sample");
			}
			p->values = nv;
		}
		if (cp_index_add(&p->saidx, h, p->nsamples))
			return cp_error(ENOMEM, "out of memory adding a sample");
		id = p->nsamples++;
		p->samples[id] = k;
		memset(p->values + (size_t)id * p->ntypes, 0, p->ntypes * sizeof(int64_t));
	}
	v = p->values + (size_t)id * p->ntypes;
	for (i = 0; i < p->ntypes; i++)
		v[i] = (int64_t)((uint64_t)v[i] + (uint64_t)values[i]); /* wraps, never UB */
	return 0;
}

/* ---- sample types ---- */

int cp_profile_sample_index(const struct cp_profile *p, const char *name)
{
	char list[256] = "";
	size_t i, used = 0;
	char *end;

	if (!p->ntypes)
		return cp_error(ENOENT, "the profile has no sample types");
	if (!name || !*name) {
		if (p->default_sample_type)
			for (i = 0; i < p->ntypes; i++)
				if (p->sample_types[i].type == p->default_sample_type)
					return (int)i;
		return (int)p->ntypes - 1;
	}
	errno = 0;
	i = strtoul(name, &end, 10);
	if (!*end && !errno && end != name) {
		if (i < p->ntypes)
			return (int)i;
	}
	for (i = 0; i < p->ntypes; i++) {
		const char *t = cp_profile_string(p, p->sample_types[i].type);
		const char *u = cp_profile_string(p, p->sample_types[i].unit);
		size_t tl = strlen(t);

		if (!strcmp(name, t) || (!strncmp(name, t, tl) && name[tl] == '/' && !strcmp(name + tl + 1, u)))
			return (int)i;
	}
	for (i = 0; i < p->ntypes && used < sizeof(list) - 1; i++)
		used += (size_t)snprintf(list + used, sizeof(list) - used, "%s%s", i ? ", " : "",
					 cp_profile_string(p, p->sample_types[i].type));
	return cp_error(ENOENT, "no sample type '%s' in this profile (it has: %s)", name, list);
}

int64_t cp_profile_total(const struct cp_profile *p, int vidx)
{
	int64_t t = 0;
	uint32_t i;

	for (i = 0; i < p->nsamples; i++)
		t = cp_add_sat(t, cp_profile_values(p, i)[vidx]);
	return t;
}

/* ---- merge ---- */

static int vt_equal(const struct cp_profile *a, struct cp_valuetype x, const struct cp_profile *b,
		    struct cp_valuetype y)
{
	return !strcmp(cp_profile_string(a, x.type), cp_profile_string(b, y.type)) &&
	       !strcmp(cp_profile_string(a, x.unit), cp_profile_string(b, y.unit));
}

static const char *vt_str(const struct cp_profile *p, struct cp_valuetype v, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s", cp_profile_string(p, v.type), cp_profile_string(p, v.unit));
	return buf;
}

int cp_profile_compatible(const struct cp_profile *dst, const struct cp_profile *src)
{
	char a[128], b[128];
	size_t i;

	if (!dst->ntypes)
		return 0;
	if (!vt_equal(dst, dst->period_type, src, src->period_type))
		return cp_error(EINVAL, "incompatible period types %s and %s",
				vt_str(dst, dst->period_type, a, sizeof(a)), vt_str(src, src->period_type, b, sizeof(b)));
	if (dst->ntypes != src->ntypes)
		return cp_error(EINVAL, "incompatible sample types: %zu and %zu values per sample", dst->ntypes,
				src->ntypes);
	for (i = 0; i < dst->ntypes; i++)
		if (!vt_equal(dst, dst->sample_types[i], src, src->sample_types[i]))
			return cp_error(EINVAL, "incompatible sample types %s and %s",
					vt_str(dst, dst->sample_types[i], a, sizeof(a)),
					vt_str(src, src->sample_types[i], b, sizeof(b)));
	return 0;
}

struct merger {
	struct cp_profile *dst;
	const struct cp_profile *src;
	int64_t *strs;     /* src string id -> dst id, -1 unmapped */
	uint32_t *funcs;   /* src function id -> dst id, 0 unmapped */
	uint32_t *maps;    /* src mapping id -> dst id */
	uint64_t *mdelta;  /* address delta dst start - src start */
	uint32_t *locs;    /* src location id -> dst id */
	struct cp_line *lbuf;
	size_t lcap;
};

static int64_t map_str(struct merger *m, uint32_t id)
{
	if (m->strs[id] < 0)
		m->strs[id] = cp_profile_str(m->dst, cp_profile_string(m->src, id));
	return m->strs[id];
}

static int64_t map_function(struct merger *m, uint32_t id)
{
	const struct cp_function *f;
	struct cp_function nf;
	int64_t a, b, c, r;

	if (!id || m->funcs[id])
		return m->funcs[id];
	f = &m->src->functions[id - 1];
	a = map_str(m, f->name);
	b = map_str(m, f->system_name);
	c = map_str(m, f->filename);
	if (a < 0 || b < 0 || c < 0)
		return cp_error(ENOMEM, "out of memory merging functions");
	nf.name = (uint32_t)a;
	nf.system_name = (uint32_t)b;
	nf.filename = (uint32_t)c;
	nf.start_line = f->start_line;
	r = cp_profile_function(m->dst, &nf);
	if (r > 0)
		m->funcs[id] = (uint32_t)r;
	return r;
}

static int64_t map_mapping(struct merger *m, uint32_t id)
{
	struct cp_mapping nm;
	int64_t a, b, r;

	if (!id || m->maps[id])
		return m->maps[id];
	nm = m->src->mappings[id - 1];
	a = map_str(m, nm.filename);
	b = map_str(m, nm.build_id);
	if (a < 0 || b < 0)
		return cp_error(ENOMEM, "out of memory merging mappings");
	nm.filename = (uint32_t)a;
	nm.build_id = (uint32_t)b;
	r = cp_profile_mapping(m->dst, &nm);
	if (r > 0) {
		m->maps[id] = (uint32_t)r;
		m->mdelta[id] = m->dst->mappings[r - 1].start - nm.start;
	}
	return r;
}

static int64_t map_location(struct merger *m, uint32_t id)
{
	const struct cp_location *l;
	int64_t mid, r;
	uint32_t i;

	if (m->locs[id])
		return m->locs[id];
	l = &m->src->locations[id - 1];
	mid = map_mapping(m, l->mapping);
	if (mid < 0)
		return mid;
	if (cp_grow((void **)&m->lbuf, &m->lcap, l->nlines + 1, sizeof(*m->lbuf)))
		return cp_error(ENOMEM, "out of memory merging locations");
	for (i = 0; i < l->nlines; i++) {
		const struct cp_line *sl = &m->src->lines[l->line_off + i];
		int64_t f = map_function(m, sl->function);

		if (f < 0)
			return f;
		m->lbuf[i].function = (uint32_t)f;
		m->lbuf[i].line = sl->line;
		m->lbuf[i].column = sl->column;
	}
	r = cp_profile_location(m->dst, (uint32_t)mid, l->address + (l->mapping ? m->mdelta[l->mapping] : 0),
				m->lbuf, l->nlines, l->is_folded);
	if (r > 0)
		m->locs[id] = (uint32_t)r;
	return r;
}


/* a merger from src into dst: 0 or -ENOMEM (nothing to free then) */
static void merger_free(struct merger *m);
static int merger_init(struct merger *m, struct cp_profile *dst, const struct cp_profile *src)
{
	memset(m, 0, sizeof(*m));
	m->dst = dst;
	m->src = src;
	m->strs = malloc(((size_t)src->strs.n + 1) * sizeof(*m->strs));
	m->funcs = calloc((size_t)src->nfunctions + 1, sizeof(*m->funcs));
	m->maps = calloc((size_t)src->nmappings + 1, sizeof(*m->maps));
	m->mdelta = calloc((size_t)src->nmappings + 1, sizeof(*m->mdelta));
	m->locs = calloc((size_t)src->nlocations + 1, sizeof(*m->locs));
	if (!m->strs || !m->funcs || !m->maps || !m->mdelta || !m->locs) {
		merger_free(m);
		return cp_error(ENOMEM, "out of memory mapping one profile into another");
	}
	memset(m->strs, 0xff, ((size_t)src->strs.n + 1) * sizeof(*m->strs));
	m->strs[0] = 0;
	return 0;
}

static void merger_free(struct merger *m)
{
	free(m->strs);
	free(m->funcs);
	free(m->maps);
	free(m->mdelta);
	free(m->locs);
	free(m->lbuf);
	memset(m, 0, sizeof(*m));
}

int cp_profile_import_locations(struct cp_profile *dst, const struct cp_profile *src, uint32_t *locs, size_t n)
{
	struct merger m;
	int err = merger_init(&m, dst, src);

	for (size_t i = 0; i < n && !err; i++) {
		int64_t l = locs[i] && locs[i] <= src->nlocations ? map_location(&m, locs[i]) : 0;

		if (l < 0)
			err = (int)l;
		else
			locs[i] = (uint32_t)l;
	}
	merger_free(&m);
	return err == -ENOMEM ? cp_error(ENOMEM, "out of memory carrying locations into a new profile") : err;
}

/* string id c among p's comments, once: 0 or -ENOMEM */
static int comment_add(struct cp_profile *p, uint32_t c)
{
	uint32_t *nc;

	for (size_t j = 0; j < p->ncomments; j++)
		if (p->comments[j] == c)
			return 0;
	if (!(nc = realloc(p->comments, (p->ncomments + 1) * sizeof(*nc))))
		return cp_error(ENOMEM, "out of memory adding a comment");
	p->comments = nc;
	nc[p->ncomments++] = c;
	return 0;
}

static int merge_header(struct cp_profile *dst, const struct cp_profile *src, struct merger *m)
{
	size_t i;

	if (!dst->ntypes) {
		for (i = 0; i < src->ntypes; i++) {
			int err = cp_profile_add_sample_type(dst, cp_profile_string(src, src->sample_types[i].type),
							     cp_profile_string(src, src->sample_types[i].unit));
			if (err)
				return err;
		}
		if (cp_profile_set_period_type(dst, cp_profile_string(src, src->period_type.type),
					       cp_profile_string(src, src->period_type.unit), src->period))
			return cp_error(ENOMEM, "out of memory merging the profile header");
		if (map_str(m, src->default_sample_type) < 0 || map_str(m, src->drop_frames) < 0 ||
		    map_str(m, src->keep_frames) < 0 || map_str(m, src->doc_url) < 0)
			return cp_error(ENOMEM, "out of memory merging the profile header");
		dst->default_sample_type = (uint32_t)m->strs[src->default_sample_type];
		dst->drop_frames = (uint32_t)m->strs[src->drop_frames];
		dst->keep_frames = (uint32_t)m->strs[src->keep_frames];
		dst->doc_url = (uint32_t)m->strs[src->doc_url];
		dst->time_nanos = src->time_nanos;
		dst->duration_nanos = src->duration_nanos;
	} else {
		if (src->period > dst->period)
			dst->period = src->period;
		if (src->time_nanos && (!dst->time_nanos || src->time_nanos < dst->time_nanos))
			dst->time_nanos = src->time_nanos;
		dst->duration_nanos += src->duration_nanos;
	}
	for (i = 0; i < src->ncomments; i++) {
		int64_t c = map_str(m, src->comments[i]);

		if (c < 0 || comment_add(dst, (uint32_t)c))
			return cp_error(ENOMEM, "out of memory merging comments");
	}
	return 0;
}

int cp_profile_add_comment(struct cp_profile *p, const char *text)
{
	int64_t c = cp_profile_str(p, text);

	if (c < 0 || comment_add(p, (uint32_t)c))
		return cp_error(ENOMEM, "out of memory adding a comment");
	return 0;
}

int cp_profile_merge(struct cp_profile *dst, const struct cp_profile *src, const struct cp_merge_opts *opts)
{
	struct cp_merge_opts none = { 0 };
	struct merger m;
	uint32_t *lbuf = NULL, tagk = 0, tagv = 0, drop[8], ndrop = 0;
	struct cp_label *labbuf = NULL;
	int64_t *vals = NULL;
	size_t lcap = 0, labcap = 0, i, j;
	double scale;
	bool dict;
	uint32_t s;
	int err;

	if (!opts)
		opts = &none;
	scale = opts->scale ? opts->scale : 1.0;
	dict = opts->out_stack != NULL;
	err = dict ? 0 : cp_profile_compatible(dst, src);
	if (err)
		return err;
	if ((err = merger_init(&m, dst, src)))
		return err;
	err = -ENOMEM;
	if (!(vals = calloc(src->ntypes + 1, sizeof(*vals))))
		goto out;
	err = dict ? 0 : merge_header(dst, src, &m);
	if (err)
		goto out;
	if (opts->tag_key) {
		int64_t k = cp_profile_str(dst, opts->tag_key), v = cp_profile_str(dst, opts->tag_value);

		if (k < 0 || v < 0)
			goto out;
		tagk = (uint32_t)k;
		tagv = (uint32_t)v;
	}
	for (i = 0; i < opts->ndrop && i < 8; i++) {
		int64_t k = cp_strtab_find(&src->strs, opts->drop_keys[i], strlen(opts->drop_keys[i]));

		drop[ndrop] = k > 0 ? (uint32_t)k : 0;
		ndrop += k > 0;
	}
	for (s = 0; s < src->nsamples; s++) {
		const struct cp_sample *smp = &src->samples[s];
		const struct cp_span *st = &src->stacks[smp->stack];
		const struct cp_span *ls = &src->labelsets[smp->labels];
		const int64_t *sv = cp_profile_values(src, s);
		int64_t stack, labels;
		bool nonzero = false;

		if (dict)
			opts->out_stack[s] = opts->out_labels[s] = UINT32_MAX;
		if (opts->keep && !opts->keep(src, s, opts->keep_arg))
			continue;
		for (i = 0; i < src->ntypes; i++) {
			vals[i] = scale == 1.0 ? sv[i] : (int64_t)llround((double)sv[i] * scale);
			nonzero |= vals[i] != 0;
		}
		if (!nonzero)
			continue;
		err = -ENOMEM;
		if (cp_grow((void **)&lbuf, &lcap, st->len + 1, sizeof(*lbuf)) ||
		    cp_grow((void **)&labbuf, &labcap, ls->len + 2, sizeof(*labbuf)))
			goto out;
		for (i = 0; i < st->len; i++) {
			int64_t l = map_location(&m, src->stack_locs[st->off + i]);

			if (l < 0) {
				err = (int)l;
				goto out;
			}
			lbuf[i] = (uint32_t)l;
		}
		for (i = 0, j = 0; j < ls->len; j++) {
			const struct cp_label *sl = &src->labels[ls->off + j];
			int64_t k, v, u;
			uint32_t d;

			for (d = 0; d < ndrop && sl->key != drop[d]; d++)
				;
			if (d < ndrop)
				continue;
			k = map_str(&m, sl->key);
			v = map_str(&m, sl->str);
			u = map_str(&m, sl->num_unit);
			if (k < 0 || v < 0 || u < 0)
				goto out;
			labbuf[i].key = (uint32_t)k;
			labbuf[i].str = (uint32_t)v;
			labbuf[i].num = sl->num;
			labbuf[i].num_unit = (uint32_t)u;
			i++;
		}
		if (opts->tag_key) {
			labbuf[i].key = tagk;
			labbuf[i].str = tagv;
			labbuf[i].num = 0;
			labbuf[i].num_unit = 0;
			i++;
		}
		stack = cp_profile_stack(dst, lbuf, st->len);
		labels = cp_profile_labelset(dst, labbuf, i);
		if (stack < 0 || labels < 0) {
			err = (int)(stack < 0 ? stack : labels);
			goto out;
		}
		if (dict) {
			opts->out_stack[s] = (uint32_t)stack;
			opts->out_labels[s] = (uint32_t)labels;
			continue;
		}
		err = cp_profile_add_sample(dst, (uint32_t)stack, (uint32_t)labels, vals);
		if (err)
			goto out;
	}
	err = 0;
out:
	if (err == -ENOMEM)
		cp_error(ENOMEM, "out of memory while merging profiles");
	merger_free(&m);
	free(lbuf);
	free(labbuf);
	free(vals);
	return err;
}

struct cp_profile *cp_profile_copy(const struct cp_profile *src, const struct cp_merge_opts *opts)
{
	struct cp_profile *p = cp_profile_new();
	int err;

	if (!p)
		return NULL;
	err = cp_profile_merge(p, src, opts);
	if (err) {
		cp_profile_free(p);
		errno = -err;
		return NULL;
	}
	return p;
}

void cp_profile_clear_samples(struct cp_profile *p)
{
	free(p->samples);
	free(p->values);
	free(p->sample_types);
	cp_index_release(&p->saidx);
	p->samples = NULL;
	p->values = NULL;
	p->sample_types = NULL;
	p->nsamples = 0;
	p->sacap = 0;
	p->ntypes = 0;
	p->period = p->time_nanos = p->duration_nanos = 0;
	p->default_sample_type = 0;
	memset(&p->period_type, 0, sizeof(p->period_type));
}

int cp_profile_keep_types(struct cp_profile *p, const bool *keep)
{
	size_t i, t, k = 0, nt = 0;

	for (t = 0; t < p->ntypes; t++)
		nt += keep[t];
	if (!nt)
		return cp_error(EINVAL, "no sample type would be left");
	if (nt == p->ntypes)
		return 0;
	/* values[i * ntypes + t] -> values[i * nt + k], in place: the new
	 * index never passes the old one */
	for (i = 0; i < p->nsamples; i++)
		for (t = 0; t < p->ntypes; t++)
			if (keep[t])
				p->values[k++] = p->values[i * p->ntypes + t];
	for (t = 0, k = 0; t < p->ntypes; t++)
		if (keep[t])
			p->sample_types[k++] = p->sample_types[t];
	p->ntypes = nt;
	return 0;
}

/* ---- frames ---- */

int cp_profile_frames(const struct cp_profile *p, uint32_t stack, struct cp_frame **frames, size_t *cap)
{
	const struct cp_span *st = &p->stacks[stack];
	size_t n = 0, i;
	uint32_t j;

	for (i = 0; i < st->len; i++) {
		uint32_t lid = p->stack_locs[st->off + i];
		const struct cp_location *l = cp_profile_loc(p, lid);
		uint32_t nl = l->nlines ? l->nlines : 1;

		if (cp_grow((void **)frames, cap, n + nl, sizeof(**frames)))
			return cp_error(ENOMEM, "out of memory listing the frames of a stack");
		for (j = 0; j < nl; j++) {
			struct cp_frame *f = &(*frames)[n++];

			f->location = lid;
			f->inlined = j + 1 < l->nlines;
			if (l->nlines && p->lines[l->line_off + j].function) {
				const struct cp_line *ln = &p->lines[l->line_off + j];
				const struct cp_function *fn = &p->functions[ln->function - 1];

				f->name = fn->name;
				f->filename = fn->filename;
				f->line = ln->line;
			} else {
				f->name = 0;
				f->filename = 0;
				f->line = 0;
			}
		}
	}
	return (int)n;
}

const char *cp_frame_name(const struct cp_profile *p, const struct cp_frame *f, char *buf, size_t len)
{
	const struct cp_location *l;

	if (f->name)
		return cp_profile_string(p, f->name);
	l = cp_profile_loc(p, f->location);
	if (l->mapping) {
		const struct cp_mapping *m = &p->mappings[l->mapping - 1];
		const char *file = cp_profile_string(p, m->filename), *base = strrchr(file, '/');

		base = base ? base + 1 : file;
		if (*base) {
			snprintf(buf, len, "%s+0x%" PRIx64, base, l->address - m->start + m->offset);
			return buf;
		}
	}
	snprintf(buf, len, "0x%" PRIx64, l->address);
	return buf;
}

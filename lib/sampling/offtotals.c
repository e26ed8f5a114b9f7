/* SPDX-License-Identifier: MIT */
/* Off-CPU: each thread's exact total of waits, and the correction of the
 * sampled values to it (offtotals.h). */
#include "offtotals.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "../index.h"
#include "../profile.h"

#define SLOTS_BITS 13
#define PROBES 16

struct slot {
	uint32_t tid;
	bool used;
	double sampled;
	uint64_t exact;
};

struct cp_offtotals {
	struct slot *s;
	size_t used;
};

struct cp_offtotals *cp_offtotals_new(void)
{
	struct cp_offtotals *t = calloc(1, sizeof(*t));

	if (t && !(t->s = calloc((size_t)1 << SLOTS_BITS, sizeof(*t->s)))) {
		free(t);
		t = NULL;
	}
	return t;
}

void cp_offtotals_free(struct cp_offtotals *t)
{
	if (!t)
		return;
	free(t->s);
	free(t);
}

static struct slot *find(const struct cp_offtotals *t, uint32_t tid, bool make)
{
	uint32_t mask = (1u << SLOTS_BITS) - 1, h = (uint32_t)cp_hash_u64(tid, 0) & mask;

	for (uint32_t i = 0; i < PROBES; i++) {
		struct slot *s = &t->s[(h + i) & mask];

		if (s->used && s->tid == tid)
			return s;
		if (!s->used)
			return make ? s : NULL;
	}
	return NULL;
}

void cp_offtotals_add(struct cp_offtotals *t, uint32_t tid, double sampled, uint64_t exact)
{
	struct slot *s = find(t, tid, true);

	if (!s)
		return;
	if (!s->used) {
		s->used = true;
		s->tid = tid;
		t->used++;
	}
	s->sampled += sampled;
	s->exact += exact;
}

void cp_offtotals_clear(struct cp_offtotals *t)
{
	if (t->used)
		memset(t->s, 0, ((size_t)1 << SLOTS_BITS) * sizeof(*t->s));
	t->used = 0;
}

/* the thread of label set ls, 0 when it has no thread_id */
static uint32_t thread_of(const struct cp_profile *p, uint32_t ls, int64_t key)
{
	const struct cp_span *sp = &p->labelsets[ls];

	for (uint32_t i = 0; i < sp->len; i++) {
		const struct cp_label *l = &p->labels[sp->off + i];

		if (l->key == (uint32_t)key && l->str) {
			const char *v = cp_profile_string(p, l->str);
			char *end;
			unsigned long tid = strtoul(v, &end, 10);

			return *v && !*end && tid <= UINT32_MAX ? (uint32_t)tid : 0;
		}
	}
	return 0;
}

int cp_offtotals_scale(const struct cp_offtotals *t, struct cp_profile *p, size_t col, size_t wall_col)
{
	int64_t key;

	if (!t->used || !p->nsamples || col >= p->ntypes)
		return 0;
	if ((key = cp_profile_str(p, "thread_id")) < 0)
		return (int)key;
	for (uint32_t i = 0; i < p->nsamples; i++) {
		int64_t *v = &p->values[(size_t)i * p->ntypes];
		uint32_t tid;
		const struct slot *s;
		double f;

		if (!v[col] || !(tid = thread_of(p, p->samples[i].labels, key)) || !(s = find(t, tid, false)) ||
		    s->sampled <= 0)
			continue;
		f = (double)s->exact / s->sampled;
		v[col] = llround((double)v[col] * f);
		if (wall_col < p->ntypes)
			v[wall_col] = v[col];
	}
	return 0;
}

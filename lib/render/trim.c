/* SPDX-License-Identifier: MIT */
#include "trim.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "../error.h"
#include "../index.h"
#include "../util.h"

/* a node of the call tree by function: its parent node (0: the root) and its function key */
struct tnode {
	uint32_t parent;
	uint64_t key; /* a function id, or 1 << 63 | a location id for a location without lines */
	int64_t total;
};

struct trie {
	struct tnode *n; /* n[0] is the root */
	size_t len, cap;
	struct cp_index idx;
};

static int tnode_eq(const void *ctx, uint32_t id, const void *key)
{
	const struct tnode *a = &((const struct trie *)ctx)->n[id], *b = key;

	return a->parent == b->parent && a->key == b->key;
}

/* the child of parent for key, made when new (with add) */
static int child(struct trie *t, uint32_t parent, uint64_t key, bool add, uint32_t *out)
{
	struct tnode k = { parent, key, 0 };
	uint32_t h = (uint32_t)cp_hash_u64(key ^ ((uint64_t)parent << 40) ^ parent, 17);
	uint32_t id = cp_index_find(&t->idx, h, tnode_eq, t, &k);

	if (id == UINT32_MAX) {
		if (!add) /* the first pass added every node: a miss is a bug */
			return cp_error(EINVAL, "cutting the call tree: a node the first pass added is missing");
		if (t->len >= UINT32_MAX)
			return cp_error(EOVERFLOW, "the call tree is too large to cut");
		if (cp_grow((void **)&t->n, &t->cap, t->len + 1, sizeof(*t->n)) ||
		    cp_index_add(&t->idx, h, (uint32_t)t->len))
			return cp_error(ENOMEM, "out of memory cutting the profile's nodes");
		t->n[id = (uint32_t)t->len++] = k;
	}
	*out = id;
	return 0;
}

/* Walks the stack of sample s from the root: with add, adds v to each node's total; else counts
 * in *keep the root-side locations whose every node has a total of at least min (a location is
 * kept while a node of it is). */
static int walk(struct trie *t, const struct cp_profile *p, uint32_t s, int64_t v, bool add, int64_t min,
		size_t *keep)
{
	const struct cp_span *st = &p->stacks[p->samples[s].stack];
	uint32_t node = 0, id = 0;
	int err;

	*keep = st->len;
	for (size_t i = st->len; i-- > 0;) {
		uint32_t loc = p->stack_locs[st->off + i];
		const struct cp_location *l = cp_profile_loc(p, loc);
		bool cut = false;

		for (uint32_t j = l->nlines ? l->nlines : 1; j-- > 0;) {
			uint64_t key = l->nlines ? p->lines[l->line_off + j].function : (1ULL << 63) | loc;

			if ((err = child(t, node, key, add, &id)))
				return err;
			node = id;
			if (add)
				t->n[node].total = cp_add_sat(t->n[node].total, v);
			else if (t->n[node].total < min && j + 1 == (l->nlines ? l->nlines : 1))
				cut = true; /* its outermost node is cut: so is the location */
		}
		if (cut) {
			*keep = st->len - 1 - i;
			return 0;
		}
	}
	return 0;
}

static int cmp_desc(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? 1 : x > y ? -1 : 0;
}

int cp_profile_trim_nodes(const struct cp_profile *src, int vidx, int64_t max_nodes, struct cp_profile **out)
{
	struct trie t = { 0 };
	struct cp_profile *w = NULL;
	int64_t *totals = NULL, min = 0;
	uint32_t *locs = NULL;
	size_t cap = 0;
	int err = 0;

	*out = NULL;
	if (!(w = cp_profile_copy(src, NULL)))
		return cp_error(errno ? errno : ENOMEM, "out of memory cutting the profile's nodes");
	if (max_nodes <= 0 || vidx < 0 || (size_t)vidx >= w->ntypes || !w->nsamples)
		goto done;
	if (cp_grow((void **)&t.n, &t.cap, 1, sizeof(*t.n))) {
		err = cp_error(ENOMEM, "out of memory cutting the profile's nodes");
		goto done;
	}
	t.n[t.len++] = (struct tnode){ 0, 0, 0 };
	for (uint32_t s = 0; !err && s < w->nsamples; s++) {
		size_t unused;

		err = walk(&t, w, s, cp_profile_values(w, s)[vidx], true, 0, &unused);
	}
	if (err || t.len - 1 <= (uint64_t)max_nodes)
		goto done;
	if (!(totals = malloc((t.len - 1) * sizeof(*totals)))) {
		err = cp_error(ENOMEM, "out of memory cutting the profile's nodes");
		goto done;
	}
	for (size_t i = 1; i < t.len; i++)
		totals[i - 1] = t.n[i].total;
	qsort(totals, t.len - 1, sizeof(*totals), cmp_desc);
	if ((min = totals[max_nodes - 1]) <= 0)
		goto done; /* (as Pyroscope: no cut under a minimum of 0) */
	{
		struct cp_function f = { 0 };
		struct cp_line ln = { 0 };
		int64_t name = cp_profile_str(w, "other"), fn, other;

		f.name = f.system_name = (uint32_t)(name < 0 ? 0 : name);
		if (name < 0 || (fn = cp_profile_function(w, &f)) < 0) {
			err = cp_error(ENOMEM, "out of memory cutting the profile's nodes");
			goto done;
		}
		ln.function = (uint32_t)fn;
		if ((other = cp_profile_location(w, 0, 0, &ln, 1, false)) < 0) {
			err = (int)other;
			goto done;
		}
		for (uint32_t s = 0; !err && s < w->nsamples; s++) {
			uint32_t len = w->stacks[w->samples[s].stack].len, off = w->stacks[w->samples[s].stack].off;
			size_t keep;
			int64_t id;

			if ((err = walk(&t, w, s, 0, false, min, &keep)) || keep == len)
				continue;
			if (cp_grow((void **)&locs, &cap, keep + 1, sizeof(*locs))) {
				err = cp_error(ENOMEM, "out of memory cutting the profile's nodes");
				break;
			}
			/* leaf first: "other", then the kept root-side locations */
			locs[0] = (uint32_t)other;
			memcpy(locs + 1, w->stack_locs + off + (len - keep), keep * sizeof(*locs));
			if ((id = cp_profile_stack(w, locs, keep + 1)) < 0)
				err = (int)id;
			else
				w->samples[s].stack = (uint32_t)id;
		}
	}
done:
	if (!err) { /* (a copy sums the samples that now have the same stack, and keeps what they use) */
		if (!(*out = cp_profile_copy(w, NULL)))
			err = cp_error(errno ? errno : ENOMEM, "out of memory cutting the profile's nodes");
	}
	cp_profile_free(w);
	cp_index_release(&t.idx);
	free(t.n);
	free(totals);
	free(locs);
	return err;
}

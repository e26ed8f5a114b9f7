/* SPDX-License-Identifier: MIT */
#include "tree.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../error.h"
#include "../util.h"

/* Per-profile cache: profile string id -> name id in an aggregation's table. */
struct name_cache {
	int64_t *ids;
	struct cp_frame *frames;
	size_t fcap;
};

static int cache_init(struct name_cache *c, const struct cp_profile *p)
{
	memset(c, 0, sizeof(*c));
	c->ids = malloc(((size_t)p->strs.n + 1) * sizeof(*c->ids));
	if (!c->ids)
		return cp_error(ENOMEM, "out of memory building the call tree");
	memset(c->ids, 0xff, ((size_t)p->strs.n + 1) * sizeof(*c->ids));
	return 0;
}

static void cache_release(struct name_cache *c)
{
	free(c->ids);
	free(c->frames);
}

static int64_t frame_name(struct name_cache *c, struct cp_strtab *names, const struct cp_profile *p,
			  const struct cp_frame *f)
{
	char buf[128];
	const char *s;

	if (f->name && c->ids[f->name] >= 0)
		return c->ids[f->name];
	s = cp_frame_name(p, f, buf, sizeof(buf));
	if (!f->name)
		return cp_strtab_intern(names, s, strlen(s));
	return c->ids[f->name] = cp_strtab_intern(names, s, strlen(s));
}

/* ---- call tree ---- */

struct node_key {
	uint32_t parent, name;
};

static int node_eq(const void *ctx, uint32_t id, const void *key)
{
	const struct cp_tree_node *n = &((const struct cp_tree *)ctx)->nodes[id];
	const struct node_key *k = key;

	return n->parent == k->parent && n->name == k->name && id != 0;
}

struct cp_tree *cp_tree_new(void)
{
	struct cp_tree *t = calloc(1, sizeof(*t));
	size_t cap = 0;

	if (!t || cp_strtab_init(&t->names) || cp_grow((void **)&t->nodes, &cap, 64, sizeof(*t->nodes))) {
		cp_tree_free(t);
		errno = ENOMEM;
		return NULL;
	}
	t->cap = (uint32_t)cap;
	memset(&t->nodes[0], 0, sizeof(t->nodes[0]));
	t->nnodes = 1;
	return t;
}

void cp_tree_free(struct cp_tree *t)
{
	if (!t)
		return;
	cp_strtab_release(&t->names);
	free(t->nodes);
	cp_index_release(&t->idx);
	free(t);
}

static uint32_t node_hash(uint32_t parent, uint32_t name)
{
	return (uint32_t)cp_hash_u64(((uint64_t)parent << 32) | name, 7);
}

int64_t cp_tree_find(const struct cp_tree *t, uint32_t parent, const char *name)
{
	int64_t id = cp_strtab_find(&t->names, name, strlen(name));
	struct node_key k = { parent, (uint32_t)id };
	uint32_t node;

	if (id < 0)
		return -1;
	node = cp_index_find(&t->idx, node_hash(parent, k.name), node_eq, t, &k);
	return node == UINT32_MAX ? -1 : (int64_t)node;
}

static int64_t child(struct cp_tree *t, uint32_t parent, uint32_t name)
{
	struct node_key k = { parent, name };
	uint32_t h = node_hash(parent, name);
	uint32_t id = cp_index_find(&t->idx, h, node_eq, t, &k);
	struct cp_tree_node *n;
	size_t cap = t->cap;

	if (id != UINT32_MAX)
		return id;
	if (t->nnodes == UINT32_MAX - 1)
		return cp_error(EOVERFLOW, "the call tree has more than %u nodes", UINT32_MAX - 1);
	if (cp_grow((void **)&t->nodes, &cap, (size_t)t->nnodes + 1, sizeof(*t->nodes)) ||
	    cp_index_add(&t->idx, h, t->nnodes))
		return cp_error(ENOMEM, "out of memory building the call tree");
	t->cap = (uint32_t)cap;
	n = &t->nodes[t->nnodes];
	memset(n, 0, sizeof(*n));
	n->name = name;
	n->parent = parent;
	n->depth = t->nodes[parent].depth + 1;
	n->sibling = t->nodes[parent].child;
	t->nodes[parent].child = t->nnodes;
	if (n->depth > t->max_depth)
		t->max_depth = n->depth;
	return t->nnodes++;
}

int cp_tree_add(struct cp_tree *t, const struct cp_profile *p, int vidx, int side, bool invert)
{
	struct name_cache c;
	uint32_t s;
	int err = cache_init(&c, p);

	for (s = 0; !err && s < p->nsamples; s++) {
		int64_t v = cp_profile_values(p, s)[vidx];
		int n = cp_profile_frames(p, p->samples[s].stack, &c.frames, &c.fcap), i;
		uint32_t node = 0;

		if (n < 0) {
			err = n;
			break;
		}
		if (!v)
			continue;
		t->nodes[0].total[side] = cp_add_sat(t->nodes[0].total[side], v);
		for (i = 0; i < n; i++) {
			const struct cp_frame *f = &c.frames[invert ? i : n - 1 - i];
			int64_t name = frame_name(&c, &t->names, p, f), id;

			if (name < 0 || (id = child(t, node, (uint32_t)name)) < 0) {
				err = -ENOMEM;
				break;
			}
			node = (uint32_t)id;
			t->nodes[node].total[side] = cp_add_sat(t->nodes[node].total[side], v);
		}
		t->nodes[node].self[side] = cp_add_sat(t->nodes[node].self[side], v);
	}
	cache_release(&c);
	return err;
}

static int by_parent_name(const void *a, const void *b, void *arg)
{
	const struct cp_tree *t = arg;
	const struct cp_tree_node *x = &t->nodes[*(const uint32_t *)a], *y = &t->nodes[*(const uint32_t *)b];

	if (x->parent != y->parent)
		return x->parent < y->parent ? -1 : 1;
	return strcmp(cp_strtab_get(&t->names, x->name), cp_strtab_get(&t->names, y->name));
}

int cp_tree_sort(struct cp_tree *t)
{
	uint32_t *order, i;

	if (t->nnodes < 2)
		return 0;
	order = malloc(((size_t)t->nnodes - 1) * sizeof(*order));
	if (!order)
		return cp_error(ENOMEM, "out of memory sorting the call tree");
	for (i = 1; i < t->nnodes; i++)
		order[i - 1] = i;
	cp_qsort_r(order, t->nnodes - 1, sizeof(*order), by_parent_name, t);
	for (i = 0; i < t->nnodes; i++)
		t->nodes[i].child = 0;
	/* walk backwards so each prepend leaves the children in order */
	for (i = t->nnodes - 1; i > 0; i--) {
		struct cp_tree_node *n = &t->nodes[order[i - 1]];

		n->sibling = t->nodes[n->parent].child;
		t->nodes[n->parent].child = order[i - 1];
	}
	free(order);
	return 0;
}

/* ---- function table ---- */

static int row_eq(const void *ctx, uint32_t id, const void *key)
{
	return ((const struct cp_fn_table *)ctx)->rows[id].name == *(const uint32_t *)key;
}

struct cp_fn_table *cp_fn_table_new(void)
{
	struct cp_fn_table *t = calloc(1, sizeof(*t));

	if (!t || cp_strtab_init(&t->names)) {
		cp_fn_table_free(t);
		errno = ENOMEM;
		return NULL;
	}
	return t;
}

void cp_fn_table_free(struct cp_fn_table *t)
{
	if (!t)
		return;
	cp_strtab_release(&t->names);
	free(t->rows);
	cp_index_release(&t->idx);
	free(t);
}

static int64_t row(struct cp_fn_table *t, uint32_t name, uint32_t file)
{
	uint32_t h = (uint32_t)cp_hash_u64(name, 8), id = cp_index_find(&t->idx, h, row_eq, t, &name);
	size_t cap = t->cap;

	if (id != UINT32_MAX)
		return id;
	if (cp_grow((void **)&t->rows, &cap, (size_t)t->nrows + 1, sizeof(*t->rows)) ||
	    cp_index_add(&t->idx, h, t->nrows))
		return cp_error(ENOMEM, "out of memory building the function table");
	t->cap = (uint32_t)cap;
	memset(&t->rows[t->nrows], 0, sizeof(t->rows[0]));
	t->rows[t->nrows].name = name;
	t->rows[t->nrows].file = file;
	return t->nrows++;
}

int64_t cp_fn_table_find(const struct cp_fn_table *t, const char *name)
{
	int64_t id = cp_strtab_find(&t->names, name, strlen(name));
	uint32_t key, row;

	if (id < 0)
		return -1;
	key = (uint32_t)id;
	row = cp_index_find(&t->idx, (uint32_t)cp_hash_u64(key, 8), row_eq, t, &key);
	return row == UINT32_MAX ? -1 : (int64_t)row;
}

int cp_fn_table_add(struct cp_fn_table *t, const struct cp_profile *p, int vidx, int side)
{
	struct name_cache c;
	uint32_t *seen = NULL, s;
	size_t seencap = 0;
	int err = cache_init(&c, p);

	for (s = 0; !err && s < p->nsamples; s++) {
		int64_t v = cp_profile_values(p, s)[vidx];
		int n = cp_profile_frames(p, p->samples[s].stack, &c.frames, &c.fcap), i, j, nseen = 0;

		if (n < 0) {
			err = n;
			break;
		}
		if (!v)
			continue;
		t->total[side] = cp_add_sat(t->total[side], v);
		if (cp_grow((void **)&seen, &seencap, (size_t)n + 1, sizeof(*seen))) {
			err = -ENOMEM;
			break;
		}
		for (i = 0; i < n; i++) {
			const struct cp_frame *f = &c.frames[i];
			int64_t name = frame_name(&c, &t->names, p, f), file, r;

			file = cp_strtab_intern(&t->names, cp_profile_string(p, f->filename),
						strlen(cp_profile_string(p, f->filename)));
			if (name < 0 || file < 0 || (r = row(t, (uint32_t)name, (uint32_t)file)) < 0) {
				err = -ENOMEM;
				break;
			}
			if (i == 0)
				t->rows[r].flat[side] = cp_add_sat(t->rows[r].flat[side], v);
			for (j = 0; j < nseen && seen[j] != (uint32_t)r; j++)
				;
			if (j == nseen) {
				seen[nseen++] = (uint32_t)r;
				t->rows[r].cum[side] = cp_add_sat(t->rows[r].cum[side], v);
			}
		}
	}
	free(seen);
	cache_release(&c);
	return err;
}

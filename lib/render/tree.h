/* SPDX-License-Identifier: MIT */
/* Aggregations the renderers share: a call tree (root to leaf, by frame
 * name) and a per-function table (flat and cum).  Each holds two sides of
 * values so the same structures serve one profile (side 0) and a diff
 * (side 0 = before, side 1 = after).  Names are interned in the
 * aggregation's own string table, so profiles with different string tables
 * can be combined. */
#ifndef CP_RENDER_TREE_H
#define CP_RENDER_TREE_H

#include <stdbool.h>
#include <stdint.h>

#include "../profile.h"
#include "../strtab.h"

struct cp_tree_node {
	uint32_t name;   /* string id in tree->names; the root's is 0 ("") */
	uint32_t parent; /* node id; the root (node 0) is its own parent */
	uint32_t child;  /* first child, 0 = none */
	uint32_t sibling; /* next sibling, 0 = none */
	uint32_t depth;  /* root = 0 */
	int64_t total[2], self[2];
};

struct cp_tree {
	struct cp_strtab names;
	struct cp_tree_node *nodes; /* nodes[0] is the root */
	uint32_t nnodes, cap;
	struct cp_index idx; /* (parent, name) -> node */
	uint32_t max_depth;
};

struct cp_tree *cp_tree_new(void);
void cp_tree_free(struct cp_tree *t);
/* Adds every sample of p (value index vidx) on side 0 or 1.  invert: stacks
 * leaf to root (a callers, or "bottom-up", tree). */
int cp_tree_add(struct cp_tree *t, const struct cp_profile *p, int vidx, int side, bool invert);
/* Orders each node's children by name (flame graphs) . */
int cp_tree_sort(struct cp_tree *t);
/* The child of parent called name, or -1. */
int64_t cp_tree_find(const struct cp_tree *t, uint32_t parent, const char *name);
static inline const char *cp_tree_name(const struct cp_tree *t, uint32_t node)
{
	return cp_strtab_get(&t->names, t->nodes[node].name);
}

struct cp_fn_row {
	uint32_t name; /* in table->names */
	uint32_t file; /* in table->names; the first file seen for the name */
	int64_t flat[2], cum[2];
};

struct cp_fn_table {
	struct cp_strtab names;
	struct cp_fn_row *rows;
	uint32_t nrows, cap;
	struct cp_index idx;
	int64_t total[2];
};

struct cp_fn_table *cp_fn_table_new(void);
void cp_fn_table_free(struct cp_fn_table *t);
/* flat: value where the function is the leaf; cum: where it is anywhere in
 * the stack (counted once per sample, whatever the recursion). */
int cp_fn_table_add(struct cp_fn_table *t, const struct cp_profile *p, int vidx, int side);
/* The row of the function called name, or -1. */
int64_t cp_fn_table_find(const struct cp_fn_table *t, const char *name);

#endif

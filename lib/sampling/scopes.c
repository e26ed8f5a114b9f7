/* SPDX-License-Identifier: MIT */
#include "scopes.h"

#include <dwarf.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

#include "../util.h"

struct node {
	Dwarf_Die die;
	int32_t parent; /* the enclosing scope's node, -1: none */
	uint32_t depth;
};

struct range {
	uint64_t lo, hi;
	uint32_t node;
};

struct cp_scopes {
	struct node *nodes;
	size_t nnodes, nodecap;
	struct range *ranges;
	size_t nranges, rangecap;
};

/* Tags whose children cannot hold code: not walked. */
static bool no_code_inside(int tag)
{
	switch (tag) {
	case DW_TAG_structure_type:
	case DW_TAG_union_type:
	case DW_TAG_class_type:
	case DW_TAG_enumeration_type:
	case DW_TAG_subroutine_type:
	case DW_TAG_array_type:
	case DW_TAG_formal_parameter:
	case DW_TAG_variable:
	case DW_TAG_member:
	case DW_TAG_call_site:
	case DW_TAG_GNU_call_site:
		return true;
	default:
		return false;
	}
}

static int walk(struct cp_scopes *s, Dwarf_Die *parent_die, int32_t parent, uint32_t depth)
{
	Dwarf_Die die;

	if (depth > 256 || dwarf_child(parent_die, &die) != 0)
		return 0;
	do {
		int tag = dwarf_tag(&die), err;
		int32_t me = parent;

		if (tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine) {
			Dwarf_Addr base, lo, hi;
			ptrdiff_t off = 0;
			size_t first = s->nranges;

			while ((off = dwarf_ranges(&die, off, &base, &lo, &hi)) > 0) {
				if (hi <= lo)
					continue;
				if (cp_grow((void **)&s->ranges, &s->rangecap, s->nranges + 1, sizeof(*s->ranges)))
					return -ENOMEM;
				s->ranges[s->nranges].lo = lo;
				s->ranges[s->nranges].hi = hi;
				s->ranges[s->nranges].node = (uint32_t)s->nnodes;
				s->nranges++;
			}
			if (s->nranges > first) {
				if (cp_grow((void **)&s->nodes, &s->nodecap, s->nnodes + 1, sizeof(*s->nodes)))
					return -ENOMEM;
				s->nodes[s->nnodes].die = die;
				s->nodes[s->nnodes].parent = parent;
				s->nodes[s->nnodes].depth = depth;
				me = (int32_t)s->nnodes++;
			}
		}
		if (dwarf_haschildren(&die) && !no_code_inside(tag) && (err = walk(s, &die, me, depth + 1)))
			return err;
	} while (dwarf_siblingof(&die, &die) == 0);
	return 0;
}

struct cp_scopes *cp_scopes_build(Dwarf_Die *cu)
{
	struct cp_scopes *s = calloc(1, sizeof(*s));

	if (!s || walk(s, cu, -1, 0)) {
		cp_scopes_free(s);
		errno = ENOMEM;
		return NULL;
	}
	return s;
}

void cp_scopes_free(struct cp_scopes *s)
{
	if (!s)
		return;
	free(s->nodes);
	free(s->ranges);
	free(s);
}

int cp_scopes_find(const struct cp_scopes *s, uint64_t pc, Dwarf_Die *out, int max)
{
	int32_t best = -1;
	int n = 0;

	/* the deepest scope holding pc; its ancestors hold it too */
	for (size_t i = 0; i < s->nranges; i++) {
		const struct range *r = &s->ranges[i];

		if (pc >= r->lo && pc < r->hi && (best < 0 || s->nodes[r->node].depth > s->nodes[best].depth))
			best = (int32_t)r->node;
	}
	for (; best >= 0 && n < max; best = s->nodes[best].parent) {
		out[n++] = s->nodes[best].die;
		if (dwarf_tag(&s->nodes[best].die) == DW_TAG_subprogram)
			break;
	}
	return n;
}

size_t cp_scopes_size(const struct cp_scopes *s)
{
	return sizeof(*s) + s->nodecap * sizeof(*s->nodes) + s->rangecap * sizeof(*s->ranges);
}

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

/* from lo up to the next segment's lo, node (-1: none) is the deepest scope */
struct seg {
	uint64_t lo;
	int32_t node;
};

struct cp_scopes {
	struct node *nodes;
	size_t nnodes, nodecap;
	struct range *ranges;
	size_t nranges, rangecap;
	/* the ranges cut where any starts or ends, each piece with the deepest
	 * scope holding it: a lookup is a binary search, not a pass over every
	 * range (CPython's ceval.c: thousands of inlined calls).  NULL: not
	 * made (out of memory, or overlaps too many to sort out): the pass. */
	struct seg *segs;
	size_t nsegs;
};

#define ACTIVE_MAX 64

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

/* The deepest of the n ranges in act (indexes into r), the first of them
 * (in the order walked) among equals, as the pass over all ranges picks. */
static int32_t deepest(const struct cp_scopes *s, const struct range *r, const uint32_t *act, size_t n)
{
	int32_t best = -1;
	uint32_t bi = 0;

	for (size_t k = 0; k < n; k++) {
		const struct range *x = &r[act[k]];

		if (best < 0 || s->nodes[x->node].depth > s->nodes[best].depth ||
		    (s->nodes[x->node].depth == s->nodes[best].depth && act[k] < bi))
			best = (int32_t)x->node, bi = act[k];
	}
	return best;
}

/* s->segs from s->ranges: a sweep over the points where a range starts
 * or ends, with the ranges that hold the piece after each point. */
static void make_segs(struct cp_scopes *s)
{
	size_t n = s->nranges, np = 0, nact = 0, j = 0, nseg = 0, segcap = 0;
	uint64_t *pts = n ? malloc(2 * n * sizeof(*pts)) : NULL;
	struct range *r = n ? malloc(n * sizeof(*r)) : NULL;
	uint32_t act[ACTIVE_MAX];
	struct seg *segs = NULL;

	if (!pts || !r)
		goto out;
	for (size_t i = 0; i < n; i++) {
		pts[np++] = s->ranges[i].lo;
		pts[np++] = s->ranges[i].hi;
		/* by start, each with its place in the walk's order (not its node) */
		r[i] = (struct range){ s->ranges[i].lo, s->ranges[i].hi, (uint32_t)i };
	}
	_Static_assert(offsetof(struct range, lo) == 0, "the key leads");
	cp_qsort(pts, np, sizeof(*pts), cp_cmp_u64_key);
	cp_qsort(r, n, sizeof(*r), cp_cmp_u64_key);
	for (size_t k = 0; k < np; k++) {
		uint64_t at = pts[k];
		int32_t node;

		if (k && pts[k - 1] == at)
			continue;
		for (size_t a = 0; a < nact;) /* ended */
			if (s->ranges[act[a]].hi <= at)
				act[a] = act[--nact];
			else
				a++;
		for (; j < n && r[j].lo <= at; j++) { /* started */
			if (nact == ACTIVE_MAX)
				goto out; /* (the pass over every range, then) */
			act[nact++] = r[j].node;
		}
		node = deepest(s, s->ranges, act, nact);
		if (nseg && segs[nseg - 1].node == node)
			continue; /* the same scope goes on */
		if (cp_grow((void **)&segs, &segcap, nseg + 1, sizeof(*segs)))
			goto out;
		segs[nseg++] = (struct seg){ at, node };
	}
	s->segs = segs;
	s->nsegs = nseg;
	segs = NULL;
out:
	free(segs);
	free(r);
	free(pts);
}

struct cp_scopes *cp_scopes_build(Dwarf_Die *cu)
{
	struct cp_scopes *s = calloc(1, sizeof(*s));

	if (!s || walk(s, cu, -1, 0)) {
		cp_scopes_free(s);
		errno = ENOMEM;
		return NULL;
	}
	make_segs(s);
	return s;
}

void cp_scopes_free(struct cp_scopes *s)
{
	if (!s)
		return;
	free(s->nodes);
	free(s->ranges);
	free(s->segs);
	free(s);
}

int cp_scopes_find(const struct cp_scopes *s, uint64_t pc, Dwarf_Die *out, int max)
{
	int32_t best = -1;
	int n = 0;

	/* the deepest scope holding pc; its ancestors hold it too */
	if (s->segs) {
		size_t i = cp_upper_bound_u64(s->segs, s->nsegs, sizeof(*s->segs), pc);

		best = i ? s->segs[i - 1].node : -1;
	} else {
		for (size_t i = 0; i < s->nranges; i++) {
			const struct range *r = &s->ranges[i];

			if (pc >= r->lo && pc < r->hi && (best < 0 || s->nodes[r->node].depth > s->nodes[best].depth))
				best = (int32_t)r->node;
		}
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
	return sizeof(*s) + s->nodecap * sizeof(*s->nodes) + s->rangecap * sizeof(*s->ranges) +
	       s->nsegs * sizeof(*s->segs);
}

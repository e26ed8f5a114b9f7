/* SPDX-License-Identifier: MIT */
#include "locmemo.h"

#include <stdlib.h>

#include "../hugepages.h"
#include "../index.h"

struct slot {
	uint64_t pc;
	uint32_t pid, maps_gen;
	uint32_t gen;  /* the memo's generation when put; 0: never */
	uint32_t loc;  /* kind in the top 2 bits, the location id below */
};

#define LOC_BITS 30
#define LOC_MASK ((1u << LOC_BITS) - 1)

struct cp_locmemo {
	struct slot *v;
	uint32_t mask;
	uint32_t gen; /* >= 1 */
	uint64_t probes, hits;
};

struct cp_locmemo *cp_locmemo_new(unsigned bits)
{
	struct cp_locmemo *m;

	if (bits < 4 || bits > 24)
		bits = bits < 4 ? 4 : 24;
	m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	/* in huge pages: every probe lands on a random slot (hugepages.h) */
	m->v = cp_huge_alloc(((size_t)1 << bits) * sizeof(*m->v));
	if (!m->v) {
		free(m);
		return NULL;
	}
	m->mask = (1u << bits) - 1;
	m->gen = 1;
	return m;
}

void cp_locmemo_free(struct cp_locmemo *m)
{
	if (!m)
		return;
	cp_huge_free(m->v, ((size_t)m->mask + 1) * sizeof(*m->v));
	free(m);
}

void cp_locmemo_clear(struct cp_locmemo *m)
{
	uint32_t i;

	if (++m->gen != 0)
		return;
	/* the generation wrapped: entries of the generation now starting
	 * could still be there */
	for (i = 0; i <= m->mask; i++)
		m->v[i].gen = 0;
	m->gen = 1;
}

static uint32_t slot_of(const struct cp_locmemo *m, uint32_t pid, uint32_t maps_gen, uint64_t pc, unsigned kind)
{
	uint64_t seed = ((uint64_t)pid << 32 | maps_gen) ^ ((uint64_t)kind << 62);

	return (uint32_t)cp_hash_u64(pc, seed) & m->mask;
}

uint32_t cp_locmemo_get(struct cp_locmemo *m, uint32_t pid, uint32_t maps_gen, uint64_t pc, unsigned kind)
{
	const struct slot *s = &m->v[slot_of(m, pid, maps_gen, pc, kind)];

	m->probes++;
	if (s->gen != m->gen || s->pc != pc || s->pid != pid || s->maps_gen != maps_gen || s->loc >> LOC_BITS != kind)
		return 0;
	m->hits++;
	return s->loc & LOC_MASK;
}

void cp_locmemo_put(struct cp_locmemo *m, uint32_t pid, uint32_t maps_gen, uint64_t pc, unsigned kind, uint32_t loc)
{
	struct slot *s = &m->v[slot_of(m, pid, maps_gen, pc, kind)];

	if (!loc || loc > LOC_MASK || kind > 3)
		return;
	s->pc = pc;
	s->pid = pid;
	s->maps_gen = maps_gen;
	s->gen = m->gen;
	s->loc = (uint32_t)kind << LOC_BITS | loc;
}

void cp_locmemo_counts(const struct cp_locmemo *m, uint64_t *probes, uint64_t *hits)
{
	*probes = m->probes;
	*hits = m->hits;
}

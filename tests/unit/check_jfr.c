/* SPDX-License-Identifier: MIT */
/* Java Flight Recorder files: lib/jfr.c on recordings built here (every
 * field known) and on one Debian's OpenJDK 17 wrote (tests/fixtures/jfr,
 * made by tests/cli/test-jfr.sh's Work.java), whole, cut short at every
 * length, and made hostile. */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode_limits.h"
#include "error.h"
#include "gzip.h"
#include "jfr.h"
#include "load.h"
#include "pprof.h"
#include "profile.h"
#include "testutil.h"
#include "util.h"

/* ---- a recording built field by field ---- */

struct jb {
	uint8_t d[16384];
	size_t n;
};

static void put_u(struct jb *b, uint64_t v)
{
	for (int i = 0; i < 8; i++) {
		if (v < 0x80) {
			b->d[b->n++] = (uint8_t)v;
			return;
		}
		b->d[b->n++] = (uint8_t)((v & 0x7f) | 0x80);
		v >>= 7;
	}
	b->d[b->n++] = (uint8_t)v;
}

/* a compressed integer padded to 4 bytes (as the JDK writes sizes), patched later */
static void put_u4_at(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)((v & 0x7f) | 0x80);
	p[1] = (uint8_t)(((v >> 7) & 0x7f) | 0x80);
	p[2] = (uint8_t)(((v >> 14) & 0x7f) | 0x80);
	p[3] = (uint8_t)((v >> 21) & 0x7f);
}

static void put_bytes(struct jb *b, const void *p, size_t n)
{
	memcpy(b->d + b->n, p, n);
	b->n += n;
}

static void put_str(struct jb *b, const char *s)
{
	b->d[b->n++] = 3;
	put_u(b, strlen(s));
	put_bytes(b, s, strlen(s));
}

static void put_be(uint8_t *p, uint64_t v, int n)
{
	for (int i = n - 1; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

/* an event: its size (padded, 4 bytes) then what body() writes */
static size_t begin_event(struct jb *b, uint64_t type)
{
	size_t at = b->n;

	b->n += 4;
	put_u(b, type);
	return at;
}

static void end_event(struct jb *b, size_t at)
{
	put_u4_at(b->d + at, (uint32_t)(b->n - at));
}

struct fdef {
	const char *name;
	int type;
	bool cpool, array;
};

static const struct cdef {
	int id;
	const char *name;
	struct fdef f[4];
} cdefs[] = {
	{ 20, "long", { { 0 } } },
	{ 21, "int", { { 0 } } },
	{ 22, "boolean", { { 0 } } },
	{ 23, "java.lang.String", { { 0 } } },
	{ 30, "jdk.types.Symbol", { { "string", 23, false, false } } },
	{ 31, "java.lang.Class", { { "name", 30, true, false } } },
	{ 32, "jdk.types.Method", { { "type", 31, true, false }, { "name", 30, true, false } } },
	{ 33, "jdk.types.StackFrame", { { "method", 32, true, false }, { "lineNumber", 21, false, false } } },
	{ 34, "jdk.types.StackTrace", { { "truncated", 22, false, false }, { "frames", 33, false, true } } },
	{ 35, "jdk.types.ThreadState", { { "name", 23, false, false } } },
	{ 36, "jdk.ActiveSetting",
	  { { "startTime", 20, false, false }, { "id", 20, false, false }, { "name", 23, false, false }, { "value", 23, false, false } } },
	{ 40, "jdk.ExecutionSample", { { "startTime", 20, false, false }, { "stackTrace", 34, true, false }, { "state", 35, true, false } } },
	{ 41, "jdk.ThreadPark", { { "startTime", 20, false, false }, { "duration", 20, false, false }, { "stackTrace", 34, true, false } } },
	{ 42, "profiler.WallClockSample",
	  { { "startTime", 20, false, false }, { "stackTrace", 34, true, false }, { "state", 35, true, false }, { "samples", 21, false, false } } },
	{ 50, "test.Self", { { "self", 50, false, false } } },
};

struct jopts {
	const char *period;   /* an ActiveSetting for jdk.ExecutionSample's period */
	bool fwd_cycle;       /* the older checkpoint points forward to the newer one */
	bool self_string;     /* a thread state named by a string pool entry that names itself */
	bool self_pool;       /* a pool of a class that holds itself */
	bool huge_str;        /* a symbol of 2^40 bytes */
	bool huge_frames;     /* a stack trace of 2^60 frames */
	uint64_t huge_events; /* a 2^60-byte event */
	bool wall;            /* async-profiler's: event=wall, and two wall-clock samples of 3 */
};

static const char *strtab[64];
static size_t nstrtab;

static uint64_t sidx(const char *s)
{
	for (size_t i = 0; i < nstrtab; i++)
		if (!strcmp(strtab[i], s))
			return i;
	strtab[nstrtab] = s;
	return nstrtab++;
}

static void elem(struct jb *t, const char *name, int nattrs, const char *const *attrs, uint64_t nchildren)
{
	put_u(t, sidx(name));
	put_u(t, (uint64_t)nattrs);
	for (int i = 0; i < nattrs; i++) {
		put_u(t, sidx(attrs[2 * i]));
		put_u(t, sidx(attrs[2 * i + 1]));
	}
	put_u(t, nchildren);
}

static void write_metadata(struct jb *b)
{
	static char ids[64][16];
	static struct jb tree;
	size_t at = begin_event(b, 0), nc = sizeof(cdefs) / sizeof(cdefs[0]);

	nstrtab = 0;
	tree.n = 0;
	put_u(b, 0); /* start */
	put_u(b, 0); /* duration */
	put_u(b, 1); /* metadata id */
	elem(&tree, "root", 0, NULL, 1);
	elem(&tree, "metadata", 0, NULL, nc);
	for (size_t i = 0; i < nc; i++) {
		const struct cdef *c = &cdefs[i];
		int nf = 0;

		while (nf < 4 && c->f[nf].name)
			nf++;
		snprintf(ids[i], sizeof(ids[i]), "%d", c->id);
		elem(&tree, "class", 2, (const char *const[]){ "id", ids[i], "name", c->name }, (uint64_t)nf);
		for (int k = 0; k < nf; k++) {
			const struct fdef *f = &c->f[k];
			const char *attrs[8] = { "name", f->name, "class", NULL, "constantPool", "true", "dimension", "1" };
			int na = 2;

			for (size_t m = 0; m < nc; m++)
				if (cdefs[m].id == f->type) {
					snprintf(ids[32 + m], sizeof(ids[32 + m]), "%d", f->type);
					attrs[3] = ids[32 + m];
				}
			if (f->cpool)
				na = 3;
			if (f->array) {
				attrs[4] = "dimension";
				attrs[5] = "1";
				na = 3;
			}
			elem(&tree, "field", na, attrs, 0);
		}
	}
	put_u(b, nstrtab);
	for (size_t i = 0; i < nstrtab; i++)
		put_str(b, strtab[i]);
	put_bytes(b, tree.d, tree.n);
	end_event(b, at);
}

/* A chunk: events, metadata, two checkpoints (symbols, classes, methods;
 * then stack traces and thread states).  Returns its length. */
static size_t build(struct jb *b, const struct jopts *o)
{
	size_t at, meta, cp1, cp2, delta1;

	memset(b, 0, sizeof(*b));
	memcpy(b->d, "FLR\0\0\2\0\1", 8);
	b->n = 68;
	if (o->period) {
		at = begin_event(b, 36);
		put_u(b, 1);
		put_u(b, 40);
		put_str(b, "period");
		put_str(b, o->period);
		end_event(b, at);
	}
	if (o->wall) {
		at = begin_event(b, 36);
		put_u(b, 1);
		put_u(b, 0);
		put_str(b, "event");
		put_str(b, "wall");
		end_event(b, at);
		for (int i = 0; i < 2; i++) {
			at = begin_event(b, 42);
			put_u(b, 150);
			put_u(b, 8);
			put_u(b, 2);
			put_u(b, 3);
			end_event(b, at);
		}
	}
	for (int i = 0; i < 5; i++) { /* 3 x stack 7, 1 x stack 8, 1 asleep */
		at = begin_event(b, 40);
		put_u(b, 100 + (uint64_t)i);
		put_u(b, i == 3 ? 8 : 7);
		put_u(b, i == 4 ? 2 : 1);
		end_event(b, at);
	}
	if (o->self_string) {
		at = begin_event(b, 40);
		put_u(b, 200);
		put_u(b, 8);
		put_u(b, 3);
		end_event(b, at);
	}
	for (int i = 0; i < 2; i++) {
		at = begin_event(b, 41);
		put_u(b, 300);
		put_u(b, 5000);
		put_u(b, 8);
		end_event(b, at);
	}
	if (o->huge_events) {
		put_u(b, o->huge_events);
		put_u(b, 41);
	}
	meta = b->n;
	write_metadata(b);

	cp1 = b->n;
	at = begin_event(b, 1);
	put_u(b, 0);
	put_u(b, 0);
	delta1 = b->n;
	b->n += 4; /* the delta, patched */
	b->d[b->n++] = 0;
	put_u(b, o->self_pool ? 4 : 3);
	put_u(b, 30); /* symbols */
	put_u(b, 3);
	put_u(b, 1);
	put_str(b, "com/example/Foo");
	put_u(b, 2);
	if (o->huge_str) {
		b->d[b->n++] = 3;
		put_u(b, (uint64_t)1 << 40);
	}
	put_str(b, "bar");
	put_u(b, 3);
	put_str(b, "baz");
	put_u(b, 31); /* classes */
	put_u(b, 1);
	put_u(b, 1);
	put_u(b, 1);
	put_u(b, 32); /* methods */
	put_u(b, 2);
	put_u(b, 1);
	put_u(b, 1);
	put_u(b, 2);
	put_u(b, 2);
	put_u(b, 1);
	put_u(b, 3);
	if (o->self_pool) {
		put_u(b, 50);
		put_u(b, 1);
		put_u(b, 1);
	}
	end_event(b, at);

	cp2 = b->n;
	at = begin_event(b, 1);
	put_u(b, 0);
	put_u(b, 0);
	put_u(b, (uint64_t)((int64_t)cp1 - (int64_t)cp2));
	b->d[b->n++] = 0;
	put_u(b, o->self_string ? 3 : 2);
	put_u(b, 34); /* stack traces */
	put_u(b, 2);
	put_u(b, 7);
	b->d[b->n++] = 0;
	put_u(b, o->huge_frames ? (uint64_t)1 << 60 : 2);
	put_u(b, 1);
	put_u(b, 10);
	put_u(b, 2);
	put_u(b, 20);
	put_u(b, 8);
	b->d[b->n++] = 0;
	put_u(b, 1);
	put_u(b, 2);
	put_u(b, 21);
	put_u(b, 35); /* thread states */
	put_u(b, o->self_string ? 3 : 2);
	put_u(b, 1);
	put_str(b, "STATE_RUNNABLE");
	put_u(b, 2);
	put_str(b, "STATE_SLEEPING");
	if (o->self_string) {
		put_u(b, 3);
		b->d[b->n++] = 2;
		put_u(b, 9);
		put_u(b, 23); /* strings: 9 is "string 9" */
		put_u(b, 1);
		put_u(b, 9);
		b->d[b->n++] = 2;
		put_u(b, 9);
	}
	end_event(b, at);

	put_u4_at(b->d + delta1, o->fwd_cycle ? (uint32_t)(cp2 - cp1) : 0);
	put_be(b->d + 8, b->n, 8);
	put_be(b->d + 16, cp2, 8);
	put_be(b->d + 24, meta, 8);
	put_be(b->d + 32, 1700000000000000000ull, 8);
	put_be(b->d + 40, 2000000000ull, 8);
	put_be(b->d + 56, 1000000000ull, 8);
	put_be(b->d + 64, 1, 4);
	return b->n;
}

static const struct cp_jfr_part *part(const struct cp_jfr_part *parts, size_t n, enum cp_jfr_kind k)
{
	for (size_t i = 0; i < n; i++)
		if (parts[i].kind == k)
			return &parts[i];
	return NULL;
}

/* the name of the hottest leaf (by value vidx) and its line */
static const char *hottest_leaf(const struct cp_profile *p, int vidx, int64_t *line)
{
	int64_t best = -1;
	const char *name = NULL;

	for (uint32_t s = 0; s < p->nsamples; s++) {
		const struct cp_span *st = &p->stacks[p->samples[s].stack];
		int64_t v = cp_profile_values(p, s)[vidx], sum = 0;

		if (!st->len)
			continue;
		for (uint32_t t = 0; t < p->nsamples; t++) { /* the leaf's total over samples */
			const struct cp_span *o = &p->stacks[p->samples[t].stack];

			if (o->len && p->stack_locs[o->off] == p->stack_locs[st->off])
				sum += cp_profile_values(p, t)[vidx];
		}
		(void)v;
		if (sum > best) {
			const struct cp_location *l = cp_profile_loc(p, p->stack_locs[st->off]);
			const struct cp_line *ln = &p->lines[l->line_off];

			best = sum;
			name = cp_profile_string(p, p->functions[ln->function - 1].name);
			if (line)
				*line = ln->line;
		}
	}
	return name;
}

static void free_parts(struct cp_jfr_part *parts, size_t n)
{
	cp_jfr_parts_free(parts, n);
}

/* ---- tests ---- */

START_TEST(test_varint)
{
	static const uint8_t one[] = { 5 }, two[] = { 0x80, 0x01 }, padded[] = { 0x85, 0x80, 0x80, 0x00 },
			     nine[] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff }, cut[] = { 0x80, 0x80 };
	uint64_t v = 0;

	ck_assert_uint_eq(cp_jfr_varint(one, one + 1, &v), 1);
	ck_assert_uint_eq(v, 5);
	ck_assert_uint_eq(cp_jfr_varint(two, two + 2, &v), 2);
	ck_assert_uint_eq(v, 128);
	ck_assert_uint_eq(cp_jfr_varint(padded, padded + 4, &v), 4);
	ck_assert_uint_eq(v, 5);
	ck_assert_uint_eq(cp_jfr_varint(nine, nine + 9, &v), 9);
	ck_assert_uint_eq(v, UINT64_MAX);
	ck_assert_uint_eq(cp_jfr_varint(cut, cut + 2, &v), 0);
	ck_assert_uint_eq(cp_jfr_varint(one, one, &v), 0);
}
END_TEST

START_TEST(test_built)
{
	static struct jb b;
	struct cp_jfr_part *parts;
	const struct cp_jfr_part *cpu, *park;
	struct cp_profile *p;
	size_t n, len = build(&b, &(struct jopts){ 0 });
	int64_t line = 0;
	int err;

	err = cp_jfr_to_parts(b.d, len, &parts, &n);
	ck_assert_msg(err == 0, "%s", cp_errmsg(err));
	ck_assert_uint_eq(n, 2);
	cpu = part(parts, n, CP_JFR_CPU);
	park = part(parts, n, CP_JFR_PARK);
	ck_assert_ptr_nonnull(cpu);
	ck_assert_ptr_nonnull(park);
	ck_assert_str_eq(cpu->name, "process_cpu");
	ck_assert_uint_eq(cpu->events, 4); /* the sleeping one is not CPU */
	ck_assert_int_eq(cpu->profile->period, 10000000);
	ck_assert_int_eq(cp_profile_total(cpu->profile, 0), 40000000);
	ck_assert_str_eq(cp_profile_string(cpu->profile, cpu->profile->sample_types[0].type), "cpu");
	ck_assert_str_eq(cp_profile_string(cpu->profile, cpu->profile->period_type.type), "cpu");
	ck_assert_str_eq(hottest_leaf(cpu->profile, 0, &line), "com.example.Foo.bar");
	ck_assert_int_eq(line, 10);
	ck_assert_int_eq(cpu->profile->time_nanos, 1700000000000000000ll);
	ck_assert_int_eq(cpu->profile->duration_nanos, 2000000000ll);
	ck_assert_str_eq(park->name, "block");
	ck_assert_uint_eq(park->profile->ntypes, 2);
	ck_assert_str_eq(cp_profile_string(park->profile, park->profile->sample_types[0].type), "contentions");
	ck_assert_str_eq(cp_profile_string(park->profile, park->profile->sample_types[1].type), "delay");
	ck_assert_str_eq(cp_profile_string(park->profile, park->profile->period_type.type), "block");
	ck_assert_int_eq(cp_profile_total(park->profile, 0), 2);
	ck_assert_int_eq(cp_profile_total(park->profile, 1), 10000);
	ck_assert_str_eq(hottest_leaf(park->profile, 1, &line), "com.example.Foo.baz");
	ck_assert_int_eq(line, 21);
	free_parts(parts, n);

	/* all in one profile: the fixed sample types, cpu first and default */
	err = cp_jfr_decode(b.d, len, &p);
	ck_assert_msg(err == 0, "%s", cp_errmsg(err));
	ck_assert_uint_eq(p->ntypes, CP_JFR_NTYPES);
	ck_assert_int_eq(cp_profile_sample_index(p, NULL), 0);
	ck_assert_int_eq(cp_profile_total(p, cp_profile_sample_index(p, "block_delay")), 10000);
	ck_assert_int_eq(cp_profile_total(p, cp_profile_sample_index(p, "mutex_delay")), 0);
	cp_profile_free(p);

	/* and through the loader's sniffing, gzipped too */
	p = cp_profile_decode(b.d, len);
	ck_assert_msg(p != NULL, "%s", cp_errmsg(errno));
	ck_assert_int_eq(cp_profile_total(p, 0), 40000000);
	cp_profile_free(p);
	{
		uint8_t *gz = NULL;
		size_t gzlen = 0;

		ck_assert_int_eq(cp_gzip(b.d, len, &gz, &gzlen), 0);
		p = cp_profile_decode(gz, gzlen);
		ck_assert_msg(p != NULL, "%s", cp_errmsg(errno));
		ck_assert_int_eq(cp_profile_total(p, cp_profile_sample_index(p, "block_contentions")), 2);
		cp_profile_free(p);
		free(gz);
	}
}
END_TEST

START_TEST(test_period_setting)
{
	static struct jb b;
	struct cp_jfr_part *parts;
	size_t n, len = build(&b, &(struct jopts){ .period = "20 ms" });
	int err = cp_jfr_to_parts(b.d, len, &parts, &n);

	ck_assert_msg(err == 0, "%s", cp_errmsg(err));
	ck_assert_int_eq(parts[0].profile->period, 20000000);
	ck_assert_int_eq(cp_profile_total(parts[0].profile, 0), 80000000);
	free_parts(parts, n);
}
END_TEST

/* async-profiler in wall mode: execution samples count as CPU when running, as wall always; its
 * wall-clock samples as wall, each its samples times the period */
START_TEST(test_wall)
{
	static struct jb b;
	struct cp_jfr_part *parts;
	const struct cp_jfr_part *cpu, *wall;
	size_t n, len = build(&b, &(struct jopts){ .wall = true });
	int err = cp_jfr_to_parts(b.d, len, &parts, &n);

	ck_assert_msg(err == 0, "%s", cp_errmsg(err));
	ck_assert_ptr_nonnull(cpu = part(parts, n, CP_JFR_CPU));
	ck_assert_ptr_nonnull(wall = part(parts, n, CP_JFR_WALL));
	ck_assert_str_eq(wall->name, "wall");
	ck_assert_uint_eq(cpu->events, 4);
	ck_assert_int_eq(cp_profile_total(cpu->profile, 0), 4 * 10000000);
	ck_assert_uint_eq(wall->events, 5 + 2);
	ck_assert_int_eq(cp_profile_total(wall->profile, 0), (5 + 2 * 3) * 10000000ll);
	ck_assert_str_eq(cp_profile_string(wall->profile, wall->profile->sample_types[0].type), "wall");
	ck_assert_str_eq(cp_profile_string(wall->profile, wall->profile->period_type.type), "wall");
	cp_jfr_parts_free(parts, n);
}
END_TEST

/* Fails with EINVAL and a one-line message (or, cut at a chunk's end, decodes). */
static void decode_any(const uint8_t *d, size_t len, bool may_pass)
{
	struct cp_jfr_part *parts = NULL;
	struct cp_profile *p = NULL;
	size_t n = 0;
	int err;

	cp_error_clear();
	err = cp_jfr_decode(d, len, &p);
	if (!may_pass || err) {
		ck_assert_msg(err == -EINVAL, "length %zu: %d (%s)", len, err, cp_errmsg(err));
		ck_assert_msg(!strchr(cp_errmsg(err), '\n') && strlen(cp_errmsg(err)) > 10, "length %zu: '%s'", len,
			      cp_errmsg(err));
		ck_assert_ptr_null(p);
	}
	cp_profile_free(p);
	err = cp_jfr_to_parts(d, len, &parts, &n);
	if (!may_pass)
		ck_assert_int_eq(err, -EINVAL);
	cp_jfr_parts_free(parts, n);
}

START_TEST(test_built_prefixes)
{
	static struct jb b, c;
	size_t len = build(&b, &(struct jopts){ .self_string = true, .period = "1 ms" });

	for (size_t l = 0; l < len; l++)
		decode_any(b.d, l, false);
	/* the chunk's own size says the cut length: the reader gets past the header to where it ends */
	for (size_t l = 68; l < len; l++) {
		c = b;
		put_be(c.d + 8, l, 8);
		decode_any(c.d, l, true);
	}
	/* and every byte changed */
	for (size_t i = 0; i < len; i++) {
		c = b;
		c.d[i] ^= 0xff;
		decode_any(c.d, len, true);
		c.d[i] = 0x80;
		decode_any(c.d, len, true);
	}
}
END_TEST

START_TEST(test_cyclic)
{
	static struct jb b;
	struct cp_jfr_part *parts;
	struct cp_profile *p;
	size_t n, len;
	int err;

	len = build(&b, &(struct jopts){ .fwd_cycle = true });
	err = cp_jfr_decode(b.d, len, &p);
	ck_assert_int_eq(err, -EINVAL);
	ck_assert_contains(cp_errmsg(err), "checkpoint that does not point back");

	/* a string pool entry that names itself reads as "" (and the thread state is not asleep) */
	len = build(&b, &(struct jopts){ .self_string = true });
	err = cp_jfr_to_parts(b.d, len, &parts, &n);
	ck_assert_msg(err == 0, "%s", cp_errmsg(err));
	ck_assert_uint_eq(parts[0].events, 5);
	cp_jfr_parts_free(parts, n);

	len = build(&b, &(struct jopts){ .self_pool = true });
	err = cp_jfr_decode(b.d, len, &p);
	ck_assert_int_eq(err, -EINVAL);
	ck_assert_contains(cp_errmsg(err), "nested too deep");
}
END_TEST

START_TEST(test_huge)
{
	static struct jb b;
	struct cp_profile *p;
	size_t len;
	int err;

	len = build(&b, &(struct jopts){ .huge_str = true });
	err = cp_jfr_decode(b.d, len, &p);
	ck_assert_int_eq(err, -EINVAL);
	ck_assert_contains(cp_errmsg(err), "string length 1099511627776 is past the end");

	len = build(&b, &(struct jopts){ .huge_frames = true });
	err = cp_jfr_decode(b.d, len, &p);
	ck_assert_int_eq(err, -EINVAL);
	ck_assert_contains(cp_errmsg(err), "frame count");

	len = build(&b, &(struct jopts){ .huge_events = (uint64_t)1 << 60 });
	err = cp_jfr_decode(b.d, len, &p);
	ck_assert_int_eq(err, -EINVAL);
	ck_assert_contains(cp_errmsg(err), "event size past the end");

	len = build(&b, &(struct jopts){ 0 });
	put_be(b.d + 8, UINT64_MAX, 8);
	err = cp_jfr_decode(b.d, len, &p);
	ck_assert_int_eq(err, -EINVAL);
	ck_assert_contains(cp_errmsg(err), "cut short");
	put_be(b.d + 8, len, 8);
	put_be(b.d + 24, UINT64_MAX - 3, 8);
	err = cp_jfr_decode(b.d, len, &p);
	ck_assert_int_eq(err, -EINVAL);
	ck_assert_contains(cp_errmsg(err), "metadata offset");
	len = build(&b, &(struct jopts){ 0 });
	put_be(b.d + 16, UINT64_MAX, 8);
	err = cp_jfr_decode(b.d, len, &p);
	ck_assert_int_eq(err, -EINVAL);
	ck_assert_contains(cp_errmsg(err), "constant pool offset");
	len = build(&b, &(struct jopts){ 0 });
	b.d[5] = 1;
	err = cp_jfr_decode(b.d, len, &p);
	ck_assert_int_eq(err, -EINVAL);
	ck_assert_contains(cp_errmsg(err), "version 1.1");

	/* the limits of lib/decode_limits.h */
	len = build(&b, &(struct jopts){ 0 });
	cp_decode_limits_set(&(struct cp_decode_limits){ .max_samples = 1 });
	err = cp_jfr_decode(b.d, len, &p);
	ck_assert_int_eq(err, -EFBIG);
	ck_assert_contains(cp_errmsg(err), "samples");
	cp_decode_limits_set(&(struct cp_decode_limits){ .max_decompressed = 256 });
	err = cp_jfr_decode(b.d, len, &p);
	ck_assert_int_eq(err, -EFBIG);
	ck_assert_contains(cp_errmsg(err), "decoding the profile would take over");
	cp_decode_limits_set(&(struct cp_decode_limits){ .max_locations = 1 });
	err = cp_jfr_decode(b.d, len, &p);
	ck_assert_int_eq(err, -EFBIG);
	ck_assert_contains(cp_errmsg(err), "locations");
	cp_decode_limits_set(&(struct cp_decode_limits){ 0 });
	err = cp_jfr_decode(b.d, len, &p);
	ck_assert_int_eq(err, 0);
	cp_profile_free(p);
}
END_TEST

static void read_recording(uint8_t **d, size_t *len)
{
	const char *srcdir = getenv("srcdir");
	char path[4096];
	uint8_t *gz = NULL;
	size_t gzlen = 0;
	int err;

	snprintf(path, sizeof(path), "%s/tests/fixtures/jfr/small.jfr.gz", srcdir && *srcdir ? srcdir : ".");
	err = cp_read_file(path, CP_PPROF_MAX_SIZE, &gz, &gzlen);
	ck_assert_msg(err == 0, "%s: %s", path, cp_errmsg(err));
	err = cp_gunzip(gz, gzlen, (size_t)64 << 20, d, len);
	ck_assert_msg(err == 0, "%s", cp_errmsg(err));
	free(gz);
}

/* What `jfr summary` and `jfr print` say of the fixture (OpenJDK 17.0, Work.java, cprof-test.jfc) */
START_TEST(test_recording)
{
	struct cp_jfr_part *parts;
	const struct cp_jfr_part *pt;
	uint8_t *d;
	size_t len, n;
	int64_t line = 0;
	int err;

	read_recording(&d, &len);
	err = cp_jfr_to_parts(d, len, &parts, &n);
	ck_assert_msg(err == 0, "%s", cp_errmsg(err));
	ck_assert_uint_eq(n, 4);
	ck_assert_ptr_nonnull(pt = part(parts, n, CP_JFR_CPU));
	ck_assert_uint_eq(pt->events, 30);
	ck_assert_int_eq(cp_profile_total(pt->profile, 0), 30 * pt->profile->period);
	ck_assert_str_eq(hottest_leaf(pt->profile, 0, NULL), "Work.hotLoop");
	ck_assert_ptr_nonnull(pt = part(parts, n, CP_JFR_ALLOC_SAMPLE));
	ck_assert_str_eq(pt->name, "memory");
	ck_assert_uint_eq(pt->events, 50);
	ck_assert_int_eq(cp_profile_total(pt->profile, 0), 50);
	ck_assert_int_gt(cp_profile_total(pt->profile, 1), 50 * 4096);
	ck_assert_str_eq(hottest_leaf(pt->profile, 1, NULL), "Work.allocate");
	ck_assert_ptr_nonnull(pt = part(parts, n, CP_JFR_LOCK));
	ck_assert_uint_eq(pt->events, 33);
	ck_assert_int_eq(cp_profile_total(pt->profile, 0), 33);
	ck_assert_str_eq(hottest_leaf(pt->profile, 1, &line), "Work.contend");
	ck_assert_int_eq(line, 13);
	ck_assert_ptr_nonnull(pt = part(parts, n, CP_JFR_PARK));
	ck_assert_uint_eq(pt->events, 196);
	ck_assert_str_eq(hottest_leaf(pt->profile, 1, NULL), "jdk.internal.misc.Unsafe.park");
	cp_jfr_parts_free(parts, n);
	free(d);
}
END_TEST

/* cut at every length: never a crash, always a message; with the chunk's size
 * saying the cut length too, in steps through the middle */
START_TEST(test_recording_prefixes)
{
	uint8_t *d, *c;
	size_t len, l;

	read_recording(&d, &len);
	for (l = 0; l < len; l++)
		decode_any(d, l, false);
	c = malloc(len);
	ck_assert_ptr_nonnull(c);
	memcpy(c, d, len);
	for (l = 68; l < len; l += (l < 4096 || l > len - 4096) ? 1 : 97) {
		put_be(c + 8, l, 8);
		decode_any(c, l, true);
	}
	free(c);
	free(d);
}
END_TEST

int main(void)
{
	const TTest *const tests[] = { test_varint, test_built, test_period_setting, test_wall, test_built_prefixes, test_cyclic,
					      test_huge, test_recording, test_recording_prefixes };

	return run_tests_timeout("jfr", tests, sizeof(tests) / sizeof(tests[0]), 600);
}

/* SPDX-License-Identifier: MIT */
/* The profile model: lib/profile.c, lib/strtab.c, lib/index.c, lib/filter.c, lib/cumulative.c. */
#include <check.h>
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cumulative.h"
#include "error.h"
#include "index.h"
#include "profile.h"
#include "strtab.h"
#include "testutil.h"

/* ---- helpers ---- */

static uint32_t str(struct cp_profile *p, const char *s)
{
	int64_t id = cp_profile_str(p, s);

	ck_assert_int_ge(id, 0);
	return (uint32_t)id;
}

/* A profile with the given sample types ("samples/count,cpu/nanoseconds")
 * and period type (NULL: the last sample type). */
static struct cp_profile *profile_with(const char *types, const char *period, int64_t every)
{
	struct cp_profile *p = cp_profile_new();
	char buf[256], *save = NULL, *tok, *slash;

	ck_assert_ptr_nonnull(p);
	snprintf(buf, sizeof(buf), "%s", types);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		slash = strchr(tok, '/');
		ck_assert_ptr_nonnull(slash);
		*slash = '\0';
		ck_assert_int_eq(cp_profile_add_sample_type(p, tok, slash + 1), 0);
	}
	if (period) {
		snprintf(buf, sizeof(buf), "%s", period);
		slash = strchr(buf, '/');
		ck_assert_ptr_nonnull(slash);
		*slash = '\0';
		ck_assert_int_eq(cp_profile_set_period_type(p, buf, slash + 1, every), 0);
	}
	return p;
}

static struct cp_profile *simple_profile(void)
{
	return profile_with("samples/count", "samples/count", 1);
}

/* A location with one line calling function `name`, no mapping. */
static uint32_t fn_loc(struct cp_profile *p, const char *name)
{
	struct cp_function f = { str(p, name), str(p, name), str(p, "prog.c"), 0 };
	struct cp_line line = { 0, 0, 0 };
	int64_t fid = cp_profile_function(p, &f), lid;

	ck_assert_int_gt(fid, 0);
	line.function = (uint32_t)fid;
	line.line = 1;
	lid = cp_profile_location(p, 0, 0, &line, 1, false);
	ck_assert_int_gt(lid, 0);
	return (uint32_t)lid;
}

/* "a;b;c" (root first) -> a stack id (leaf first, as pprof stores it). */
static uint32_t stack_of(struct cp_profile *p, const char *frames)
{
	uint32_t locs[64];
	char buf[512], *save = NULL, *tok;
	size_t n = 0, i;
	int64_t id;

	snprintf(buf, sizeof(buf), "%s", frames);
	for (tok = strtok_r(buf, ";", &save); tok; tok = strtok_r(NULL, ";", &save)) {
		ck_assert_uint_lt(n, 64);
		locs[n++] = fn_loc(p, tok);
	}
	for (i = 0; i < n / 2; i++) {
		uint32_t t = locs[i];

		locs[i] = locs[n - 1 - i];
		locs[n - 1 - i] = t;
	}
	id = cp_profile_stack(p, locs, n);
	ck_assert_int_ge(id, 0);
	return (uint32_t)id;
}

static void add(struct cp_profile *p, const char *frames, int64_t v)
{
	int64_t vals[4] = { v, v, v, v };

	ck_assert_uint_le(p->ntypes, 4);
	ck_assert_int_eq(cp_profile_add_sample(p, stack_of(p, frames), 0, vals), 0);
}

static void add2(struct cp_profile *p, const char *frames, int64_t a, int64_t b)
{
	int64_t vals[2] = { a, b };

	ck_assert_uint_eq(p->ntypes, 2);
	ck_assert_int_eq(cp_profile_add_sample(p, stack_of(p, frames), 0, vals), 0);
}

/* The stack of a sample as "root;...;leaf". */
static const char *stack_text(const struct cp_profile *p, uint32_t stack, char *out, size_t len)
{
	struct cp_frame *frames = NULL;
	size_t cap = 0, used = 0;
	int n = cp_profile_frames(p, stack, &frames, &cap), i;
	char buf[128];

	ck_assert_int_ge(n, 0);
	out[0] = '\0';
	for (i = n - 1; i >= 0; i--)
		used += (size_t)snprintf(out + used, len - used, "%s%s", i == n - 1 ? "" : ";",
					 cp_frame_name(p, &frames[i], buf, sizeof(buf)));
	free(frames);
	return out;
}

/* Sum of value vidx over the samples whose stack reads `frames`. */
static int64_t value_of(const struct cp_profile *p, const char *frames, int vidx)
{
	char buf[512];
	int64_t sum = 0;
	uint32_t i;

	for (i = 0; i < p->nsamples; i++)
		if (!strcmp(stack_text(p, p->samples[i].stack, buf, sizeof(buf)), frames))
			sum += cp_profile_values(p, i)[vidx];
	return sum;
}

static const struct cp_label *find_label(const struct cp_profile *p, uint32_t ls, const char *key)
{
	const struct cp_span *s = &p->labelsets[ls];
	uint32_t i;

	for (i = 0; i < s->len; i++)
		if (!strcmp(cp_profile_string(p, p->labels[s->off + i].key), key))
			return &p->labels[s->off + i];
	return NULL;
}

/* ---- strings ---- */

START_TEST(test_strtab)
{
	struct cp_strtab t;
	int64_t a, b;

	ck_assert_int_eq(cp_strtab_init(&t), 0);
	ck_assert_uint_eq(t.n, 1);
	ck_assert_str_eq(cp_strtab_get(&t, 0), "");
	ck_assert_int_eq(cp_strtab_intern(&t, "", 0), 0);
	a = cp_strtab_intern(&t, "alpha", 5);
	b = cp_strtab_intern(&t, "beta", 4);
	ck_assert_int_eq(a, 1);
	ck_assert_int_eq(b, 2);
	ck_assert_int_eq(cp_strtab_intern(&t, "alpha", 5), a);
	ck_assert_int_eq(cp_strtab_intern(&t, "alphabet", 5), a); /* len counts, not the NUL */
	ck_assert_int_eq(cp_strtab_intern(&t, "alp", 3), 3);      /* a prefix is another string */
	ck_assert_str_eq(cp_strtab_get(&t, 1), "alpha");
	ck_assert_str_eq(cp_strtab_get(&t, 3), "alp");
	ck_assert_int_eq(cp_strtab_find(&t, "beta", 4), b);
	ck_assert_int_eq(cp_strtab_find(&t, "", 0), 0);
	ck_assert_int_eq(cp_strtab_find(&t, "gamma", 5), -ENOENT);
	ck_assert_int_eq(cp_strtab_find(&t, "bet", 3), -ENOENT);
	ck_assert_uint_eq(t.n, 4);
	cp_strtab_release(&t);
	ck_assert_ptr_null(t.buf);
	cp_strtab_release(NULL);
}
END_TEST

START_TEST(test_profile_strings)
{
	struct cp_profile *p = cp_profile_new();
	int64_t foo;

	ck_assert_ptr_nonnull(p);
	ck_assert_int_eq(cp_profile_str(p, ""), 0);
	ck_assert_int_eq(cp_profile_str(p, NULL), 0);
	ck_assert_int_eq(cp_profile_strn(p, "xyz", 0), 0);
	foo = cp_profile_str(p, "foo");
	ck_assert_int_gt(foo, 0);
	ck_assert_int_eq(cp_profile_str(p, "foo"), foo);
	ck_assert_int_eq(cp_profile_strn(p, "foobar", 3), foo);
	/* an embedded NUL ends the string */
	ck_assert_int_eq(cp_profile_strn(p, "foo\0bar", 7), foo);
	ck_assert_int_eq(cp_profile_strn(p, "\0bar", 4), 0);
	ck_assert_int_ne(cp_profile_str(p, "bar"), foo);
	ck_assert_str_eq(cp_profile_string(p, (uint32_t)foo), "foo");
	ck_assert_uint_eq(p->strs.n, 3);
	/* a new profile has the empty stack and the empty label set */
	ck_assert_uint_eq(p->nstacks, 1);
	ck_assert_uint_eq(p->stacks[0].len, 0);
	ck_assert_uint_eq(p->nlabelsets, 1);
	ck_assert_int_eq(cp_profile_stack(p, NULL, 0), 0);
	ck_assert_int_eq(cp_profile_labelset(p, NULL, 0), 0);
	cp_profile_free(p);
	cp_profile_free(NULL);
}
END_TEST

/* ---- entities ---- */

START_TEST(test_functions_dedup)
{
	struct cp_profile *p = cp_profile_new();
	struct cp_function a = { str(p, "main"), str(p, "main"), str(p, "main.c"), 10 };
	struct cp_function b = a;

	ck_assert_int_eq(cp_profile_function(p, &a), 1);
	ck_assert_int_eq(cp_profile_function(p, &b), 1);
	b.start_line = 11;
	ck_assert_int_eq(cp_profile_function(p, &b), 2);
	b = a;
	b.filename = str(p, "other.c");
	ck_assert_int_eq(cp_profile_function(p, &b), 3);
	b = a;
	b.system_name = str(p, "_main");
	ck_assert_int_eq(cp_profile_function(p, &b), 4);
	ck_assert_int_eq(cp_profile_function(p, &a), 1);
	ck_assert_uint_eq(p->nfunctions, 4);
	ck_assert_int_eq(p->functions[1].start_line, 11);
	cp_profile_free(p);
}
END_TEST

START_TEST(test_mappings_dedup)
{
	struct cp_profile *p = cp_profile_new();
	struct cp_mapping m = { 0x400000, 0x401001, 0, str(p, "/usr/bin/prog"), 0, true, true, false, false };
	struct cp_mapping n = m;

	ck_assert_int_eq(cp_profile_mapping(p, &m), 1);
	/* another start, same size once rounded up to 4 KiB, same offset and file */
	n.start = 0x7f0000;
	n.limit = 0x7f2000;
	ck_assert_int_eq(cp_profile_mapping(p, &n), 1);
	ck_assert_uint_eq(p->mappings[0].start, 0x400000); /* the first one stays */
	/* a different offset, file or rounded size: another mapping */
	n = m;
	n.offset = 0x1000;
	ck_assert_int_eq(cp_profile_mapping(p, &n), 2);
	n = m;
	n.filename = str(p, "/usr/lib/libc.so.6");
	ck_assert_int_eq(cp_profile_mapping(p, &n), 3);
	n = m;
	n.limit = m.start + 0x3000;
	ck_assert_int_eq(cp_profile_mapping(p, &n), 4);
	/* a build id identifies the file whatever its name */
	m.build_id = str(p, "abc123");
	m.filename = str(p, "/a/prog");
	ck_assert_int_eq(cp_profile_mapping(p, &m), 5);
	m.filename = str(p, "/b/prog");
	m.start = 0x10000000;
	m.limit = 0x10002000;
	ck_assert_int_eq(cp_profile_mapping(p, &m), 5);
	ck_assert_uint_eq(p->nmappings, 5);
	cp_profile_free(p);
}
END_TEST

START_TEST(test_locations_dedup)
{
	struct cp_profile *p = cp_profile_new();
	struct cp_function f = { str(p, "f"), 0, 0, 0 }, g = { str(p, "g"), 0, 0, 0 };
	struct cp_line lines[2] = { { 0, 10, 0 }, { 0, 20, 3 } };
	int64_t a;

	lines[0].function = (uint32_t)cp_profile_function(p, &f);
	lines[1].function = (uint32_t)cp_profile_function(p, &g);
	a = cp_profile_location(p, 0, 0x1000, lines, 2, false);
	ck_assert_int_eq(a, 1);
	ck_assert_int_eq(cp_profile_location(p, 0, 0x1000, lines, 2, false), 1);
	ck_assert_int_eq(cp_profile_location(p, 0, 0x1000, lines, 1, false), 2); /* fewer lines */
	ck_assert_int_eq(cp_profile_location(p, 0, 0x1004, lines, 2, false), 3);
	ck_assert_int_eq(cp_profile_location(p, 0, 0x1000, lines, 2, true), 4);
	lines[1].column = 4;
	ck_assert_int_eq(cp_profile_location(p, 0, 0x1000, lines, 2, false), 5);
	lines[1].column = 3;
	ck_assert_int_eq(cp_profile_location(p, 0, 0x1000, lines, 2, false), 1);
	ck_assert_int_eq(cp_profile_location(p, 0, 0x2000, NULL, 0, false), 6);
	ck_assert_int_eq(cp_profile_location(p, 0, 0x2000, NULL, 0, false), 6);
	ck_assert_uint_eq(p->nlocations, 6);
	ck_assert_uint_eq(cp_profile_loc(p, 1)->nlines, 2);
	ck_assert_int_eq(p->lines[cp_profile_loc(p, 1)->line_off + 1].line, 20);
	ck_assert_uint_eq(cp_profile_loc(p, 6)->nlines, 0);
	cp_profile_free(p);
}
END_TEST

/* locations of one profile made another's (the recorder's open waits across
 * a flush): the same mapping, address, functions and lines, new ids; 0 stays */
START_TEST(test_import_locations)
{
	struct cp_profile *src = cp_profile_new(), *dst = cp_profile_new();
	struct cp_mapping m = { .start = 0x1000, .limit = 0x9000, .filename = str(src, "/usr/bin/java") };
	struct cp_function f = { str(src, "Nap.nap (Nap.java)"), str(src, "Nap.nap"), str(src, "Nap.java"), 3 },
			   g = { str(src, "JVM_Sleep"), str(src, "JVM_Sleep"), 0, 0 };
	struct cp_line lines[2] = { { 0, 4, 0 }, { 0, 0, 0 } };
	uint32_t locs[4];
	const struct cp_location *l;
	int64_t mid, other;

	mid = cp_profile_mapping(src, &m);
	ck_assert_int_gt(mid, 0);
	lines[0].function = (uint32_t)cp_profile_function(src, &f);
	lines[1].function = (uint32_t)cp_profile_function(src, &g);
	locs[0] = (uint32_t)cp_profile_location(src, (uint32_t)mid, 0x1234, lines, 1, false);
	locs[1] = (uint32_t)cp_profile_location(src, (uint32_t)mid, 0x2000, lines + 1, 1, false);
	locs[2] = 0;
	locs[3] = locs[0];
	/* dst has a location of its own first: the ids differ */
	other = cp_profile_location(dst, 0, 0x42, NULL, 0, false);
	ck_assert_int_eq(other, 1);
	ck_assert_int_eq(cp_profile_import_locations(dst, src, locs, 4), 0);
	ck_assert_uint_eq(locs[0], 2);
	ck_assert_uint_eq(locs[1], 3);
	ck_assert_uint_eq(locs[2], 0);
	ck_assert_uint_eq(locs[3], locs[0]);
	l = cp_profile_loc(dst, locs[0]);
	ck_assert_uint_eq(l->address, 0x1234);
	ck_assert_uint_eq(l->nlines, 1);
	ck_assert_int_eq(dst->lines[l->line_off].line, 4);
	ck_assert_str_eq(cp_profile_string(dst, dst->functions[dst->lines[l->line_off].function - 1].name),
			 "Nap.nap (Nap.java)");
	ck_assert_str_eq(cp_profile_string(dst, dst->functions[dst->lines[l->line_off].function - 1].filename),
			 "Nap.java");
	ck_assert_str_eq(cp_profile_string(dst, dst->mappings[l->mapping - 1].filename), "/usr/bin/java");
	l = cp_profile_loc(dst, locs[1]);
	ck_assert_str_eq(cp_profile_string(dst, dst->functions[dst->lines[l->line_off].function - 1].name), "JVM_Sleep");
	/* an id src does not have is left as none */
	locs[0] = 99;
	ck_assert_int_eq(cp_profile_import_locations(dst, src, locs, 1), 0);
	ck_assert_uint_eq(locs[0], 0);
	cp_profile_free(src);
	cp_profile_free(dst);
}
END_TEST

/* symbols learnt late: a location's lines are replaced, and it is found by
 * its new lines (not its old ones) */
START_TEST(test_location_set_lines)
{
	struct cp_profile *p = cp_profile_new();
	struct cp_function f = { str(p, "f"), 0, 0, 0 }, g = { str(p, "g"), 0, 0, 0 };
	struct cp_line lines[2] = { { 0, 10, 0 }, { 0, 20, 0 } };

	lines[0].function = (uint32_t)cp_profile_function(p, &f);
	lines[1].function = (uint32_t)cp_profile_function(p, &g);
	ck_assert_int_eq(cp_profile_location(p, 1, 0x1000, NULL, 0, false), 1); /* bare: no symbols yet */
	ck_assert_int_eq(cp_profile_location(p, 1, 0x2000, lines, 1, false), 2);
	ck_assert_int_eq(cp_profile_set_lines(p, 1, lines, 2), 0);
	ck_assert_uint_eq(cp_profile_loc(p, 1)->nlines, 2);
	ck_assert_uint_eq(p->lines[cp_profile_loc(p, 1)->line_off + 1].function, lines[1].function);
	ck_assert_int_eq(cp_profile_location(p, 1, 0x1000, lines, 2, false), 1);  /* found by its new lines */
	ck_assert_int_eq(cp_profile_location(p, 1, 0x1000, NULL, 0, false), 3);   /* the old key is free */
	ck_assert_int_eq(cp_profile_loc(p, 2)->nlines, 1);                        /* the others untouched */
	ck_assert_int_eq(cp_profile_set_lines(p, 3, lines, 2), 0);                /* equal to 1: both stand */
	ck_assert_int_eq(cp_profile_location(p, 1, 0x1000, lines, 2, false), 1);
	ck_assert_uint_eq(p->nlocations, 3);
	cp_profile_free(p);
}
END_TEST

START_TEST(test_stacks_dedup)
{
	struct cp_profile *p = cp_profile_new();
	uint32_t a[3] = { 1, 2, 3 }, b[3] = { 3, 2, 1 };
	int64_t s;

	fn_loc(p, "x");
	fn_loc(p, "y");
	fn_loc(p, "z");
	s = cp_profile_stack(p, a, 3);
	ck_assert_int_eq(s, 1);
	ck_assert_int_eq(cp_profile_stack(p, a, 3), 1);
	ck_assert_int_eq(cp_profile_stack(p, b, 3), 2); /* order matters */
	ck_assert_int_eq(cp_profile_stack(p, a, 2), 3); /* a prefix is another stack */
	ck_assert_int_eq(cp_profile_stack(p, a, 0), 0);
	ck_assert_uint_eq(p->nstacks, 4);
	ck_assert_uint_eq(p->stacks[2].len, 3);
	ck_assert_uint_eq(p->stack_locs[p->stacks[2].off], 3);
	cp_profile_free(p);
}
END_TEST

START_TEST(test_labelsets_dedup)
{
	struct cp_profile *p = cp_profile_new();
	struct cp_label ab[2], ba[2], many[20], rev[20];
	const struct cp_span *s;
	int64_t id;
	int i;

	ab[0] = (struct cp_label){ str(p, "thread"), str(p, "main"), 0, 0 };
	ab[1] = (struct cp_label){ str(p, "bytes"), 0, 4096, str(p, "bytes") };
	ba[0] = ab[1];
	ba[1] = ab[0];
	id = cp_profile_labelset(p, ab, 2);
	ck_assert_int_eq(id, 1);
	ck_assert_int_eq(cp_profile_labelset(p, ba, 2), 1);
	ck_assert_int_eq(cp_profile_labelset(p, ab, 1), 2);
	ba[0].num = 8192; /* another value */
	ck_assert_int_eq(cp_profile_labelset(p, ba, 2), 3);
	ba[0].num = 4096;
	ba[0].num_unit = 0; /* another unit */
	ck_assert_int_eq(cp_profile_labelset(p, ba, 2), 4);
	/* the stored set is sorted */
	s = &p->labelsets[1];
	ck_assert_uint_eq(s->len, 2);
	ck_assert_uint_le(p->labels[s->off].key, p->labels[s->off + 1].key);
	/* more than fit the on-stack buffer, in any order */
	for (i = 0; i < 20; i++) {
		char k[16];

		snprintf(k, sizeof(k), "k%d", i);
		many[i] = (struct cp_label){ str(p, k), 0, i, 0 };
		rev[19 - i] = many[i];
	}
	id = cp_profile_labelset(p, many, 20);
	ck_assert_int_eq(id, 5);
	ck_assert_int_eq(cp_profile_labelset(p, rev, 20), 5);
	ck_assert_uint_eq(p->nlabelsets, 6);
	cp_profile_free(p);
}
END_TEST

/* ---- samples ---- */

START_TEST(test_add_sample_sums)
{
	struct cp_profile *p = profile_with("samples/count,cpu/nanoseconds", "cpu/nanoseconds", 10000000);
	struct cp_label l = { str(p, "thread"), str(p, "worker"), 0, 0 };
	int64_t v1[2] = { 1, 10000000 }, v2[2] = { 2, 20000000 };
	uint32_t st = stack_of(p, "main;work");
	int64_t ls = cp_profile_labelset(p, &l, 1);

	ck_assert_int_eq(cp_profile_add_sample(p, st, 0, v1), 0);
	ck_assert_int_eq(cp_profile_add_sample(p, st, 0, v2), 0);
	ck_assert_uint_eq(p->nsamples, 1);
	ck_assert_int_eq(cp_profile_values(p, 0)[0], 3);
	ck_assert_int_eq(cp_profile_values(p, 0)[1], 30000000);
	/* the same stack with other labels is another sample */
	ck_assert_int_eq(cp_profile_add_sample(p, st, (uint32_t)ls, v1), 0);
	ck_assert_uint_eq(p->nsamples, 2);
	ck_assert_int_eq(cp_profile_values(p, 1)[0], 1);
	ck_assert_int_eq(cp_profile_values(p, 0)[0], 3);
	/* another stack */
	ck_assert_int_eq(cp_profile_add_sample(p, stack_of(p, "main"), 0, v2), 0);
	ck_assert_uint_eq(p->nsamples, 3);
	ck_assert_int_eq(cp_profile_total(p, 0), 6);
	ck_assert_int_eq(cp_profile_total(p, 1), 60000000);
	ck_assert_int_eq(value_of(p, "main;work", 1), 40000000);
	/* missing stack or label set */
	ck_assert_int_eq(cp_profile_add_sample(p, 999, 0, v1), -EINVAL);
	ck_assert_int_eq(cp_profile_add_sample(p, st, 999, v1), -EINVAL);
	ck_assert_uint_eq(p->nsamples, 3);
	/* sample types are fixed once there are samples */
	ck_assert_int_eq(cp_profile_add_sample_type(p, "wall", "nanoseconds"), -EBUSY);
	ck_assert_uint_eq(p->ntypes, 2);
	cp_profile_free(p);
}
END_TEST

START_TEST(test_sample_index)
{
	struct cp_profile *p = profile_with("samples/count,cpu/nanoseconds", "cpu/nanoseconds", 1);
	struct cp_profile *e = cp_profile_new();
	int r;

	ck_assert_int_eq(cp_profile_sample_index(p, "samples"), 0);
	ck_assert_int_eq(cp_profile_sample_index(p, "cpu"), 1);
	ck_assert_int_eq(cp_profile_sample_index(p, "cpu/nanoseconds"), 1);
	ck_assert_int_eq(cp_profile_sample_index(p, "samples/count"), 0);
	ck_assert_int_eq(cp_profile_sample_index(p, "0"), 0);
	ck_assert_int_eq(cp_profile_sample_index(p, "1"), 1);
	/* no default: the last */
	ck_assert_int_eq(cp_profile_sample_index(p, NULL), 1);
	ck_assert_int_eq(cp_profile_sample_index(p, ""), 1);
	/* the default sample type wins */
	p->default_sample_type = str(p, "samples");
	ck_assert_int_eq(cp_profile_sample_index(p, NULL), 0);
	ck_assert_int_eq(cp_profile_sample_index(p, "cpu"), 1);
	/* a default that names no type: the last */
	p->default_sample_type = str(p, "alloc_space");
	ck_assert_int_eq(cp_profile_sample_index(p, NULL), 1);

	cp_error_clear();
	r = cp_profile_sample_index(p, "alloc");
	ck_assert_int_eq(r, -ENOENT);
	ck_assert_str_eq(cp_errmsg(r), "no sample type 'alloc' in this profile (it has: samples, cpu)");
	ck_assert_int_eq(cp_profile_sample_index(p, "cpu/bytes"), -ENOENT);
	ck_assert_int_eq(cp_profile_sample_index(p, "cp"), -ENOENT);
	ck_assert_int_eq(cp_profile_sample_index(p, "2"), -ENOENT);
	ck_assert_int_eq(cp_profile_sample_index(p, "-1"), -ENOENT);
	ck_assert_contains(cp_errmsg(ENOENT), "'-1'");

	ck_assert_int_eq(cp_profile_sample_index(e, NULL), -ENOENT);
	ck_assert_contains(cp_errmsg(ENOENT), "no sample types");
	cp_profile_free(e);
	cp_profile_free(p);
}
END_TEST

/* ---- merge ---- */

START_TEST(test_merge_incompatible)
{
	struct cp_profile *a = profile_with("samples/count,cpu/nanoseconds", "cpu/nanoseconds", 10);
	struct cp_profile *heap = profile_with("alloc_objects/count,alloc_space/bytes", "space/bytes", 512);
	struct cp_profile *one = profile_with("samples/count", "cpu/nanoseconds", 10);
	struct cp_profile *wall = profile_with("samples/count,wall/nanoseconds", "cpu/nanoseconds", 10);
	struct cp_profile *us = profile_with("samples/count,cpu/microseconds", "cpu/nanoseconds", 10);
	struct cp_profile *dst = cp_profile_new();
	int r;

	add2(a, "main;f", 1, 10);
	add2(heap, "main;g", 1, 512);
	ck_assert_int_eq(cp_profile_merge(dst, a, NULL), 0);
	ck_assert_uint_eq(dst->nsamples, 1);

	cp_error_clear();
	r = cp_profile_merge(dst, heap, NULL);
	ck_assert_int_eq(r, -EINVAL);
	ck_assert_contains(cp_errmsg(r), "period");
	ck_assert_contains(cp_errmsg(r), "cpu/nanoseconds");
	ck_assert_contains(cp_errmsg(r), "space/bytes");
	ck_assert_int_eq(cp_profile_compatible(dst, heap), -EINVAL);

	r = cp_profile_merge(dst, one, NULL);
	ck_assert_int_eq(r, -EINVAL);
	ck_assert_contains(cp_errmsg(r), "2 and 1");

	r = cp_profile_merge(dst, wall, NULL);
	ck_assert_int_eq(r, -EINVAL);
	ck_assert_contains(cp_errmsg(r), "cpu/nanoseconds");
	ck_assert_contains(cp_errmsg(r), "wall/nanoseconds");

	r = cp_profile_merge(dst, us, NULL);
	ck_assert_int_eq(r, -EINVAL);
	ck_assert_contains(cp_errmsg(r), "cpu/microseconds");

	/* nothing was merged by the failed attempts */
	ck_assert_uint_eq(dst->nsamples, 1);
	ck_assert_int_eq(cp_profile_total(dst, 1), 10);
	/* an empty profile is compatible with anything */
	cp_profile_free(dst);
	dst = cp_profile_new();
	ck_assert_int_eq(cp_profile_compatible(dst, heap), 0);
	ck_assert_int_eq(cp_profile_compatible(a, a), 0);
	cp_profile_free(a);
	cp_profile_free(heap);
	cp_profile_free(one);
	cp_profile_free(wall);
	cp_profile_free(us);
	cp_profile_free(dst);
}
END_TEST

static void add_comment(struct cp_profile *p, const char *c)
{
	uint32_t *n = realloc(p->comments, (p->ncomments + 1) * sizeof(*n));

	ck_assert_ptr_nonnull(n);
	p->comments = n;
	n[p->ncomments++] = str(p, c);
}

START_TEST(test_merge_header)
{
	struct cp_profile *a = profile_with("samples/count,cpu/nanoseconds", "cpu/nanoseconds", 10000000);
	struct cp_profile *b = profile_with("samples/count,cpu/nanoseconds", "cpu/nanoseconds", 20000000);
	struct cp_profile *c = profile_with("samples/count,cpu/nanoseconds", "cpu/nanoseconds", 5);
	struct cp_profile *dst;

	a->time_nanos = 2000;
	a->duration_nanos = 100;
	a->default_sample_type = str(a, "cpu");
	a->doc_url = str(a, "https://example.org/doc");
	a->drop_frames = str(a, "runtime\\..*");
	add_comment(a, "c1");
	add_comment(a, "c2");
	b->time_nanos = 1000;
	b->duration_nanos = 50;
	add_comment(b, "c2");
	add_comment(b, "c3");
	c->time_nanos = 0;
	c->duration_nanos = 7;
	add2(a, "main", 1, 1);
	add2(b, "main", 1, 1);
	add2(c, "main", 1, 1);

	dst = cp_profile_copy(a, NULL);
	ck_assert_ptr_nonnull(dst);
	ck_assert_int_eq(dst->period, 10000000);
	ck_assert_int_eq(dst->time_nanos, 2000);
	ck_assert_int_eq(dst->duration_nanos, 100);
	ck_assert_str_eq(cp_profile_string(dst, dst->period_type.type), "cpu");
	ck_assert_str_eq(cp_profile_string(dst, dst->period_type.unit), "nanoseconds");
	ck_assert_str_eq(cp_profile_string(dst, dst->default_sample_type), "cpu");
	ck_assert_str_eq(cp_profile_string(dst, dst->doc_url), "https://example.org/doc");
	ck_assert_str_eq(cp_profile_string(dst, dst->drop_frames), "runtime\\..*");
	ck_assert_uint_eq(dst->ntypes, 2);
	ck_assert_str_eq(cp_profile_string(dst, dst->sample_types[1].unit), "nanoseconds");

	ck_assert_int_eq(cp_profile_merge(dst, b, NULL), 0);
	ck_assert_int_eq(dst->period, 20000000);  /* the max */
	ck_assert_int_eq(dst->time_nanos, 1000);  /* the earliest */
	ck_assert_int_eq(dst->duration_nanos, 150); /* the sum */
	ck_assert_uint_eq(dst->ncomments, 3);     /* c1 c2 c3, c2 once */
	ck_assert_str_eq(cp_profile_string(dst, dst->comments[0]), "c1");
	ck_assert_str_eq(cp_profile_string(dst, dst->comments[1]), "c2");
	ck_assert_str_eq(cp_profile_string(dst, dst->comments[2]), "c3");

	ck_assert_int_eq(cp_profile_merge(dst, c, NULL), 0);
	ck_assert_int_eq(dst->period, 20000000);
	ck_assert_int_eq(dst->time_nanos, 1000); /* a zero time is no time */
	ck_assert_int_eq(dst->duration_nanos, 157);
	ck_assert_uint_eq(dst->ncomments, 3);
	ck_assert_uint_eq(dst->nsamples, 1);
	ck_assert_int_eq(cp_profile_values(dst, 0)[0], 3);
	cp_profile_free(dst);

	/* starting from a profile without a time, the first non-zero one */
	dst = cp_profile_copy(c, NULL);
	ck_assert_ptr_nonnull(dst);
	ck_assert_int_eq(dst->time_nanos, 0);
	ck_assert_int_eq(cp_profile_merge(dst, a, NULL), 0);
	ck_assert_int_eq(dst->time_nanos, 2000);
	ck_assert_int_eq(dst->period, 10000000);
	cp_profile_free(dst);
	cp_profile_free(a);
	cp_profile_free(b);
	cp_profile_free(c);
}
END_TEST

START_TEST(test_merge_samples)
{
	struct cp_profile *a = profile_with("samples/count,cpu/nanoseconds", "cpu/nanoseconds", 10);
	struct cp_profile *b = profile_with("samples/count,cpu/nanoseconds", "cpu/nanoseconds", 10);
	struct cp_profile *dst = cp_profile_new();

	/* b interns its strings in another order, so its ids differ */
	add2(b, "zz;yy", 7, 70);
	add2(b, "main;work;alpha", 1, 10);
	add2(a, "main;work;alpha", 2, 20);
	add2(a, "main;work;beta", 3, 30);
	ck_assert_int_eq(cp_profile_merge(dst, a, NULL), 0);
	ck_assert_int_eq(cp_profile_merge(dst, b, NULL), 0);
	ck_assert_uint_eq(dst->nsamples, 3);
	ck_assert_int_eq(value_of(dst, "main;work;alpha", 0), 3);
	ck_assert_int_eq(value_of(dst, "main;work;alpha", 1), 30);
	ck_assert_int_eq(value_of(dst, "main;work;beta", 1), 30);
	ck_assert_int_eq(value_of(dst, "zz;yy", 1), 70);
	ck_assert_int_eq(cp_profile_total(dst, 1), 130);
	/* functions and locations are shared, not duplicated */
	ck_assert_uint_eq(dst->nfunctions, 6);
	ck_assert_uint_eq(dst->nlocations, 6);
	cp_profile_free(a);
	cp_profile_free(b);
	cp_profile_free(dst);
}
END_TEST

/* A profile with one sample in a mapped library: mapping [start, limit) of
 * /usr/lib/libfoo.so at file offset off; the location is start + 0x100. */
static struct cp_profile *mapped_profile(uint64_t start, uint64_t limit, uint64_t off, int64_t v)
{
	struct cp_profile *p = simple_profile();
	struct cp_mapping m = { start, limit, off, str(p, "/usr/lib/libfoo.so"), 0, true, false, false, false };
	struct cp_function f = { str(p, "foo"), 0, 0, 0 };
	struct cp_line line = { 0, 42, 0 };
	int64_t mid = cp_profile_mapping(p, &m), lid, st;
	uint32_t loc;

	line.function = (uint32_t)cp_profile_function(p, &f);
	ck_assert_int_eq(mid, 1);
	lid = cp_profile_location(p, (uint32_t)mid, start + 0x100, &line, 1, false);
	ck_assert_int_gt(lid, 0);
	loc = (uint32_t)lid;
	st = cp_profile_stack(p, &loc, 1);
	ck_assert_int_gt(st, 0);
	ck_assert_int_eq(cp_profile_add_sample(p, (uint32_t)st, 0, &v), 0);
	return p;
}

START_TEST(test_merge_mappings)
{
	/* same file, sizes 0x1010 and 0x1ff0 (both 0x2000 rounded), same offset,
	 * loaded at different addresses */
	struct cp_profile *a = mapped_profile(0x400000, 0x401010, 0, 3);
	struct cp_profile *b = mapped_profile(0x7f0000, 0x7f1ff0, 0, 4);
	struct cp_profile *c = mapped_profile(0x900000, 0x902000, 0x2000, 5); /* another offset */
	struct cp_profile *dst = cp_profile_new();

	ck_assert_int_eq(cp_profile_merge(dst, a, NULL), 0);
	ck_assert_int_eq(cp_profile_merge(dst, b, NULL), 0);
	ck_assert_uint_eq(dst->nmappings, 1);
	ck_assert_uint_eq(dst->mappings[0].start, 0x400000);
	ck_assert_uint_eq(dst->mappings[0].limit, 0x401010);
	ck_assert(dst->mappings[0].has_functions);
	/* b's address rebased onto a's mapping: the same location, one sample */
	ck_assert_uint_eq(dst->nlocations, 1);
	ck_assert_uint_eq(cp_profile_loc(dst, 1)->address, 0x400100);
	ck_assert_uint_eq(cp_profile_loc(dst, 1)->mapping, 1);
	ck_assert_uint_eq(dst->nsamples, 1);
	ck_assert_int_eq(cp_profile_values(dst, 0)[0], 7);

	ck_assert_int_eq(cp_profile_merge(dst, c, NULL), 0);
	ck_assert_uint_eq(dst->nmappings, 2);
	ck_assert_uint_eq(dst->nlocations, 2);
	ck_assert_uint_eq(cp_profile_loc(dst, 2)->address, 0x900100);
	ck_assert_uint_eq(cp_profile_loc(dst, 2)->mapping, 2);
	ck_assert_uint_eq(dst->nsamples, 2);
	ck_assert_int_eq(cp_profile_total(dst, 0), 12);
	cp_profile_free(a);
	cp_profile_free(b);
	cp_profile_free(c);
	cp_profile_free(dst);
}
END_TEST

START_TEST(test_merge_drops_zero)
{
	struct cp_profile *a = profile_with("samples/count,cpu/nanoseconds", "cpu/nanoseconds", 10);
	struct cp_profile *dst;

	add2(a, "main;zero", 0, 0);
	add2(a, "main;half", 0, 5);
	add2(a, "main;full", 2, 20);
	ck_assert_uint_eq(a->nsamples, 3);
	dst = cp_profile_copy(a, NULL);
	ck_assert_ptr_nonnull(dst);
	ck_assert_uint_eq(dst->nsamples, 2);
	ck_assert_int_eq(value_of(dst, "main;zero", 1), 0);
	ck_assert_int_eq(value_of(dst, "main;half", 1), 5);
	ck_assert_int_eq(value_of(dst, "main;full", 0), 2);
	/* the dropped sample's functions are not carried over either */
	ck_assert_uint_eq(dst->nfunctions, 3);
	cp_profile_free(dst);
	cp_profile_free(a);
}
END_TEST

START_TEST(test_merge_scale)
{
	struct cp_profile *a = profile_with("samples/count,cpu/nanoseconds", "cpu/nanoseconds", 10);
	struct cp_merge_opts o = { 0 };
	struct cp_profile *dst;

	add2(a, "main;a", 3, 10);
	add2(a, "main;b", 1, 1);
	o.scale = 0.5;
	dst = cp_profile_copy(a, &o);
	ck_assert_ptr_nonnull(dst);
	ck_assert_int_eq(value_of(dst, "main;a", 0), 2); /* 1.5 rounds away from zero */
	ck_assert_int_eq(value_of(dst, "main;a", 1), 5);
	ck_assert_int_eq(value_of(dst, "main;b", 0), 1);
	cp_profile_free(dst);

	o.scale = 0.1; /* main;b scales to all zeros: dropped */
	dst = cp_profile_copy(a, &o);
	ck_assert_ptr_nonnull(dst);
	ck_assert_uint_eq(dst->nsamples, 1);
	ck_assert_int_eq(value_of(dst, "main;a", 1), 1);
	cp_profile_free(dst);

	o.scale = 3;
	dst = cp_profile_copy(a, &o);
	ck_assert_ptr_nonnull(dst);
	ck_assert_int_eq(cp_profile_total(dst, 0), 12);
	ck_assert_int_eq(cp_profile_total(dst, 1), 33);
	/* merging a again, unscaled (scale 0 means 1), adds */
	ck_assert_int_eq(cp_profile_merge(dst, a, NULL), 0);
	ck_assert_int_eq(cp_profile_total(dst, 1), 44);
	o.scale = -1; /* subtracting, as diff does */
	ck_assert_int_eq(cp_profile_merge(dst, a, &o), 0);
	ck_assert_int_eq(value_of(dst, "main;a", 1), 30);
	ck_assert_int_eq(value_of(dst, "main;b", 1), 3);
	cp_profile_free(dst);
	cp_profile_free(a);
}
END_TEST

START_TEST(test_merge_tag)
{
	struct cp_profile *a = simple_profile(), *b = simple_profile(), *dst = cp_profile_new();
	struct cp_merge_opts o = { 0 };
	struct cp_label l = { str(a, "thread"), str(a, "main"), 0, 0 };
	const struct cp_label *lab;
	int64_t v = 4, ls = cp_profile_labelset(a, &l, 1);
	uint32_t i, tagged = 0;

	ck_assert_int_eq(cp_profile_add_sample(a, stack_of(a, "main;f"), (uint32_t)ls, &v), 0);
	add(a, "main;g", 1);
	add(b, "main;f", 6);
	o.tag_key = "source";
	o.tag_value = "before.pb.gz";
	ck_assert_int_eq(cp_profile_merge(dst, a, &o), 0);
	o.tag_value = "after.pb.gz";
	ck_assert_int_eq(cp_profile_merge(dst, b, &o), 0);
	/* main;f from a and from b stay apart, told by their tag */
	ck_assert_uint_eq(dst->nsamples, 3);
	ck_assert_int_eq(value_of(dst, "main;f", 0), 10);
	for (i = 0; i < dst->nsamples; i++) {
		char buf[256];

		lab = find_label(dst, dst->samples[i].labels, "source");
		ck_assert_ptr_nonnull(lab);
		stack_text(dst, dst->samples[i].stack, buf, sizeof(buf));
		if (cp_profile_values(dst, i)[0] == 6) {
			ck_assert_str_eq(cp_profile_string(dst, lab->str), "after.pb.gz");
			ck_assert_ptr_null(find_label(dst, dst->samples[i].labels, "thread"));
		} else {
			ck_assert_str_eq(cp_profile_string(dst, lab->str), "before.pb.gz");
			if (!strcmp(buf, "main;f")) {
				/* the sample's own labels are kept beside the tag */
				lab = find_label(dst, dst->samples[i].labels, "thread");
				ck_assert_ptr_nonnull(lab);
				ck_assert_str_eq(cp_profile_string(dst, lab->str), "main");
				ck_assert_uint_eq(dst->labelsets[dst->samples[i].labels].len, 2);
			}
		}
		tagged++;
	}
	ck_assert_uint_eq(tagged, 3);
	cp_profile_free(a);
	cp_profile_free(b);
	cp_profile_free(dst);
}
END_TEST

static bool keep_big(const struct cp_profile *src, uint32_t sample, void *arg)
{
	int *calls = arg;

	(*calls)++;
	return cp_profile_values(src, sample)[0] >= 5;
}

START_TEST(test_copy_keep)
{
	struct cp_profile *a = simple_profile(), *q;
	struct cp_merge_opts o = { 0 };
	int calls = 0;

	add(a, "main;small", 1);
	add(a, "main;big", 5);
	add(a, "main;bigger", 50);
	add(a, "other", 4);
	o.keep = keep_big;
	o.keep_arg = &calls;
	q = cp_profile_copy(a, &o);
	ck_assert_ptr_nonnull(q);
	ck_assert_int_eq(calls, 4);
	ck_assert_uint_eq(q->nsamples, 2);
	ck_assert_int_eq(cp_profile_total(q, 0), 55);
	ck_assert_int_eq(value_of(q, "main;big", 0), 5);
	ck_assert_int_eq(value_of(q, "main;small", 0), 0);
	ck_assert_uint_eq(q->nfunctions, 3); /* main big bigger */
	/* the source is untouched */
	ck_assert_uint_eq(a->nsamples, 4);
	ck_assert_int_eq(cp_profile_total(a, 0), 60);
	cp_profile_free(q);

	/* an incompatible merge through copy: NULL + errno */
	cp_profile_free(a);
}
END_TEST

/* ---- frames ---- */

START_TEST(test_frames_inline)
{
	struct cp_profile *p = simple_profile();
	struct cp_function inner = { str(p, "inner"), 0, str(p, "inner.h"), 0 };
	struct cp_function outer = { str(p, "outer"), 0, str(p, "outer.c"), 0 };
	struct cp_line lines[2] = { { 0, 10, 0 }, { 0, 20, 0 } };
	struct cp_frame *frames = NULL;
	uint32_t locs[3];
	size_t cap = 0;
	int64_t st;
	int n;

	lines[0].function = (uint32_t)cp_profile_function(p, &inner);
	lines[1].function = (uint32_t)cp_profile_function(p, &outer);
	locs[0] = (uint32_t)cp_profile_location(p, 0, 0x1000, lines, 2, false);
	locs[1] = fn_loc(p, "main");
	locs[2] = (uint32_t)cp_profile_location(p, 0, 0x2000, NULL, 0, false);
	st = cp_profile_stack(p, locs, 2);
	n = cp_profile_frames(p, (uint32_t)st, &frames, &cap);
	ck_assert_int_eq(n, 3);
	ck_assert_uint_ge(cap, 3);
	ck_assert_str_eq(cp_profile_string(p, frames[0].name), "inner");
	ck_assert_str_eq(cp_profile_string(p, frames[0].filename), "inner.h");
	ck_assert_int_eq(frames[0].line, 10);
	ck_assert_uint_eq(frames[0].location, locs[0]);
	ck_assert(frames[0].inlined);
	ck_assert_str_eq(cp_profile_string(p, frames[1].name), "outer");
	ck_assert_int_eq(frames[1].line, 20);
	ck_assert_uint_eq(frames[1].location, locs[0]);
	ck_assert(!frames[1].inlined);
	ck_assert_str_eq(cp_profile_string(p, frames[2].name), "main");
	ck_assert_uint_eq(frames[2].location, locs[1]);
	ck_assert(!frames[2].inlined);

	/* a location without lines is one nameless frame */
	st = cp_profile_stack(p, &locs[2], 1);
	n = cp_profile_frames(p, (uint32_t)st, &frames, &cap);
	ck_assert_int_eq(n, 1);
	ck_assert_uint_eq(frames[0].name, 0);
	ck_assert_uint_eq(frames[0].location, locs[2]);
	ck_assert(!frames[0].inlined);
	/* the empty stack has no frames */
	ck_assert_int_eq(cp_profile_frames(p, 0, &frames, &cap), 0);
	free(frames);
	cp_profile_free(p);
}
END_TEST

START_TEST(test_frame_name)
{
	struct cp_profile *p = simple_profile();
	struct cp_mapping libc = { 0x7f1234560000, 0x7f1234760000, 0x1000,
				   str(p, "/lib/x86_64-linux-gnu/libc.so.6"), 0, false, false, false, false };
	struct cp_mapping bare = { 0x500000, 0x600000, 0, str(p, "libz.so"), 0, false, false, false, false };
	struct cp_mapping anon = { 0x900000, 0xa00000, 0, 0, 0, false, false, false, false };
	struct cp_frame f = { 0, 0, 0, 0, false };
	char buf[64], small[8];
	uint32_t ml = (uint32_t)cp_profile_mapping(p, &libc), mb = (uint32_t)cp_profile_mapping(p, &bare);
	uint32_t ma = (uint32_t)cp_profile_mapping(p, &anon);

	f.location = (uint32_t)cp_profile_location(p, ml, 0x7f1234560234, NULL, 0, false);
	ck_assert_str_eq(cp_frame_name(p, &f, buf, sizeof(buf)), "libc.so.6+0x1234");
	f.location = (uint32_t)cp_profile_location(p, mb, 0x500010, NULL, 0, false);
	ck_assert_str_eq(cp_frame_name(p, &f, buf, sizeof(buf)), "libz.so+0x10");
	f.location = (uint32_t)cp_profile_location(p, ma, 0x900abc, NULL, 0, false);
	ck_assert_str_eq(cp_frame_name(p, &f, buf, sizeof(buf)), "0x900abc");
	f.location = (uint32_t)cp_profile_location(p, 0, 0xdeadbeef, NULL, 0, false);
	ck_assert_str_eq(cp_frame_name(p, &f, buf, sizeof(buf)), "0xdeadbeef");
	/* a small buffer is cut, still terminated */
	ck_assert_str_eq(cp_frame_name(p, &f, small, sizeof(small)), "0xdeadb");
	/* a named frame is its function name, whatever the location */
	f.name = str(p, "main.main");
	ck_assert_str_eq(cp_frame_name(p, &f, buf, sizeof(buf)), "main.main");
	cp_profile_free(p);
}
END_TEST

/* ---- filter ---- */

static struct cp_profile *filter_profile(void)
{
	struct cp_profile *p = simple_profile();

	add(p, "main;work;alpha", 5);
	add(p, "main;work;beta", 3);
	add(p, "main;gc", 2);
	return p;
}

/* The total of p's samples that f keeps, and through cp_profile_copy. */
static int64_t kept(const struct cp_profile *p, struct cp_filter *f)
{
	struct cp_merge_opts o = { 0 };
	struct cp_profile *q;
	int64_t direct = 0, copied;
	uint32_t i;

	for (i = 0; i < p->nsamples; i++)
		if (cp_filter_keep(p, i, f))
			direct += cp_profile_values(p, i)[0];
	o.keep = cp_filter_keep;
	o.keep_arg = f;
	q = cp_profile_copy(p, &o);
	ck_assert_ptr_nonnull(q);
	copied = cp_profile_total(q, 0);
	cp_profile_free(q);
	ck_assert_int_eq(direct, copied);
	return direct;
}

static int64_t kept_by(const struct cp_profile *p, const char *focus, const char *ignore)
{
	struct cp_filter *f = cp_filter_new(focus, ignore);
	int64_t v;

	ck_assert_ptr_nonnull(f);
	v = kept(p, f);
	cp_filter_free(f);
	return v;
}

START_TEST(test_filter_focus_ignore)
{
	struct cp_profile *p = filter_profile();

	ck_assert_int_eq(kept_by(p, NULL, NULL), 10);
	ck_assert_int_eq(kept_by(p, "alpha", NULL), 5);
	ck_assert_int_eq(kept_by(p, "lph", NULL), 5); /* unanchored */
	ck_assert_int_eq(kept_by(p, "^(alpha|gc)$", NULL), 7);
	ck_assert_int_eq(kept_by(p, "work", NULL), 8);
	ck_assert_int_eq(kept_by(p, "main", NULL), 10);
	ck_assert_int_eq(kept_by(p, "nomatch", NULL), 0);
	ck_assert_int_eq(kept_by(p, NULL, "beta"), 7);
	ck_assert_int_eq(kept_by(p, NULL, "^main$"), 0);
	ck_assert_int_eq(kept_by(p, "work", "beta"), 5);
	ck_assert_int_eq(kept_by(p, "a", "a"), 0); /* ignore wins */
	cp_profile_free(p);
}
END_TEST

START_TEST(test_filter_unsymbolized_and_inline)
{
	struct cp_profile *p = simple_profile();
	struct cp_mapping libc = { 0x7f0000000000, 0x7f0000200000, 0, str(p, "/usr/lib/libc.so.6"), 0,
				   false, false, false, false };
	struct cp_function inner = { str(p, "inlined_helper"), 0, 0, 0 }, outer = { str(p, "caller"), 0, 0, 0 };
	struct cp_line lines[2] = { { 0, 1, 0 }, { 0, 2, 0 } };
	uint32_t locs[2];
	int64_t v = 7, w = 11;

	locs[0] = (uint32_t)cp_profile_location(p, (uint32_t)cp_profile_mapping(p, &libc), 0x7f0000001234, NULL, 0, false);
	locs[1] = fn_loc(p, "main");
	ck_assert_int_eq(cp_profile_add_sample(p, (uint32_t)cp_profile_stack(p, locs, 2), 0, &v), 0);
	lines[0].function = (uint32_t)cp_profile_function(p, &inner);
	lines[1].function = (uint32_t)cp_profile_function(p, &outer);
	locs[0] = (uint32_t)cp_profile_location(p, 0, 0x4000, lines, 2, false);
	ck_assert_int_eq(cp_profile_add_sample(p, (uint32_t)cp_profile_stack(p, locs, 2), 0, &w), 0);

	ck_assert_int_eq(kept_by(p, "^libc\\.so\\.6\\+0x1234$", NULL), 7);
	ck_assert_int_eq(kept_by(p, NULL, "libc"), 11);
	ck_assert_int_eq(kept_by(p, "inlined_helper", NULL), 11); /* an inlined frame counts */
	ck_assert_int_eq(kept_by(p, NULL, "^caller$"), 7);
	ck_assert_int_eq(kept_by(p, "main", NULL), 18);
	cp_profile_free(p);
}
END_TEST

START_TEST(test_filter_bad_regex)
{
	struct cp_filter *f;

	cp_error_clear();
	errno = 0;
	f = cp_filter_new("(", NULL);
	ck_assert_ptr_null(f);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_contains(cp_errmsg(EINVAL), "--focus");
	ck_assert_contains(cp_errmsg(EINVAL), "'('");

	errno = 0;
	f = cp_filter_new("ok", "[a-");
	ck_assert_ptr_null(f);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_contains(cp_errmsg(EINVAL), "--ignore");
	ck_assert_contains(cp_errmsg(EINVAL), "[a-");

	f = cp_filter_new(NULL, NULL);
	ck_assert_ptr_nonnull(f);
	cp_filter_free(f);
	cp_filter_free(NULL);
}
END_TEST

/* main;hot_loop 5 and main;work;aaa...ab 3: (a+)+$ backtracks 2^40 ways on
 * the long name (PCRE2's default limit made it a silent "no match" after a
 * tenth of a second, for each name) */
static struct cp_profile *costly_profile(void)
{
	struct cp_profile *p = simple_profile();
	char stack[64] = "main;work;";

	memset(stack + 10, 'a', 40);
	strcpy(stack + 50, "b");
	add(p, "main;hot_loop", 5);
	add(p, stack, 3);
	return p;
}

START_TEST(test_filter_costly_regex)
{
	static const char *const opts[] = { "--focus", "--ignore" };
	int k;

	for (k = 0; k < 2; k++) {
		struct cp_filter *f = cp_filter_new(k ? NULL : "(a+)+$", k ? "(a+)+$" : NULL);
		struct cp_profile *p = costly_profile(), *q;
		char want[64];

		ck_assert_ptr_nonnull(f);
		cp_error_clear();
		errno = 0;
		q = cp_profile_filter(p, f); /* frees p */
		ck_assert_ptr_null(q);
		ck_assert_int_eq(errno, ERANGE);
		snprintf(want, sizeof(want), "%s: regex '(a+)+$' is too costly", opts[k]);
		ck_assert_contains(cp_errmsg(ERANGE), want);
		ck_assert_int_eq(cp_filter_error(f), -ERANGE);
		/* the error stays: the filter keeps nothing more */
		p = costly_profile();
		ck_assert(!cp_filter_keep(p, 0, f));
		ck_assert_int_eq(cp_filter_error(f), -ERANGE);
		cp_profile_free(p);
		cp_filter_free(f);
	}
	/* ordinary regexes over the same names */
	{
		struct cp_profile *p = costly_profile();

		ck_assert_int_eq(kept_by(p, "^(main|run).*", NULL), 8);
		ck_assert_int_eq(kept_by(p, "hot_.*", NULL), 5);
		ck_assert_int_eq(kept_by(p, "a+b$", NULL), 3);
		ck_assert_int_eq(kept_by(p, NULL, "(a+)+b$"), 5);
		ck_assert_int_eq(cp_filter_error(NULL), 0);
		cp_profile_free(p);
	}
}
END_TEST

START_TEST(test_filter_reuse)
{
	/* one filter applied to several profiles in turn, as diff does */
	struct cp_profile *p = filter_profile(), *q = simple_profile();
	struct cp_filter *f = cp_filter_new("alpha", NULL);

	add(q, "x;y;z;alpha", 9);
	add(q, "alpha2", 1);
	add(q, "x;beta", 4);
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(kept(p, f), 5);
	ck_assert_int_eq(kept(q, f), 10);
	ck_assert_int_eq(kept(p, f), 5);
	/* the profile grows: new locations are judged too */
	add(p, "main;alpha_new", 100);
	add(p, "main;delta", 1000);
	ck_assert_int_eq(kept(p, f), 105);
	cp_filter_free(f);
	cp_profile_free(p);
	cp_profile_free(q);
}
END_TEST

START_TEST(test_filter_after_free)
{
	/* a profile freed and another one allocated at the same address, with
	 * as many locations: the filter must judge the new profile, not
	 * remember the verdicts for the old one.  The allocator may or may not
	 * hand back the same block, so the reuse is made certain by moving the
	 * second profile's contents into the first one's struct. */
	struct cp_filter *f = cp_filter_new("^keep$", NULL);
	struct cp_profile *p = simple_profile(), *q = simple_profile(), tmp;

	ck_assert_ptr_nonnull(f);
	add(p, "keep", 1);
	add(p, "drop", 10);
	add(q, "drop", 100);
	add(q, "keep", 1000);
	ck_assert_uint_eq(p->nlocations, q->nlocations);
	ck_assert_int_eq(kept(p, f), 1);
	/* "free p, load q at p's address" */
	tmp = *p;
	*p = *q;
	*q = tmp;
	ck_assert_int_eq(kept(p, f), 1000);
	ck_assert_int_eq(kept(q, f), 1);
	cp_filter_free(f);
	cp_profile_free(p);
	cp_profile_free(q);
}
END_TEST

/* ---- scale: index growth ---- */

#define MANY 200000

START_TEST(test_many_strings)
{
	struct cp_strtab t;
	char buf[32];
	uint32_t i;

	ck_assert_int_eq(cp_strtab_init(&t), 0);
	for (i = 0; i < MANY; i++) {
		int n = snprintf(buf, sizeof(buf), "string-%u", i);

		ck_assert_int_eq(cp_strtab_intern(&t, buf, (size_t)n), (int64_t)i + 1);
	}
	ck_assert_uint_eq(t.n, MANY + 1);
	ck_assert_uint_eq(t.idx.count, MANY + 1);
	ck_assert_uint_gt((uint64_t)t.idx.mask + 1, MANY); /* the index grew */
	for (i = 0; i < MANY; i += 7) {
		int n = snprintf(buf, sizeof(buf), "string-%u", i);

		ck_assert_int_eq(cp_strtab_intern(&t, buf, (size_t)n), (int64_t)i + 1);
		ck_assert_int_eq(cp_strtab_find(&t, buf, (size_t)n), (int64_t)i + 1);
		ck_assert_str_eq(cp_strtab_get(&t, i + 1), buf);
	}
	ck_assert_int_eq(cp_strtab_find(&t, "string-200000", 13), -ENOENT);
	ck_assert_uint_eq(t.n, MANY + 1);
	cp_strtab_release(&t);
}
END_TEST

START_TEST(test_many_samples)
{
	struct cp_profile *p = simple_profile();
	struct cp_function f = { str(p, "leaf"), 0, 0, 0 };
	struct cp_line line = { 0, 0, 0 };
	uint64_t expect = 0;
	uint32_t i, locs[2];
	int64_t id;

	line.function = (uint32_t)cp_profile_function(p, &f);
	locs[1] = fn_loc(p, "root");
	for (i = 0; i < MANY; i++) {
		struct cp_label l = { str(p, "n"), 0, (int64_t)(i % 1000), 0 };
		int64_t v = (int64_t)(i % 13) + 1, ls;

		line.line = (int64_t)i;
		id = cp_profile_location(p, 0, 0x1000 + i, &line, 1, false);
		ck_assert_int_eq(id, (int64_t)i + 2);
		locs[0] = (uint32_t)id;
		id = cp_profile_stack(p, locs, 2);
		ck_assert_int_eq(id, (int64_t)i + 1);
		ls = cp_profile_labelset(p, &l, 1);
		ck_assert_int_eq(ls, (int64_t)(i % 1000) + 1);
		ck_assert_int_eq(cp_profile_add_sample(p, (uint32_t)id, (uint32_t)ls, &v), 0);
		expect += (uint64_t)v;
	}
	ck_assert_uint_eq(p->nlocations, MANY + 1);
	ck_assert_uint_eq(p->nstacks, MANY + 1);
	ck_assert_uint_eq(p->nlabelsets, 1001);
	ck_assert_uint_eq(p->nsamples, MANY);
	ck_assert_int_eq(cp_profile_total(p, 0), (int64_t)expect);
	/* everything again: found, nothing new, values doubled */
	for (i = 0; i < MANY; i += 3) {
		struct cp_label l = { str(p, "n"), 0, (int64_t)(i % 1000), 0 };
		int64_t v = (int64_t)(i % 13) + 1;

		line.line = (int64_t)i;
		locs[0] = (uint32_t)cp_profile_location(p, 0, 0x1000 + i, &line, 1, false);
		ck_assert_uint_eq(locs[0], i + 2);
		id = cp_profile_stack(p, locs, 2);
		ck_assert_int_eq(id, (int64_t)i + 1);
		ck_assert_int_eq(cp_profile_add_sample(p, (uint32_t)id, (uint32_t)cp_profile_labelset(p, &l, 1), &v), 0);
		expect += (uint64_t)v;
	}
	ck_assert_uint_eq(p->nsamples, MANY);
	ck_assert_uint_eq(p->nlocations, MANY + 1);
	ck_assert_int_eq(cp_profile_total(p, 0), (int64_t)expect);
	ck_assert_int_eq(cp_profile_values(p, 3)[0], 2 * (3 % 13 + 1));
	ck_assert_int_eq(cp_profile_values(p, 4)[0], 4 % 13 + 1);
	cp_profile_free(p);
}
END_TEST

static int u32_eq(const void *ctx, uint32_t id, const void *key)
{
	return ((const uint32_t *)ctx)[id] == *(const uint32_t *)key;
}

START_TEST(test_index_direct)
{
	/* the index on its own: equality is the caller's, colliding hashes work */
	struct cp_index ix = { 0 };
	uint32_t keys[1000] = { 0 }, i, k;

	k = 3;
	ck_assert_uint_eq(cp_index_find(&ix, 5, u32_eq, keys, &k), UINT32_MAX);
	for (i = 0; i < 1000; i++) {
		keys[i] = i * 3;
		/* only 8 distinct hashes: long probe chains, wrapping round */
		ck_assert_int_eq(cp_index_add(&ix, (i % 8) * 0x20000001u, i), 0);
	}
	ck_assert_uint_eq(ix.count, 1000);
	ck_assert_uint_ge((uint64_t)ix.mask + 1, 1334); /* at most 3/4 full */
	for (i = 0; i < 1000; i++) {
		k = i * 3;
		ck_assert_uint_eq(cp_index_find(&ix, (i % 8) * 0x20000001u, u32_eq, keys, &k), i);
		/* the right key under the wrong hash is not found */
		ck_assert_uint_eq(cp_index_find(&ix, (i % 8) * 0x20000001u + 1, u32_eq, keys, &k), UINT32_MAX);
	}
	k = 1; /* not a multiple of 3 */
	ck_assert_uint_eq(cp_index_find(&ix, 0, u32_eq, keys, &k), UINT32_MAX);
	cp_index_release(&ix);
	ck_assert_ptr_null(ix.slots);
	ck_assert_uint_eq(ix.count, 0);
	/* hashing: deterministic, seed and length matter */
	ck_assert_uint_eq(cp_hash_bytes("abcdefghij", 10, 1), cp_hash_bytes("abcdefghij", 10, 1));
	ck_assert_uint_ne(cp_hash_bytes("abcdefghij", 10, 1), cp_hash_bytes("abcdefghij", 10, 2));
	ck_assert_uint_ne(cp_hash_bytes("abc\0", 4, 0), cp_hash_bytes("abc", 3, 0));
	ck_assert_uint_ne(cp_hash_u64(1, 0), cp_hash_u64(2, 0));
}
END_TEST

/* cumulative.h: two scrapes of a cumulative profile (alloc_space since the start, inuse_space now) */
START_TEST(test_cumulative_delta)
{
	struct cp_profile *a = profile_with("alloc_space/bytes,inuse_space/bytes", "space/bytes", 0);
	struct cp_profile *b = profile_with("alloc_space/bytes,inuse_space/bytes", "space/bytes", 0);
	struct cp_profile *c = profile_with("alloc_space/bytes,inuse_space/bytes", "space/bytes", 0);
	struct cp_profile *d = NULL;
	bool restarted = true;

	ck_assert_int_eq(cp_value_kind("alloc_space"), CP_VALUE_CUMULATIVE);
	ck_assert_int_eq(cp_value_kind("inuse_space"), CP_VALUE_GAUGE);
	ck_assert_int_eq(cp_value_kind("cpu"), CP_VALUE_DELTA);
	add2(a, "main;f", 100, 40);
	add2(a, "main;g", 50, 10);
	a->time_nanos = 1000;
	add2(b, "main;f", 130, 35); /* f allocated 30 more, holds 35 */
	add2(b, "main;g", 50, 10);  /* g nothing more */
	add2(b, "main;h", 7, 0);    /* h is new */
	b->time_nanos = 4000;
	ck_assert(cp_profile_is_cumulative(a));
	/* the first scrape: only the gauge is kept */
	ck_assert_int_eq(cp_cumulative_delta(a, NULL, &d, &restarted), 0);
	ck_assert(!restarted);
	ck_assert_uint_eq(d->ntypes, 1);
	ck_assert_str_eq(cp_profile_string(d, d->sample_types[0].type), "inuse_space");
	ck_assert_int_eq(value_of(d, "main;f", 0), 40);
	cp_profile_free(d);
	/* the second: the growth of the cumulative value, the gauge as it is now; g (no growth, holding
	 * 10) stays for its gauge */
	ck_assert_int_eq(cp_cumulative_delta(b, a, &d, &restarted), 0);
	ck_assert(!restarted);
	ck_assert_uint_eq(d->ntypes, 2);
	ck_assert_int_eq(value_of(d, "main;f", 0), 30);
	ck_assert_int_eq(value_of(d, "main;f", 1), 35);
	ck_assert_int_eq(value_of(d, "main;g", 0), 0);
	ck_assert_int_eq(value_of(d, "main;g", 1), 10);
	ck_assert_int_eq(value_of(d, "main;h", 0), 7);
	ck_assert_int_eq(d->time_nanos, 1000);
	ck_assert_int_eq(d->duration_nanos, 3000);
	ck_assert(!cp_profile_is_cumulative(d));
	cp_profile_free(d);
	/* a restart: f's total went down, the scrape's totals are the growth */
	add2(c, "main;f", 12, 12);
	c->time_nanos = 9000;
	ck_assert_int_eq(cp_cumulative_delta(c, b, &d, &restarted), 0);
	ck_assert(restarted);
	ck_assert_int_eq(value_of(d, "main;f", 0), 12);
	ck_assert_int_eq(value_of(d, "main;g", 0), 0);
	cp_profile_free(d);
	cp_profile_free(a);
	cp_profile_free(b);
	cp_profile_free(c);
}
END_TEST

static Suite *profile_suite(void)
{
	Suite *s = suite_create("profile");
	TCase *intern = tcase_create("intern"), *samples = tcase_create("samples"),
	      *merge = tcase_create("merge"), *frames = tcase_create("frames"),
	      *filter = tcase_create("filter"), *scale = tcase_create("scale");

	tcase_add_test(intern, test_strtab);
	tcase_add_test(intern, test_profile_strings);
	tcase_add_test(intern, test_functions_dedup);
	tcase_add_test(intern, test_mappings_dedup);
	tcase_add_test(intern, test_locations_dedup);
	tcase_add_test(intern, test_import_locations);
	tcase_add_test(intern, test_location_set_lines);
	tcase_add_test(intern, test_stacks_dedup);
	tcase_add_test(intern, test_labelsets_dedup);
	tcase_add_test(intern, test_index_direct);
	suite_add_tcase(s, intern);

	tcase_add_test(samples, test_add_sample_sums);
	tcase_add_test(samples, test_sample_index);
	suite_add_tcase(s, samples);

	tcase_add_test(merge, test_merge_incompatible);
	tcase_add_test(merge, test_merge_header);
	tcase_add_test(merge, test_merge_samples);
	tcase_add_test(merge, test_merge_mappings);
	tcase_add_test(merge, test_merge_drops_zero);
	tcase_add_test(merge, test_merge_scale);
	tcase_add_test(merge, test_merge_tag);
	tcase_add_test(merge, test_copy_keep);
	tcase_add_test(merge, test_cumulative_delta);
	suite_add_tcase(s, merge);

	tcase_add_test(frames, test_frames_inline);
	tcase_add_test(frames, test_frame_name);
	suite_add_tcase(s, frames);

	tcase_add_test(filter, test_filter_focus_ignore);
	tcase_add_test(filter, test_filter_unsymbolized_and_inline);
	tcase_add_test(filter, test_filter_bad_regex);
	tcase_add_test(filter, test_filter_costly_regex);
	tcase_add_test(filter, test_filter_reuse);
	tcase_add_test(filter, test_filter_after_free);
	suite_add_tcase(s, filter);

	tcase_add_test(scale, test_many_strings);
	tcase_add_test(scale, test_many_samples);
	tcase_set_timeout(scale, 120);
	suite_add_tcase(s, scale);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(profile_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/* SPDX-License-Identifier: MIT */
/* Folded stacks: lib/folded.c (parse, write, diff). */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "folded.h"
#include "profile.h"
#include "testutil.h"

/* ---- helpers ---- */

static struct cp_profile *parse(const char *text)
{
	struct cp_profile *p = cp_folded_decode(text, strlen(text));

	ck_assert_msg(p != NULL, "cannot parse: %s", cp_errmsg(errno));
	return p;
}

/* Parsing must fail: returns the message. */
static const char *parse_error(const char *text)
{
	struct cp_profile *p;

	cp_error_clear();
	errno = 0;
	p = cp_folded_decode(text, strlen(text));
	ck_assert_ptr_null(p);
	ck_assert_int_eq(errno, EINVAL);
	return cp_errmsg(EINVAL);
}

/* The folded output of p, malloc'ed. */
static char *written(const struct cp_profile *p, int vidx, bool invert)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(cp_folded_write(f, p, vidx, invert), 0);
	ck_assert_int_eq(fclose(f), 0);
	return buf;
}

static char *written_diff(const struct cp_profile *a, const struct cp_profile *b, int va, int vb)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(cp_folded_write_diff(f, a, b, va, vb), 0);
	ck_assert_int_eq(fclose(f), 0);
	return buf;
}

/* The frames of sample i, leaf first, joined with '|'. */
static const char *leaf_first(const struct cp_profile *p, uint32_t i, char *out, size_t len)
{
	struct cp_frame *frames = NULL;
	size_t cap = 0, used = 0;
	int n = cp_profile_frames(p, p->samples[i].stack, &frames, &cap), j;
	char buf[128];

	ck_assert_int_ge(n, 0);
	out[0] = '\0';
	for (j = 0; j < n; j++)
		used += (size_t)snprintf(out + used, len - used, "%s%s", j ? "|" : "",
					 cp_frame_name(p, &frames[j], buf, sizeof(buf)));
	free(frames);
	return out;
}

/* The value of the sample whose leaf-first frames read `frames`, or -1. */
static int64_t value_of(const struct cp_profile *p, const char *frames)
{
	char buf[512];
	uint32_t i;

	for (i = 0; i < p->nsamples; i++)
		if (!strcmp(leaf_first(p, i, buf, sizeof(buf)), frames))
			return cp_profile_values(p, i)[0];
	return -1;
}

/* ---- parsing ---- */

START_TEST(test_parse_basic)
{
	struct cp_profile *p = parse("a;b;c 3\na;b 2\nd 1\n");
	char buf[256];

	ck_assert_uint_eq(p->ntypes, 1);
	ck_assert_str_eq(cp_profile_string(p, p->sample_types[0].type), "samples");
	ck_assert_str_eq(cp_profile_string(p, p->sample_types[0].unit), "count");
	ck_assert_str_eq(cp_profile_string(p, p->period_type.type), "samples");
	ck_assert_int_eq(p->period, 1);
	ck_assert_uint_eq(p->nsamples, 3);
	/* root first in the text, leaf first in the profile */
	ck_assert_str_eq(leaf_first(p, 0, buf, sizeof(buf)), "c|b|a");
	ck_assert_int_eq(cp_profile_values(p, 0)[0], 3);
	ck_assert_str_eq(leaf_first(p, 1, buf, sizeof(buf)), "b|a");
	ck_assert_int_eq(cp_profile_values(p, 1)[0], 2);
	ck_assert_str_eq(leaf_first(p, 2, buf, sizeof(buf)), "d");
	ck_assert_int_eq(cp_profile_total(p, 0), 6);
	/* a, b, c, d: one function and one location each */
	ck_assert_uint_eq(p->nfunctions, 4);
	ck_assert_uint_eq(p->nlocations, 4);
	cp_profile_free(p);

	/* no newline at the end */
	p = parse("x;y 12");
	ck_assert_uint_eq(p->nsamples, 1);
	ck_assert_int_eq(value_of(p, "y|x"), 12);
	cp_profile_free(p);

	/* nothing at all is an empty profile */
	p = parse("");
	ck_assert_uint_eq(p->nsamples, 0);
	ck_assert_uint_eq(p->ntypes, 1);
	cp_profile_free(p);
}
END_TEST

START_TEST(test_parse_sums)
{
	struct cp_profile *p = parse("a;b 2\nc 1\na;b 5\na;b;c 1\na;b 10\n");

	ck_assert_uint_eq(p->nsamples, 3);
	ck_assert_int_eq(value_of(p, "b|a"), 17);
	ck_assert_int_eq(value_of(p, "c"), 1);
	ck_assert_int_eq(value_of(p, "c|b|a"), 1);
	ck_assert_int_eq(cp_profile_total(p, 0), 19);
	cp_profile_free(p);
}
END_TEST

START_TEST(test_parse_skips)
{
	struct cp_profile *p = parse("# a comment line 99\n\n   \n\t\na;b 1\n#a;b 50\n\n");

	ck_assert_uint_eq(p->nsamples, 1);
	ck_assert_int_eq(cp_profile_total(p, 0), 1);
	cp_profile_free(p);
}
END_TEST

START_TEST(test_parse_crlf)
{
	struct cp_profile *p = parse("a;b 2\r\nc 3\r\n\r\n# note\r\na;b 1\r\n");
	char buf[256];
	uint32_t i;

	ck_assert_uint_eq(p->nsamples, 2);
	ck_assert_int_eq(value_of(p, "b|a"), 3);
	ck_assert_int_eq(value_of(p, "c"), 3);
	for (i = 0; i < p->nsamples; i++)
		ck_assert_ptr_null(strchr(leaf_first(p, i, buf, sizeof(buf)), '\r'));
	for (i = 0; i < p->strs.n; i++)
		ck_assert_ptr_null(strchr(cp_profile_string(p, i), '\r'));
	cp_profile_free(p);
}
END_TEST

START_TEST(test_parse_spaces_in_frames)
{
	struct cp_profile *p = parse("main;operator new(unsigned long) 5\n"
				     "main;std::vector<int, std::allocator<int> >::push_back(int const&) 2\n"
				     "a b;c d\t4\n"
				     "x;y    7   \n");

	ck_assert_uint_eq(p->nsamples, 4);
	ck_assert_int_eq(value_of(p, "operator new(unsigned long)|main"), 5);
	ck_assert_int_eq(value_of(p, "std::vector<int, std::allocator<int> >::push_back(int const&)|main"), 2);
	ck_assert_int_eq(value_of(p, "c d|a b"), 4); /* a tab before the count */
	ck_assert_int_eq(value_of(p, "y|x"), 7);     /* several spaces, trailing blanks */
	cp_profile_free(p);
}
END_TEST

START_TEST(test_parse_malformed)
{
	ck_assert_contains(parse_error("a;b 1\nfoo\n"), "line 2");
	ck_assert_contains(parse_error("a;b x\n"), "line 1");
	ck_assert_contains(parse_error("a;b -1\n"), "line 1");
	ck_assert_contains(parse_error("a;b 1.5\n"), "line 1");
	ck_assert_contains(parse_error("a;b 1e3\n"), "line 1");
	ck_assert_contains(parse_error("a;b 12abc\n"), "line 1");
	ck_assert_contains(parse_error("5\n"), "line 1");    /* no stack */
	ck_assert_contains(parse_error(" 5\n"), "line 1");
	ck_assert_contains(parse_error("a;b 1234567890123456789\n"), "line 1"); /* overflows */
	/* blank lines and comments count in the numbering */
	ck_assert_contains(parse_error("# header\n\na 1\r\nb 2\nbroken line here\nc 3\n"), "line 5");
	/* the message says what a line should look like */
	ck_assert_contains(parse_error("x\n"), "COUNT");
}
END_TEST

START_TEST(test_parse_zero_and_large)
{
	struct cp_profile *p = parse("a;b 0\nc 2\nd 999999999999999999\n");

	ck_assert_uint_eq(p->nsamples, 2);
	ck_assert_int_eq(value_of(p, "b|a"), -1); /* no sample for a zero count */
	ck_assert_int_eq(value_of(p, "c"), 2);
	ck_assert_int_eq(value_of(p, "d"), 999999999999999999LL);
	cp_profile_free(p);

	p = parse("a 0\n");
	ck_assert_uint_eq(p->nsamples, 0);
	cp_profile_free(p);
}
END_TEST

/* ---- writing ---- */

START_TEST(test_write_sorted)
{
	struct cp_profile *p = parse("b;c 1\na;b 2\na 3\nb 4\na;b 6\n");
	char *out = written(p, 0, false);

	ck_assert_str_eq(out, "a 3\na;b 8\nb 4\nb;c 1\n");
	free(out);
	cp_profile_free(p);
}
END_TEST

START_TEST(test_write_invert)
{
	struct cp_profile *p = parse("a;b;c 3\na;b 2\nx 1\n");
	char *out = written(p, 0, true);

	ck_assert_str_eq(out, "b;a 2\nc;b;a 3\nx 1\n");
	free(out);
	cp_profile_free(p);
}
END_TEST

START_TEST(test_write_skips_zero)
{
	/* two sample types; stacks with a zero for the chosen one are left out */
	struct cp_profile *p = cp_profile_new();
	struct cp_function f = { 0, 0, 0, 0 };
	struct cp_line line = { 0, 0, 0 };
	int64_t v1[2] = { 0, 5 }, v2[2] = { 3, 0 };
	uint32_t loc[2];
	char *out;

	ck_assert_int_eq(cp_profile_add_sample_type(p, "alloc_objects", "count"), 0);
	ck_assert_int_eq(cp_profile_add_sample_type(p, "alloc_space", "bytes"), 0);
	f.name = (uint32_t)cp_profile_str(p, "onlyspace");
	line.function = (uint32_t)cp_profile_function(p, &f);
	loc[0] = (uint32_t)cp_profile_location(p, 0, 0, &line, 1, false);
	f.name = (uint32_t)cp_profile_str(p, "onlyobjects");
	line.function = (uint32_t)cp_profile_function(p, &f);
	loc[1] = (uint32_t)cp_profile_location(p, 0, 0, &line, 1, false);
	ck_assert_int_eq(cp_profile_add_sample(p, (uint32_t)cp_profile_stack(p, &loc[0], 1), 0, v1), 0);
	ck_assert_int_eq(cp_profile_add_sample(p, (uint32_t)cp_profile_stack(p, &loc[1], 1), 0, v2), 0);
	out = written(p, 0, false);
	ck_assert_str_eq(out, "onlyobjects 3\n");
	free(out);
	out = written(p, 1, false);
	ck_assert_str_eq(out, "onlyspace 5\n");
	free(out);
	cp_profile_free(p);

	/* a profile with nothing to write writes nothing */
	p = parse("a 0\n");
	out = written(p, 0, false);
	ck_assert_str_eq(out, "");
	free(out);
	cp_profile_free(p);
}
END_TEST

START_TEST(test_write_pprof_frames)
{
	/* what folded output makes of pprof-only things: inline frames become
	 * frames, unsymbolized ones their mapping+offset, the empty stack
	 * [unknown], and stacks that read the same are one line */
	struct cp_profile *p = cp_profile_new();
	struct cp_function fi = { 0, 0, 0, 0 }, fo = { 0, 0, 0, 0 };
	struct cp_mapping m = { 0x7f0000000000, 0x7f0000100000, 0, 0, 0, false, false, false, false };
	struct cp_line lines[2] = { { 0, 10, 0 }, { 0, 20, 0 } };
	int64_t one = 1, two = 2, four = 4, eight = 8;
	uint32_t locs[2];
	char *out;

	ck_assert_int_eq(cp_profile_add_sample_type(p, "samples", "count"), 0);
	fi.name = (uint32_t)cp_profile_str(p, "inner");
	fo.name = (uint32_t)cp_profile_str(p, "outer");
	m.filename = (uint32_t)cp_profile_str(p, "/lib/libc.so.6");
	lines[0].function = (uint32_t)cp_profile_function(p, &fi);
	lines[1].function = (uint32_t)cp_profile_function(p, &fo);
	locs[0] = (uint32_t)cp_profile_location(p, 0, 0x10, lines, 2, false);
	ck_assert_int_eq(cp_profile_add_sample(p, (uint32_t)cp_profile_stack(p, locs, 1), 0, &one), 0);
	/* outer alone, at two lines: two locations, one line of text */
	locs[0] = (uint32_t)cp_profile_location(p, 0, 0x20, &lines[1], 1, false);
	ck_assert_int_eq(cp_profile_add_sample(p, (uint32_t)cp_profile_stack(p, locs, 1), 0, &two), 0);
	lines[1].line = 21;
	locs[0] = (uint32_t)cp_profile_location(p, 0, 0x30, &lines[1], 1, false);
	ck_assert_int_eq(cp_profile_add_sample(p, (uint32_t)cp_profile_stack(p, locs, 1), 0, &two), 0);
	/* an address in libc called from outer */
	locs[0] = (uint32_t)cp_profile_location(p, (uint32_t)cp_profile_mapping(p, &m), 0x7f0000001234, NULL, 0, false);
	locs[1] = (uint32_t)cp_profile_location(p, 0, 0x20, &lines[1], 1, false);
	ck_assert_int_eq(cp_profile_add_sample(p, (uint32_t)cp_profile_stack(p, locs, 2), 0, &four), 0);
	ck_assert_int_eq(cp_profile_add_sample(p, 0, 0, &eight), 0);

	out = written(p, 0, false);
	ck_assert_str_eq(out, "[unknown] 8\nouter 4\nouter;inner 1\nouter;libc.so.6+0x1234 4\n");
	free(out);
	cp_profile_free(p);
}
END_TEST

/* Every line of a is in b with the same count and the other way round. */
START_TEST(test_round_trip)
{
	static const char text[] = "main;work;alpha 300\n"
				   "main;work;beta 200\n"
				   "main;work;viaDelta;gamma 100\n"
				   "main;operator delete(void*) 7\n"
				   "runtime.gcBgMarkWorker 3\n";
	struct cp_profile *p = parse(text), *q;
	char *out, *again;

	out = written(p, 0, false);
	q = parse(out);
	ck_assert_uint_eq(q->nsamples, p->nsamples);
	ck_assert_int_eq(cp_profile_total(q, 0), cp_profile_total(p, 0));
	ck_assert_int_eq(cp_profile_total(q, 0), 610);
	ck_assert_int_eq(value_of(q, "gamma|viaDelta|work|main"), 100);
	ck_assert_int_eq(value_of(q, "operator delete(void*)|main"), 7);
	again = written(q, 0, false);
	ck_assert_str_eq(again, out);
	free(out);
	free(again);
	cp_profile_free(q);

	/* inverted and inverted back */
	out = written(p, 0, true);
	q = parse(out);
	again = written(q, 0, true);
	free(out);
	out = written(p, 0, false);
	ck_assert_str_eq(again, out);
	free(out);
	free(again);
	cp_profile_free(q);
	cp_profile_free(p);
}
END_TEST

START_TEST(test_write_diff)
{
	struct cp_profile *a = parse("a;b 5\na;c 3\nz 1\n"), *b = parse("a;b 2\na;d 4\nz 1\n");
	char *out = written_diff(a, b, 0, 0);

	ck_assert_str_eq(out, "a;b 5 2\na;c 3 0\na;d 0 4\nz 1 1\n");
	free(out);
	/* the other way round */
	out = written_diff(b, a, 0, 0);
	ck_assert_str_eq(out, "a;b 2 5\na;c 0 3\na;d 4 0\nz 1 1\n");
	free(out);
	cp_profile_free(a);
	cp_profile_free(b);
}
END_TEST

START_TEST(test_write_diff_value_index)
{
	/* before: two types, the second chosen; after: folded, one type */
	struct cp_profile *a = cp_profile_new(), *b = parse("main;f 4\nmain;g 1\n");
	struct cp_function f = { 0, 0, 0, 0 };
	struct cp_line line = { 0, 0, 0 };
	int64_t v[2] = { 100, 6 };
	uint32_t locs[2];
	char *out;

	ck_assert_int_eq(cp_profile_add_sample_type(a, "samples", "count"), 0);
	ck_assert_int_eq(cp_profile_add_sample_type(a, "cpu", "nanoseconds"), 0);
	f.name = (uint32_t)cp_profile_str(a, "f");
	line.function = (uint32_t)cp_profile_function(a, &f);
	locs[0] = (uint32_t)cp_profile_location(a, 0, 0, &line, 1, false);
	f.name = (uint32_t)cp_profile_str(a, "main");
	line.function = (uint32_t)cp_profile_function(a, &f);
	locs[1] = (uint32_t)cp_profile_location(a, 0, 0, &line, 1, false);
	ck_assert_int_eq(cp_profile_add_sample(a, (uint32_t)cp_profile_stack(a, locs, 2), 0, v), 0);
	out = written_diff(a, b, 1, 0);
	ck_assert_str_eq(out, "main;f 6 4\nmain;g 0 1\n");
	free(out);
	out = written_diff(a, b, 0, 0);
	ck_assert_str_eq(out, "main;f 100 4\nmain;g 0 1\n");
	free(out);
	cp_profile_free(a);
	cp_profile_free(b);
}
END_TEST

START_TEST(test_write_error)
{
	struct cp_profile *p = parse("a;b 1\n"), *q = parse("a;c 2\n");
	FILE *f = fopen("/dev/full", "w");
	int err;

	if (!f) {
		cp_profile_free(p);
		cp_profile_free(q);
		return;
	}
	cp_error_clear();
	err = cp_folded_write(f, p, 0, false);
	ck_assert_int_lt(err, 0);
	ck_assert_int_eq(err, -ENOSPC);
	ck_assert_contains(cp_errmsg(err), "write error");
	fclose(f);
	f = fopen("/dev/full", "w");
	ck_assert_ptr_nonnull(f);
	ck_assert_int_lt(cp_folded_write_diff(f, p, q, 0, 0), 0);
	fclose(f);
	cp_profile_free(p);
	cp_profile_free(q);
}
END_TEST

static Suite *folded_suite(void)
{
	Suite *s = suite_create("folded");
	TCase *rd = tcase_create("parse"), *wr = tcase_create("write");

	tcase_add_test(rd, test_parse_basic);
	tcase_add_test(rd, test_parse_sums);
	tcase_add_test(rd, test_parse_skips);
	tcase_add_test(rd, test_parse_crlf);
	tcase_add_test(rd, test_parse_spaces_in_frames);
	tcase_add_test(rd, test_parse_malformed);
	tcase_add_test(rd, test_parse_zero_and_large);
	suite_add_tcase(s, rd);

	tcase_add_test(wr, test_write_sorted);
	tcase_add_test(wr, test_write_invert);
	tcase_add_test(wr, test_write_skips_zero);
	tcase_add_test(wr, test_write_pprof_frames);
	tcase_add_test(wr, test_round_trip);
	tcase_add_test(wr, test_write_diff);
	tcase_add_test(wr, test_write_diff_value_index);
	tcase_add_test(wr, test_write_error);
	suite_add_tcase(s, wr);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(folded_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

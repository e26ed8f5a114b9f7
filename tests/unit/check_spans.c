/* SPDX-License-Identifier: MIT */
/* lib/sampling/spans.c: answers about file offsets that hold over a span. */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>

#include "sampling/spans.h"
#include "testutil.h"

START_TEST(test_find_in_span)
{
	struct cp_spans c = { 0 };
	int64_t a, b;

	/* a function's span across a page boundary, asked for at 0x1ff0 */
	a = cp_spans_add(&c, 3, 0x1ff0, 0x1f00, 0x2100);
	ck_assert_int_eq(a, 0);
	/* one offset only */
	b = cp_spans_add(&c, 3, 0x2200, 0x2200, 0x2201);
	ck_assert_int_eq(b, 1);
	ck_assert_uint_eq(cp_spans_find(&c, 3, 0x1ff0), 0);
	ck_assert_uint_eq(c.span_hits, 0);
	/* never asked for, in the span: on both of its pages, and its ends */
	ck_assert_uint_eq(cp_spans_find(&c, 3, 0x1f00), 0);
	ck_assert_uint_eq(cp_spans_find(&c, 3, 0x2000), 0);
	ck_assert_uint_eq(cp_spans_find(&c, 3, 0x20ff), 0);
	ck_assert_uint_eq(c.span_hits, 3);
	/* asked again: remembered under the offset */
	ck_assert_uint_eq(cp_spans_find(&c, 3, 0x2000), 0);
	ck_assert_uint_eq(c.span_hits, 3);
	/* outside it, another module, the exact entry's neighbours */
	ck_assert_uint_eq(cp_spans_find(&c, 3, 0x1eff), UINT32_MAX);
	ck_assert_uint_eq(cp_spans_find(&c, 3, 0x2100), UINT32_MAX);
	ck_assert_uint_eq(cp_spans_find(&c, 4, 0x2000), UINT32_MAX);
	ck_assert_uint_eq(cp_spans_find(&c, 3, 0x2200), 1);
	ck_assert_uint_eq(cp_spans_find(&c, 3, 0x2201), UINT32_MAX);
	ck_assert_uint_eq(cp_spans_find(&c, 3, 0x21ff), UINT32_MAX);
	/* a span that does not hold the offset asked for is that offset's only */
	ck_assert_int_eq(cp_spans_add(&c, 5, 0x9000, 0x1000, 0x2000), 2);
	ck_assert_uint_eq(cp_spans_find(&c, 5, 0x1800), UINT32_MAX);
	ck_assert_uint_eq(cp_spans_find(&c, 5, 0x9000), 2);
	cp_spans_release(&c);
}
END_TEST

START_TEST(test_long_span_window)
{
	struct cp_spans c = { 0 };
	const uint64_t pg = 4096, half = CP_SPANS_MAX_PAGES / 2;
	uint64_t lo = 0x100000, hi = lo + ((uint64_t)CP_SPANS_MAX_PAGES + 1) * pg, mid = lo + 32 * pg + 8;

	/* one page more than the index takes, asked at its start: kept on the
	 * CP_SPANS_MAX_PAGES pages from there, and no further */
	ck_assert_int_eq(cp_spans_add(&c, 1, lo + 8, lo, hi), 0);
	ck_assert_uint_eq(cp_spans_find(&c, 1, lo + 8), 0);
	ck_assert_uint_eq(cp_spans_find(&c, 1, lo + pg), 0);
	ck_assert_uint_eq(cp_spans_find(&c, 1, lo + CP_SPANS_MAX_PAGES * pg - 1), 0);
	ck_assert_uint_eq(cp_spans_find(&c, 1, lo + CP_SPANS_MAX_PAGES * pg), UINT32_MAX);
	ck_assert_uint_eq(cp_spans_find(&c, 1, lo - 1), UINT32_MAX);
	/* one page fewer: found anywhere in it */
	ck_assert_int_eq(cp_spans_add(&c, 2, lo + 8, lo, hi - pg), 1);
	ck_assert_uint_eq(cp_spans_find(&c, 2, hi - pg - 1), 1);
	/* 64 pages asked in the middle: the pages around the offset */
	ck_assert_int_eq(cp_spans_add(&c, 3, mid, lo, lo + 64 * pg), 2);
	ck_assert_uint_eq(cp_spans_find(&c, 3, mid - half * pg), 2);
	ck_assert_uint_eq(cp_spans_find(&c, 3, (mid & ~(pg - 1)) - half * pg), 2);
	ck_assert_uint_eq(cp_spans_find(&c, 3, (mid & ~(pg - 1)) - half * pg - 1), UINT32_MAX);
	ck_assert_uint_eq(cp_spans_find(&c, 3, (mid & ~(pg - 1)) + half * pg - 1), 2);
	ck_assert_uint_eq(cp_spans_find(&c, 3, (mid & ~(pg - 1)) + half * pg), UINT32_MAX);
	/* from offset 0 (a gap before a binary's first symbol): no wrap below 0 */
	ck_assert_int_eq(cp_spans_add(&c, 4, 3 * pg, 0, UINT64_MAX), 3);
	ck_assert_uint_eq(cp_spans_find(&c, 4, 0), 3);
	ck_assert_uint_eq(cp_spans_find(&c, 4, CP_SPANS_MAX_PAGES * pg - 1), 3);
	ck_assert_uint_eq(cp_spans_find(&c, 4, CP_SPANS_MAX_PAGES * pg), UINT32_MAX);
	ck_assert_uint_eq(cp_spans_find(&c, 4, UINT64_MAX - 1), UINT32_MAX);
	cp_spans_release(&c);
}
END_TEST

START_TEST(test_many_and_reset)
{
	struct cp_spans c = { 0 };

	/* 64-byte functions side by side, asked for at their 3rd byte */
	for (uint64_t i = 0; i < 5000; i++)
		ck_assert_int_eq(cp_spans_add(&c, 7, 0x400000 + 64 * i + 3, 0x400000 + 64 * i, 0x400000 + 64 * (i + 1)),
				 (int64_t)i);
	for (uint64_t i = 0; i < 5000; i++)
		for (uint64_t b = 0; b < 64; b += 21)
			ck_assert_uint_eq(cp_spans_find(&c, 7, 0x400000 + 64 * i + b), i);
	ck_assert_uint_eq(cp_spans_find(&c, 7, 0x400000 + 64 * 5000), UINT32_MAX);
	/* the offsets remembered are bounded by the entries, not by those asked */
	ck_assert_uint_le(c.exact.count, 4 * c.n + 4096 + 1);
	for (uint64_t b = 0; b < 64; b++)
		for (uint64_t i = 0; i < 5000; i++)
			ck_assert_uint_eq(cp_spans_find(&c, 7, 0x400000 + 64 * i + b), i);
	ck_assert_uint_le(c.exact.count, 4 * c.n + 4096 + 1);
	cp_spans_reset(&c);
	ck_assert_uint_eq(c.n, 0);
	ck_assert_uint_eq(cp_spans_find(&c, 7, 0x400003), UINT32_MAX);
	ck_assert_int_eq(cp_spans_add(&c, 7, 0x400003, 0x400000, 0x400040), 0);
	ck_assert_uint_eq(cp_spans_find(&c, 7, 0x400020), 0);
	cp_spans_release(&c);
}
END_TEST

int main(void)
{
	const TTest *const tests[] = { test_find_in_span, test_long_span_window, test_many_and_reset };

	return run_tests_timeout("spans", tests, sizeof(tests) / sizeof(tests[0]), 120);
}

/* SPDX-License-Identifier: MIT */
/* lib/sampling/locmemo.c: the recorder's memo of frame locations. */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>

#include "sampling/locmemo.h"
#include "testutil.h"

START_TEST(test_get_put)
{
	struct cp_locmemo *m = cp_locmemo_new(10);
	uint64_t probes, hits;

	ck_assert_ptr_nonnull(m);
	ck_assert_uint_eq(cp_locmemo_get(m, 10, 1, 0x401000, CP_LOCMEMO_USER), 0);
	cp_locmemo_put(m, 10, 1, 0x401000, CP_LOCMEMO_USER, 7);
	ck_assert_uint_eq(cp_locmemo_get(m, 10, 1, 0x401000, CP_LOCMEMO_USER), 7);
	/* every part of the key counts */
	ck_assert_uint_eq(cp_locmemo_get(m, 11, 1, 0x401000, CP_LOCMEMO_USER), 0);
	ck_assert_uint_eq(cp_locmemo_get(m, 10, 2, 0x401000, CP_LOCMEMO_USER), 0);
	ck_assert_uint_eq(cp_locmemo_get(m, 10, 1, 0x401001, CP_LOCMEMO_USER), 0);
	ck_assert_uint_eq(cp_locmemo_get(m, 10, 1, 0x401000, CP_LOCMEMO_USER_RET), 0);
	ck_assert_uint_eq(cp_locmemo_get(m, 10, 1, 0x401000, CP_LOCMEMO_KERNEL), 0);
	/* a return address and the same pc as a leaf are two entries */
	cp_locmemo_put(m, 10, 1, 0x401000, CP_LOCMEMO_USER_RET, 8);
	ck_assert_uint_eq(cp_locmemo_get(m, 10, 1, 0x401000, CP_LOCMEMO_USER_RET), 8);
	/* put again: the new location */
	cp_locmemo_put(m, 10, 1, 0x401000, CP_LOCMEMO_USER, 9);
	ck_assert_uint_eq(cp_locmemo_get(m, 10, 1, 0x401000, CP_LOCMEMO_USER), 9);
	/* 0 and ids past 30 bits are not kept */
	cp_locmemo_put(m, 12, 1, 0x500000, CP_LOCMEMO_USER, 0);
	ck_assert_uint_eq(cp_locmemo_get(m, 12, 1, 0x500000, CP_LOCMEMO_USER), 0);
	cp_locmemo_put(m, 12, 1, 0x500000, CP_LOCMEMO_USER, 1u << 30);
	ck_assert_uint_eq(cp_locmemo_get(m, 12, 1, 0x500000, CP_LOCMEMO_USER), 0);
	cp_locmemo_counts(m, &probes, &hits);
	ck_assert_uint_eq(probes, 11);
	ck_assert_uint_eq(hits, 3);
	cp_locmemo_free(m);
}
END_TEST

START_TEST(test_clear)
{
	struct cp_locmemo *m = cp_locmemo_new(4);
	uint32_t i;

	for (i = 1; i <= 8; i++)
		cp_locmemo_put(m, i, 0, 0x1000 * i, CP_LOCMEMO_KERNEL, i);
	cp_locmemo_clear(m);
	for (i = 1; i <= 8; i++)
		ck_assert_uint_eq(cp_locmemo_get(m, i, 0, 0x1000 * i, CP_LOCMEMO_KERNEL), 0);
	cp_locmemo_put(m, 3, 0, 0x3000, CP_LOCMEMO_KERNEL, 33);
	ck_assert_uint_eq(cp_locmemo_get(m, 3, 0, 0x3000, CP_LOCMEMO_KERNEL), 33);
	cp_locmemo_free(m);
}
END_TEST

START_TEST(test_bounded)
{
	/* more keys than slots: a collision overwrites, a get never returns
	 * another key's location */
	struct cp_locmemo *m = cp_locmemo_new(4);
	uint32_t i, found = 0;

	for (i = 1; i <= 1000; i++)
		cp_locmemo_put(m, 1, 0, 0x400000 + 16 * i, CP_LOCMEMO_USER, i);
	for (i = 1; i <= 1000; i++) {
		uint32_t loc = cp_locmemo_get(m, 1, 0, 0x400000 + 16 * i, CP_LOCMEMO_USER);

		ck_assert(loc == 0 || loc == i);
		found += loc != 0;
	}
	ck_assert_uint_le(found, 16);
	ck_assert_uint_gt(found, 0);
	ck_assert_uint_eq(cp_locmemo_get(m, 1, 0, 0x400000 + 16 * 1000, CP_LOCMEMO_USER), 1000);
	cp_locmemo_free(m);
}
END_TEST

int main(void)
{
	const TTest *const tests[] = { test_get_put, test_clear, test_bounded };

	return run_tests_timeout("locmemo", tests, sizeof(tests) / sizeof(tests[0]), 120);
}

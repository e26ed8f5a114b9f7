/* SPDX-License-Identifier: MIT */
/* lib/sampling/offtotals.c: off-CPU values scaled to each thread's exact
 * total. */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "profile.h"
#include "sampling/offtotals.h"
#include "testutil.h"

static uint32_t stacks[3]; /* of the profile being filled */

/* a sample of stack k (0-2) of thread tid (and state st) with the given values */
static void add(struct cp_profile *p, uint32_t k, const char *tid, const char *st, const int64_t *v)
{
	struct cp_label l[2] = { { (uint32_t)cp_profile_str(p, "thread_id"), (uint32_t)cp_profile_str(p, tid), 0, 0 },
				 { (uint32_t)cp_profile_str(p, "state"), (uint32_t)cp_profile_str(p, st), 0, 0 } };
	int64_t ls = cp_profile_labelset(p, l, 2);

	ck_assert_int_ge(ls, 0);
	ck_assert_int_eq(cp_profile_add_sample(p, stacks[k], (uint32_t)ls, v), 0);
}

static struct cp_profile *profile(const char *const *types, size_t n)
{
	struct cp_profile *p = cp_profile_new();
	uint32_t loc;

	ck_assert_ptr_nonnull(p);
	for (size_t i = 0; i < n; i++)
		ck_assert_int_eq(cp_profile_add_sample_type(p, types[i], "nanoseconds"), 0);
	for (uint32_t i = 0; i < 3; i++) { /* three stacks of one location each */
		int64_t st;

		loc = (uint32_t)cp_profile_location(p, 0, 0x1000 + i, NULL, 0, false);
		ck_assert_int_ge(st = cp_profile_stack(p, &loc, 1), 0);
		stacks[i] = (uint32_t)st;
	}
	return p;
}

START_TEST(test_scale_per_thread)
{
	static const char *const types[] = { "offcpu" };
	struct cp_offtotals *t = cp_offtotals_new();
	struct cp_profile *p = profile(types, 1);

	ck_assert_ptr_nonnull(t);
	/* thread 7: sampled 300 + 100, exactly 200 in all: each of its values halves, the split stays */
	add(p, 0, "7", "S", (int64_t[]){ 300 });
	add(p, 1, "7", "R", (int64_t[]){ 100 });
	cp_offtotals_add(t, 7, 300, 120);
	cp_offtotals_add(t, 7, 100, 80);
	/* thread 8: sampled 50, exactly 150 (with the end of a wait too short to keep: 0 sampled) */
	add(p, 2, "8", "D", (int64_t[]){ 50 });
	cp_offtotals_add(t, 8, 50, 100);
	cp_offtotals_add(t, 8, 0, 50);
	/* thread 9: no totals (no room, or none sent): as sampled */
	add(p, 0, "9", "S", (int64_t[]){ 1000 });
	ck_assert_int_eq(cp_offtotals_scale(t, p, 0, (size_t)-1), 0);
	ck_assert_int_eq(p->nsamples, 4);
	ck_assert_int_eq(cp_profile_values(p, 0)[0], 150);
	ck_assert_int_eq(cp_profile_values(p, 1)[0], 50);
	ck_assert_int_eq(cp_profile_values(p, 2)[0], 150);
	ck_assert_int_eq(cp_profile_values(p, 3)[0], 1000);
	/* a new interval: nothing to scale by */
	cp_offtotals_clear(t);
	ck_assert_int_eq(cp_offtotals_scale(t, p, 0, (size_t)-1), 0);
	ck_assert_int_eq(cp_profile_values(p, 0)[0], 150);
	cp_profile_free(p);
	cp_offtotals_free(t);
}
END_TEST

START_TEST(test_scale_one_profile)
{
	/* record -o's one profile: samples, cpu, offcpu, wall; on-CPU rows (offcpu 0) keep their wall */
	static const char *const types[] = { "samples", "cpu", "offcpu", "wall" };
	struct cp_offtotals *t = cp_offtotals_new();
	struct cp_profile *p = profile(types, 4);

	add(p, 0, "7", "CPU", (int64_t[]){ 1, 10, 0, 10 });
	add(p, 1, "7", "S", (int64_t[]){ 0, 0, 400, 400 });
	cp_offtotals_add(t, 7, 400, 100);
	ck_assert_int_eq(cp_offtotals_scale(t, p, 2, 3), 0);
	ck_assert_int_eq(cp_profile_values(p, 0)[3], 10);
	ck_assert_int_eq(cp_profile_values(p, 1)[2], 100);
	ck_assert_int_eq(cp_profile_values(p, 1)[3], 100);
	cp_profile_free(p);
	cp_offtotals_free(t);
}
END_TEST

START_TEST(test_many_threads)
{
	/* more threads than the table holds: those without room keep their values, no crash */
	static const char *const types[] = { "offcpu" };
	struct cp_offtotals *t = cp_offtotals_new();
	struct cp_profile *p = profile(types, 1);
	char tid[16];
	uint32_t halved = 0;

	for (uint32_t i = 1; i <= 20000; i++) {
		snprintf(tid, sizeof(tid), "%u", i);
		add(p, i % 3, tid, "S", (int64_t[]){ 20 });
		cp_offtotals_add(t, i, 20, 10);
	}
	ck_assert_int_eq(cp_offtotals_scale(t, p, 0, (size_t)-1), 0);
	for (uint32_t i = 0; i < p->nsamples; i++) {
		int64_t v = cp_profile_values(p, i)[0];

		ck_assert(v == 10 || v == 20);
		halved += v == 10;
	}
	ck_assert_uint_gt(halved, 7000);
	cp_profile_free(p);
	cp_offtotals_free(t);
}
END_TEST

int main(void)
{
	const TTest *const tests[] = { test_scale_per_thread, test_scale_one_profile, test_many_threads };

	return run_tests("offtotals", tests, sizeof(tests) / sizeof(*tests));
}

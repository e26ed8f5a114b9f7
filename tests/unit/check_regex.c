/* SPDX-License-Identifier: MIT */
/* lib/regex.c: PCRE2 patterns matched under limits. */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "regex.h"
#include "testutil.h"

static struct cp_regex *compile_ok(const char *pattern, unsigned flags)
{
	struct cp_regex *re = NULL;
	char why[128];
	size_t off;
	int err = cp_regex_compile(pattern, flags, &re, why, sizeof(why), &off);

	ck_assert_msg(!err, "'%s' does not compile: %s", pattern, why);
	return re;
}

/* n times c, then end (a string to free) */
static char *run_of(char c, size_t n, const char *end)
{
	char *s = malloc(n + strlen(end) + 1);

	ck_assert_ptr_nonnull(s);
	memset(s, c, n);
	strcpy(s + n, end);
	return s;
}

static int match(struct cp_regex_run *run, const struct cp_regex *re, const char *s)
{
	return cp_regex_match(run, re, s, strlen(s));
}

START_TEST(test_search_and_whole)
{
	struct cp_regex_run *run = cp_regex_run_new(NULL);
	struct cp_regex *search = compile_ok("hot_.*", 0), *whole = compile_ok("hot_.*", CP_REGEX_WHOLE);
	struct cp_regex *alt = compile_ok("a|ab", CP_REGEX_WHOLE), *start = compile_ok("^(main|run).*", 0);

	ck_assert_ptr_nonnull(run);
	ck_assert_int_eq(match(run, search, "main;hot_loop"), 1);
	ck_assert_int_eq(match(run, whole, "main;hot_loop"), 0);
	ck_assert_int_eq(match(run, whole, "hot_loop"), 1);
	ck_assert_int_eq(match(run, whole, "hot_loop\nx"), 1); /* . matches a newline */
	ck_assert_int_eq(match(run, alt, "ab"), 1);             /* the end anchor backtracks into the alternation */
	ck_assert_int_eq(match(run, alt, "abc"), 0);
	ck_assert_int_eq(match(run, start, "runtime.main"), 1);
	ck_assert_int_eq(match(run, start, "x_main"), 0);
	ck_assert_int_eq(match(run, search, "hot\xff"), 0); /* not UTF-8: no match, not an error */
	ck_assert_str_eq(cp_regex_pattern(whole), "hot_.*");
	cp_regex_free(search);
	cp_regex_free(whole);
	cp_regex_free(alt);
	cp_regex_free(start);
	cp_regex_run_free(run);
}
END_TEST

START_TEST(test_compile_errors)
{
	struct cp_regex *re = (struct cp_regex *)&re;
	char why[128];
	size_t off = 99;

	ck_assert_int_eq(cp_regex_compile("ab(", 0, &re, why, sizeof(why), &off), -EINVAL);
	ck_assert_ptr_null(re);
	ck_assert_uint_eq(off, 3);
	ck_assert_contains(why, "missing closing parenthesis");
	/* whole-value matching is an option, not text around the pattern that "x)|(y" could close */
	ck_assert_int_eq(cp_regex_compile("x)|(y", CP_REGEX_WHOLE, &re, why, sizeof(why), &off), -EINVAL);
	ck_assert_int_eq(cp_regex_compile("x)|(y", 0, &re, why, sizeof(why), &off), -EINVAL);
}
END_TEST

/* (a+)+$ on a's and a final b backtracks 2^n ways: PCRE2's default limit of
 * ten million steps made it a silent "no match" after a tenth of a second */
START_TEST(test_catastrophic_is_an_error)
{
	struct cp_regex_run *run = cp_regex_run_new(NULL);
	struct cp_regex *re = compile_ok("(a+)+$", 0), *whole = compile_ok("(a+)+$", CP_REGEX_WHOLE);
	char *bad = run_of('a', 1000, "b"), *good = run_of('a', 1000, "");
	int k;

	ck_assert_ptr_nonnull(run);
	for (k = 0; k < 2; k++) { /* the limit is per match: no state carried over */
		cp_error_clear();
		ck_assert_int_eq(match(run, re, bad), -CP_REGEX_ECOST);
		ck_assert_contains(cp_errmsg(CP_REGEX_ECOST), "regex '(a+)+$' is too costly");
		ck_assert_contains(cp_errmsg(CP_REGEX_ECOST), "1001-byte value");
		ck_assert_int_eq(match(run, whole, bad + 970), -CP_REGEX_ECOST);
	}
	/* the same pattern on values it matches, or fails fast on */
	ck_assert_int_eq(match(run, re, good), 1);
	ck_assert_int_eq(match(run, whole, good), 1);
	ck_assert_int_eq(match(run, re, "b"), 0);
	free(bad);
	free(good);
	cp_regex_free(re);
	cp_regex_free(whole);
	cp_regex_run_free(run);
}
END_TEST

START_TEST(test_limits)
{
	struct cp_regex_limits lim = { 1000, CP_REGEX_DEPTH_LIMIT, CP_REGEX_HEAP_KIB, CP_REGEX_JIT_KIB,
				       CP_REGEX_BUDGET_NS };
	struct cp_regex_run *run = cp_regex_run_new(&lim);
	struct cp_regex *re = compile_ok("(a+)+$", 0), *alt = compile_ok("(a|b)*", CP_REGEX_WHOLE);
	char *bad = run_of('a', 12, "b"), *big = run_of('a', 1 << 20, "");

	/* a 13-byte subject takes thousands of steps: over a limit of 1000 */
	ck_assert_int_eq(match(run, re, bad), -CP_REGEX_ECOST);
	ck_assert_contains(cp_errmsg(CP_REGEX_ECOST), "more than 1000 backtracking steps");
	cp_regex_run_free(run);
	/* a group repeated over a 1 MiB value needs more stack (JIT) or heap (interpreter) than allowed */
	lim = (struct cp_regex_limits){ 100000000, 100000000, 1024, 64, CP_REGEX_BUDGET_NS };
	run = cp_regex_run_new(&lim);
	cp_error_clear();
	ck_assert_int_eq(match(run, alt, big), -CP_REGEX_ECOST);
	ck_assert_contains(cp_errmsg(CP_REGEX_ECOST), "too costly");
	ck_assert_int_eq(match(run, alt, "abab"), 1);
	free(bad);
	free(big);
	cp_regex_free(re);
	cp_regex_free(alt);
	cp_regex_run_free(run);
}
END_TEST

/* all the matches of a run share a budget of time: once it is spent, every
 * match fails until a reset (1 ns: spent by the first match) */
START_TEST(test_budget)
{
	struct cp_regex_limits lim = { CP_REGEX_MATCH_LIMIT, CP_REGEX_DEPTH_LIMIT, CP_REGEX_HEAP_KIB, CP_REGEX_JIT_KIB,
				       1 };
	struct cp_regex_run *run = cp_regex_run_new(&lim);
	struct cp_regex *re = compile_ok("x.*y", 0);
	char *s = run_of('x', 4096, "");
	int k;

	ck_assert_int_eq(match(run, re, s), 0);
	for (k = 0; k < 3; k++) {
		cp_error_clear();
		ck_assert_int_eq(match(run, re, "xy"), -CP_REGEX_ECOST);
		ck_assert_contains(cp_errmsg(CP_REGEX_ECOST), "regex 'x.*y' is too costly: matching took more than");
	}
	cp_regex_run_reset(run);
	ck_assert_int_eq(match(run, re, "xy"), 1);
	ck_assert_int_eq(match(run, re, "xy"), -CP_REGEX_ECOST);
	free(s);
	cp_regex_free(re);
	cp_regex_run_free(run);
}
END_TEST

static Suite *regex_suite(void)
{
	Suite *s = suite_create("regex");
	TCase *tc = tcase_create("regex");

	tcase_add_test(tc, test_search_and_whole);
	tcase_add_test(tc, test_compile_errors);
	tcase_add_test(tc, test_catastrophic_is_an_error);
	tcase_add_test(tc, test_limits);
	tcase_add_test(tc, test_budget);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(regex_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

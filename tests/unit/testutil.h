/* SPDX-License-Identifier: MIT */
/* Helpers the Check suites share. */
#ifndef CPROF_TESTUTIL_H
#define CPROF_TESTUTIL_H

#include <check.h>
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

/* Does the string h contain n?  (NULL fails, saying so.) */
#define ck_assert_contains(h, n)                                                                               \
	do {                                                                                                   \
		const char *h_ = (h), *n_ = (n);                                                               \
		ck_assert_msg(h_ && strstr(h_, n_), "'%s' does not contain '%s'", h_ ? h_ : "(null)", n_);     \
	} while (0)

/* Remove a file or a directory tree (a test's scratch directory). */
static inline void rm_rf(const char *path)
{
	struct stat st;

	if (lstat(path, &st) < 0)
		return;
	if (S_ISDIR(st.st_mode)) {
		DIR *d = opendir(path);
		struct dirent *e;

		while (d && (e = readdir(d))) {
			char sub[PATH_MAX];

			if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
				continue;
			if (snprintf(sub, sizeof(sub), "%s/%s", path, e->d_name) < (int)sizeof(sub))
				rm_rf(sub);
		}
		if (d)
			closedir(d);
		rmdir(path);
	} else {
		unlink(path);
	}
}

/* Run the suite of one test case holding tests[0..n), each given timeout
 * seconds (0: Check's default): the exit status of main. */
static inline int run_tests_timeout(const char *name, const TTest *const *tests, size_t n, double timeout)
{
	Suite *s = suite_create(name);
	TCase *tc = tcase_create(name);
	SRunner *r;
	int failed;

	if (timeout > 0)
		tcase_set_timeout(tc, timeout);
	for (size_t i = 0; i < n; i++)
		tcase_add_test(tc, tests[i]);
	suite_add_tcase(s, tc);
	r = srunner_create(s);
	srunner_run_all(r, CK_NORMAL);
	failed = srunner_ntests_failed(r);
	srunner_free(r);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

static inline int run_tests(const char *name, const TTest *const *tests, size_t n)
{
	return run_tests_timeout(name, tests, n, 0);
}

#endif

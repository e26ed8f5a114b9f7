/* SPDX-License-Identifier: MIT */
/* lib/error.c: a message is shown only for the error it was recorded for. */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "testutil.h"

START_TEST(test_error_format)
{
	char longs[CP_ERRMSG_MAX + 200];

	cp_error_clear();
	ck_assert_str_eq(cp_errmsg(ENOENT), strerror(ENOENT));
	ck_assert_str_eq(cp_errmsg(-ENOENT), strerror(ENOENT));

	ck_assert_int_eq(cp_error(EINVAL, "bad %s at line %d", "frame", 7), -EINVAL);
	ck_assert_str_eq(cp_errmsg(EINVAL), "bad frame at line 7");
	ck_assert_str_eq(cp_errmsg(-EINVAL), "bad frame at line 7");
	/* negative err works the same */
	ck_assert_int_eq(cp_error(-EIO, "disk on fire"), -EIO);
	ck_assert_str_eq(cp_errmsg(EIO), "disk on fire");

	ck_assert_int_eq(cp_error_ctx(EIO, "%s", "prof.pb.gz"), -EIO);
	ck_assert_str_eq(cp_errmsg(EIO), "prof.pb.gz: disk on fire");
	ck_assert_int_eq(cp_error_ctx(-EIO, "merge %d", 2), -EIO);
	ck_assert_str_eq(cp_errmsg(EIO), "merge 2: prof.pb.gz: disk on fire");

	/* without a message, the context is put before strerror */
	cp_error_clear();
	ck_assert_int_eq(cp_error_ctx(ENOENT, "x.pb"), -ENOENT);
	ck_assert_str_eq(cp_errmsg(ENOENT), "x.pb: No such file or directory");

	/* long messages are cut, never overflowed */
	memset(longs, 'a', sizeof(longs) - 1);
	longs[sizeof(longs) - 1] = '\0';
	cp_error(E2BIG, "%s", longs);
	ck_assert_uint_eq(strlen(cp_errmsg(E2BIG)), CP_ERRMSG_MAX - 1);
	cp_error_ctx(E2BIG, "ctx");
	ck_assert_uint_lt(strlen(cp_errmsg(E2BIG)), CP_ERRMSG_MAX);
	ck_assert(!strncmp(cp_errmsg(E2BIG), "ctx: aaa", 8));
	cp_error_ctx(E2BIG, "%s", longs); /* a long context is cut too */
	ck_assert_uint_lt(strlen(cp_errmsg(E2BIG)), CP_ERRMSG_MAX);
	ck_assert_contains(cp_errmsg(E2BIG), "aaaa: ctx: aaa");
	cp_error_clear();
}
END_TEST

/* the message of an EINVAL is not the reason of a later EIO */
START_TEST(test_error_other_code_is_not_shown)
{
	cp_error_clear();
	cp_error(EINVAL, "bad frame at line 7");
	ck_assert_str_eq(cp_errmsg(EIO), strerror(EIO));
	ck_assert_str_eq(cp_errmsg(-ENOMEM), strerror(ENOMEM));
	/* asking for another code does not forget the record */
	ck_assert_str_eq(cp_errmsg(EINVAL), "bad frame at line 7");
	/* a later failure with another code replaces it */
	cp_error(ENOENT, "no such series");
	ck_assert_str_eq(cp_errmsg(EINVAL), strerror(EINVAL));
	ck_assert_str_eq(cp_errmsg(ENOENT), "no such series");
	cp_error_clear();
}
END_TEST

/* context for a code that has no record of its own starts from strerror, never
 * from another error's message */
START_TEST(test_error_ctx_other_code)
{
	cp_error_clear();
	cp_error(EINVAL, "bad frame at line 7");
	ck_assert_int_eq(cp_error_ctx(EIO, "writing %s", "out.svg"), -EIO);
	ck_assert_str_eq(cp_errmsg(EIO), "writing out.svg: Input/output error");
	ck_assert_str_eq(cp_errmsg(EINVAL), strerror(EINVAL));
	cp_error_clear();
}
END_TEST

/* a superseded record (cleared at the start of the next operation, or by
 * the code that handled the failure) is not shown even for the same code */
START_TEST(test_error_superseded_same_code)
{
	cp_error(EINVAL, "a.pb.gz: not a profile");
	cp_error_clear(); /* the fallback succeeded, or the next file begins */
	ck_assert_str_eq(cp_errmsg(EINVAL), strerror(EINVAL));
	/* and context added later does not bring it back */
	ck_assert_int_eq(cp_error_ctx(EINVAL, "b.pb.gz"), -EINVAL);
	ck_assert_str_eq(cp_errmsg(EINVAL), "b.pb.gz: Invalid argument");
	cp_error_clear();
}
END_TEST

/* the code of the record, for a caller that cleared it before a call that
 * reports a failure without its code */
START_TEST(test_error_code)
{
	cp_error_clear();
	ck_assert_int_eq(cp_error_code(), 0);
	cp_error(-EIO, "disk on fire");
	ck_assert_int_eq(cp_error_code(), EIO);
	ck_assert_str_eq(cp_errmsg(cp_error_code()), "disk on fire");
	cp_error_ctx(ENOENT, "x.pb");
	ck_assert_int_eq(cp_error_code(), ENOENT);
	cp_error_clear();
	ck_assert_int_eq(cp_error_code(), 0);
}
END_TEST

static void *other_thread(void *arg)
{
	char *out = arg;

	/* a fresh thread has no message of its own, even for the main thread's code */
	snprintf(out, 256, "%s", cp_errmsg(EINVAL));
	cp_error(EINVAL, "set in the other thread");
	return NULL;
}

START_TEST(test_error_per_thread)
{
	char seen[256];
	pthread_t t;

	cp_error(EINVAL, "main thread message");
	ck_assert_int_eq(pthread_create(&t, NULL, other_thread, seen), 0);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	ck_assert_str_eq(seen, strerror(EINVAL));
	ck_assert_str_eq(cp_errmsg(EINVAL), "main thread message");
	cp_error_clear();
}
END_TEST

static Suite *error_suite(void)
{
	Suite *s = suite_create("error");
	TCase *tc = tcase_create("contract");

	tcase_add_test(tc, test_error_format);
	tcase_add_test(tc, test_error_other_code_is_not_shown);
	tcase_add_test(tc, test_error_ctx_other_code);
	tcase_add_test(tc, test_error_superseded_same_code);
	tcase_add_test(tc, test_error_code);
	tcase_add_test(tc, test_error_per_thread);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(error_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/* SPDX-License-Identifier: MIT */
/* lib/sampling/launch.c: a command started held until released. */
#include <check.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "error.h"
#include "sampling/launch.h"
#include "testutil.h"

static char dir[PATH_MAX], mark[PATH_MAX + 16];

static void setup(void)
{
	snprintf(dir, sizeof(dir), "%s/cp-launch-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(mark, sizeof(mark), "%s/ran", dir);
}

static void teardown(void)
{
	rm_rf(dir);
}

/* the executable the child runs now, from /proc */
static void exe_of(pid_t pid, char *buf, size_t len)
{
	char path[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	n = readlink(path, buf, len - 1);
	ck_assert_int_gt(n, 0);
	buf[n] = 0;
}

static bool exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0;
}

START_TEST(test_held_then_released)
{
	struct cp_launch l;
	char self[PATH_MAX], child[PATH_MAX], script[PATH_MAX + 64];
	char *argv[] = { "sh", "-c", script, NULL };

	snprintf(script, sizeof(script), ": > '%s'; exit 3", mark);
	ck_assert_int_eq(cp_launch_start(&l, argv), 0);
	ck_assert_int_gt(l.pid, 0);
	/* held: still this program, blocked before exec, and nothing ran */
	exe_of(getpid(), self, sizeof(self));
	exe_of(l.pid, child, sizeof(child));
	ck_assert_str_eq(child, self);
	ck_assert(!cp_launch_poll(&l));
	ck_assert(!exists(mark));
	ck_assert_int_eq(cp_launch_release(&l), 0);
	while (!cp_launch_poll(&l))
		usleep(1000);
	ck_assert(WIFEXITED(l.status));
	ck_assert_int_eq(WEXITSTATUS(l.status), 3);
	ck_assert(exists(mark));
	cp_launch_end(&l); /* nothing left to do, and safe */
	ck_assert_int_eq(l.go_fd, -1);
	ck_assert_int_eq(l.err_fd, -1);
}
END_TEST

START_TEST(test_exec_error)
{
	struct cp_launch l;
	char *argv[] = { "/nonexistent/prog", NULL };

	ck_assert_int_eq(cp_launch_start(&l, argv), 0);
	ck_assert_int_eq(cp_launch_release(&l), -ENOENT);
	ck_assert_str_eq(cp_errmsg(ENOENT), "cannot run /nonexistent/prog: No such file or directory");
	ck_assert_int_eq(l.pid, -1); /* reaped */
	cp_launch_end(&l);
	/* a file that is no program */
	ck_assert_int_eq(cp_launch_start(&l, (char *[]){ dir, NULL }), 0);
	ck_assert_int_eq(cp_launch_release(&l), -EACCES);
	cp_launch_end(&l);
}
END_TEST

START_TEST(test_never_released)
{
	struct cp_launch l;
	char script[PATH_MAX + 64];
	char *argv[] = { "sh", "-c", script, NULL };

	snprintf(script, sizeof(script), ": > '%s'", mark);
	ck_assert_int_eq(cp_launch_start(&l, argv), 0);
	cp_launch_end(&l);
	ck_assert(l.exited);
	ck_assert(WIFEXITED(l.status));
	ck_assert_int_eq(WEXITSTATUS(l.status), 127);
	ck_assert(!exists(mark)); /* the command never ran */
	ck_assert_int_eq(cp_launch_release(&l), -EINVAL);
}
END_TEST

START_TEST(test_end_stops_a_running_child)
{
	struct cp_launch l;
	char *argv[] = { "sleep", "1000", NULL };

	ck_assert_int_eq(cp_launch_start(&l, argv), 0);
	ck_assert_int_eq(cp_launch_release(&l), 0);
	ck_assert(!cp_launch_poll(&l));
	cp_launch_end(&l);
	ck_assert(WIFSIGNALED(l.status));
	ck_assert_int_eq(WTERMSIG(l.status), SIGTERM);
}
END_TEST

/* the process state letter of /proc/PID/stat (Z: exited, not reaped) */
static char state_of(pid_t pid)
{
	char path[64], buf[512], *paren;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	ck_assert_ptr_nonnull(f = fopen(path, "r"));
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	ck_assert_ptr_nonnull(paren = strrchr(buf, ')'));
	return paren[2];
}

START_TEST(test_killed_while_held)
{
	struct cp_launch l;
	char *argv[] = { "true", NULL };

	ck_assert_int_eq(cp_launch_start(&l, argv), 0);
	ck_assert_int_eq(kill(l.pid, SIGKILL), 0);
	while (state_of(l.pid) != 'Z') /* gone, its end of the gate closed */
		usleep(1000);
	/* an error with its reason, not SIGPIPE for the caller */
	ck_assert_int_eq(cp_launch_release(&l), -ECHILD);
	ck_assert_msg(strstr(cp_errmsg(ECHILD), "cannot run true: it was killed"), "%s", cp_errmsg(ECHILD));
	ck_assert_int_eq(l.pid, -1);
	ck_assert(WIFSIGNALED(l.status));
	cp_launch_end(&l);
}
END_TEST

START_TEST(test_nothing_started)
{
	struct cp_launch l;

	cp_launch_init(&l);
	ck_assert(!cp_launch_poll(&l));
	ck_assert_int_eq(cp_launch_release(&l), -EINVAL);
	cp_launch_end(&l);
}
END_TEST

static Suite *launch_suite(void)
{
	Suite *s = suite_create("launch");
	TCase *tc = tcase_create("launch");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_held_then_released);
	tcase_add_test(tc, test_exec_error);
	tcase_add_test(tc, test_never_released);
	tcase_add_test(tc, test_end_stops_a_running_child);
	tcase_add_test(tc, test_killed_while_held);
	tcase_add_test(tc, test_nothing_started);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(launch_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

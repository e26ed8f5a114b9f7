/* SPDX-License-Identifier: MIT */
/* The scope index of a compilation unit against libdw's own per-address
 * walk (dwarf_getscopes, then the concrete chain of the innermost inlined
 * call): the same scopes for every address of every unit of a real binary
 * built with inlining: cprof itself (the tests run in the build directory). */
#include <check.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "sampling/scopes.h"

#define MAXS 64

/* libdw's answer, as the symbolizer used it: innermost first, up to the
 * first function */
static int reference(Dwarf_Die *cu, uint64_t pc, Dwarf_Off *out)
{
	Dwarf_Die *scopes = NULL;
	int ns = dwarf_getscopes(cu, pc, &scopes), n = 0;

	for (int i = 0; i < ns; i++) {
		if (dwarf_tag(&scopes[i]) == DW_TAG_inlined_subroutine) {
			Dwarf_Die *chain = NULL;
			int nc = dwarf_getscopes_die(&scopes[i], &chain);

			if (nc > 0) {
				free(scopes);
				scopes = chain;
				ns = nc;
			} else {
				free(chain);
			}
			break;
		}
	}
	for (int i = 0; i < ns && n < MAXS; i++) {
		int tag = dwarf_tag(&scopes[i]);

		if (tag == DW_TAG_inlined_subroutine || tag == DW_TAG_subprogram)
			out[n++] = dwarf_dieoffset(&scopes[i]);
		if (tag == DW_TAG_subprogram)
			break;
	}
	free(scopes);
	return ns > 0 ? n : 0;
}

START_TEST(test_scopes_match_libdw)
{
	int fd = open("cprof", O_RDONLY);
	Dwarf *dbg = fd >= 0 ? dwarf_begin(fd, DWARF_C_READ) : NULL;
	Dwarf_Off off = 0, next;
	size_t hsize, units = 0, checked = 0, inlined = 0;

	ck_assert_msg(dbg != NULL, "this test needs its own DWARF (built with -g)");
	while (dwarf_nextcu(dbg, off, &next, &hsize, NULL, NULL, NULL) == 0) {
		Dwarf_Die cu;
		Dwarf_Addr base, lo, hi;
		ptrdiff_t r = 0;
		struct cp_scopes *s;

		if (!dwarf_offdie(dbg, off + hsize, &cu)) {
			off = next;
			continue;
		}
		s = cp_scopes_build(&cu);
		ck_assert_ptr_nonnull(s);
		units++;
		while ((r = dwarf_ranges(&cu, r, &base, &lo, &hi)) > 0) {
			for (uint64_t pc = lo; pc < hi; pc += 5) {
				Dwarf_Off want[MAXS];
				Dwarf_Die got[MAXS];
				int nw = reference(&cu, pc, want), ng = cp_scopes_find(s, pc, got, MAXS);

				ck_assert_int_eq(ng, nw);
				for (int i = 0; i < ng; i++)
					ck_assert_uint_eq(dwarf_dieoffset(&got[i]), want[i]);
				checked++;
				inlined += ng > 1;
			}
		}
		cp_scopes_free(s);
		off = next;
	}
	dwarf_end(dbg);
	close(fd);
	/* the comparison meant something: many addresses, some in inlined calls */
	ck_assert_uint_gt(units, 10);
	ck_assert_uint_gt(checked, 10000);
	ck_assert_uint_gt(inlined, 100);
}
END_TEST

START_TEST(test_scopes_empty_unit)
{
	/* an address in no scope: none */
	int fd = open("/proc/self/exe", O_RDONLY);
	Dwarf *dbg = fd >= 0 ? dwarf_begin(fd, DWARF_C_READ) : NULL;
	Dwarf_Off next;
	size_t hsize;
	Dwarf_Die cu, out[4];
	struct cp_scopes *s;

	ck_assert_ptr_nonnull(dbg);
	ck_assert_int_eq(dwarf_nextcu(dbg, 0, &next, &hsize, NULL, NULL, NULL), 0);
	ck_assert_ptr_nonnull(dwarf_offdie(dbg, hsize, &cu));
	s = cp_scopes_build(&cu);
	ck_assert_ptr_nonnull(s);
	ck_assert_int_eq(cp_scopes_find(s, 0, out, 4), 0);
	ck_assert_int_eq(cp_scopes_find(s, UINT64_MAX, out, 4), 0);
	ck_assert_uint_gt(cp_scopes_size(s), 0);
	cp_scopes_free(s);
	dwarf_end(dbg);
	close(fd);
}
END_TEST

static Suite *scopes_suite(void)
{
	Suite *s = suite_create("scopes");
	TCase *tc = tcase_create("libdw");

	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_scopes_match_libdw);
	tcase_add_test(tc, test_scopes_empty_unit);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(scopes_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

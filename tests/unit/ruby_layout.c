/* SPDX-License-Identifier: MIT */
/* Prints the offsets and flags cprof follows in a CRuby process of version
 * MAJOR.MINOR (lib/sampling/runtimes/ruby/ruby.c), one "name value" line each,
 * for tests/cli/test-ruby.sh, which compares them with the installed MJIT
 * header's (tests/fixtures/record/rb_layout.c).  A field cprof does not know
 * prints -1.  Usage: ruby_layout MAJOR MINOR NAME... */
#include <stdio.h>
#include <stdlib.h>

#include "sampling/runtimes/ruby/ruby.h"

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: ruby_layout MAJOR MINOR NAME...\n");
		return 2;
	}
	for (int i = 3; i < argc; i++)
		printf("%s %ld\n", argv[i], cp_ruby_offset((unsigned)atoi(argv[1]), (unsigned)atoi(argv[2]), argv[i]));
	return 0;
}

/* SPDX-License-Identifier: MIT */
/* Helpers the Check suites share. */
#ifndef CPROF_TESTUTIL_H
#define CPROF_TESTUTIL_H

#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

#endif

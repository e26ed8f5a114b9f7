/* SPDX-License-Identifier: MIT */
/* Fuzz target: the debug files the recorder reads from disk and the copies
 * it keeps of them (lib/sampling/debugcopy.c).  Each input is tried twice:
 * as a debug file found in a build-id tree (cp_debugcopy: checked, its
 * compressed sections uncompressed and written to the cache directory, as
 * the recorder's find_debuginfo does), and as a copy found in the cache
 * directory (cp_debugcopy_open: checked before it is used, removed when
 * damaged).  The build id is the input's own when it has one.  Whatever the
 * input, a descriptor comes back for it or for a copy that passes the
 * checks, and nothing is left half-written. */
#include <elfutils/libdwelf.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "sampling/debugcopy.h"
#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len);

static char top[PATH_MAX], cache[PATH_MAX + 16];

/* the scratch directory goes at exit (what is left in it: the writers'
 * temporary files, if any) */
static void cleanup(void)
{
	char cmd[PATH_MAX + 32];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", top);
	if (system(cmd) != 0)
		fprintf(stderr, "fuzz_debugfile: cannot remove %s\n", top);
}

static void setup(void)
{
	const char *tmp = getenv("TMPDIR");

	if (cache[0])
		return;
	snprintf(top, sizeof(top), "%s/cp-fuzz-debugfile-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(top))
		abort();
	setenv("XDG_CACHE_HOME", top, 1);
	snprintf(cache, sizeof(cache), "%s/cprof", top);
	elf_version(EV_CURRENT);
	atexit(cleanup);
}

/* the input's build id in hex, else a fixed one */
static void build_id(int fd, char *hex)
{
	Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	const void *id;
	ssize_t n = e ? dwelf_elf_gnu_build_id(e, &id) : -1;

	if (n > 0 && n <= 64)
		for (ssize_t i = 0; i < n; i++)
			snprintf(hex + 2 * i, 3, "%02x", ((const unsigned char *)id)[i]);
	else
		strcpy(hex, "00112233445566778899aabbccddeeff00112233");
	elf_end(e);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	char hex[129], copy[PATH_MAX + 160], *path = NULL;
	int fd, got;
	FILE *f;

	setup();
	fd = memfd_create("debugfile", MFD_CLOEXEC);
	if (fd < 0 || (len && write(fd, data, len) != (ssize_t)len))
		abort();
	build_id(fd, hex);
	snprintf(copy, sizeof(copy), "%s/debug-%s.debug", cache, hex);
	/* as a debug file found on disk */
	got = cp_debugcopy(fd, hex, &path);
	if (got < 0)
		abort();
	if (got != fd) { /* a copy was made: it passed the checks */
		char *again = NULL;
		int fd2 = cp_debugcopy_open(hex, &again);

		if (fd2 < 0 || !path || strcmp(path, again) != 0)
			abort();
		close(fd2);
		free(again);
	}
	close(got);
	free(path);
	path = NULL;
	unlink(copy);
	/* as a copy found in the cache directory */
	f = fopen(copy, "w");
	if (f) {
		fwrite(data, 1, len, f);
		fclose(f);
		got = cp_debugcopy_open(hex, &path);
		if (got >= 0)
			close(got);
		free(path);
		unlink(copy);
	}
	return 0;
}

/* SPDX-License-Identifier: MIT */
/* Uncompressed copies of debug files (lib/sampling/debugcopy.c), on a
 * program built here by gcc with its DWARF compressed (-gz=zlib, as
 * distributions ship debug files): the copy has every section of the file,
 * none compressed, the same bytes once uncompressed and the same lines for
 * libdw; it is reused, replaced when damaged or another build's, not made
 * for a file with nothing compressed or without a build id, and the cache
 * keeps the most recently used copies within its size. */
#include <check.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "sampling/debugcopy.h"
#include "testutil.h"

static char tmpdir[PATH_MAX], cachedir[PATH_MAX + 16], prog[PATH_MAX + 16], plain[PATH_MAX + 16];

static void build(const char *out, const char *flags)
{
	char src[PATH_MAX + 16], cmd[3 * PATH_MAX];
	FILE *f;

	snprintf(src, sizeof(src), "%s/prog.c", tmpdir);
	f = fopen(src, "w");
	ck_assert_ptr_nonnull(f);
	fputs("volatile int sink;\n"
	      "static inline void step(int i) { sink += i * 3; }\n"
	      "__attribute__((noinline)) void work(int n) { for (int i = 0; i < n; i++) step(i); }\n"
	      "int main(void) { work(10); return 0; }\n",
	      f);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "gcc -O2 -g %s -Wl,--build-id -o '%s' '%s'", flags, out, src);
	ck_assert_msg(system(cmd) == 0, "gcc failed: %s", cmd);
}

static void setup(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "%s/cp-debugcopy-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
	setenv("XDG_CACHE_HOME", tmpdir, 1);
	snprintf(cachedir, sizeof(cachedir), "%s/cprof", tmpdir);
	snprintf(prog, sizeof(prog), "%s/prog", tmpdir);
	snprintf(plain, sizeof(plain), "%s/plain", tmpdir);
	build(prog, "-gz=zlib");
	build(plain, "-gz=none");
}

static void teardown(void)
{
	rm_rf(tmpdir);
}

/* the build id of path, in hex */
static void build_id(const char *path, char *hex)
{
	int fd = open(path, O_RDONLY);
	Elf *e = elf_begin(fd, ELF_C_READ, NULL);
	const void *id;
	ssize_t n = dwelf_elf_gnu_build_id(e, &id);

	ck_assert_int_gt(n, 0);
	for (ssize_t i = 0; i < n; i++)
		sprintf(hex + 2 * i, "%02x", ((const unsigned char *)id)[i]);
	elf_end(e);
	close(fd);
}

static int count_compressed(int fd, size_t *nsec)
{
	Elf *e = elf_begin(fd, ELF_C_READ, NULL);
	Elf_Scn *scn = NULL;
	int n = 0;

	ck_assert_ptr_nonnull(e);
	*nsec = 0;
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;

		ck_assert_ptr_nonnull(gelf_getshdr(scn, &sh));
		n += (sh.sh_flags & SHF_COMPRESSED) != 0;
		(*nsec)++;
	}
	elf_end(e);
	return n;
}

/* Every section of a and b: the same name, type and (uncompressed) bytes. */
static void same_sections(const char *a, const char *b)
{
	int fa = open(a, O_RDONLY), fb = open(b, O_RDONLY);
	Elf *ea = elf_begin(fa, ELF_C_READ, NULL), *eb = elf_begin(fb, ELF_C_READ, NULL);
	Elf_Scn *sa = NULL, *sb = NULL;
	size_t stra, strb, n = 0;

	ck_assert(ea && eb);
	ck_assert_int_eq(elf_getshdrstrndx(ea, &stra), 0);
	ck_assert_int_eq(elf_getshdrstrndx(eb, &strb), 0);
	while ((sa = elf_nextscn(ea, sa))) {
		GElf_Shdr ha, hb;
		Elf_Data *da, *db;

		sb = elf_nextscn(eb, sb);
		ck_assert_ptr_nonnull(sb);
		ck_assert(gelf_getshdr(sa, &ha) && gelf_getshdr(sb, &hb));
		ck_assert_str_eq(elf_strptr(ea, stra, ha.sh_name), elf_strptr(eb, strb, hb.sh_name));
		ck_assert_int_eq(ha.sh_type, hb.sh_type);
		ck_assert_int_eq(hb.sh_flags & SHF_COMPRESSED, 0);
		if (ha.sh_flags & SHF_COMPRESSED)
			ck_assert_int_eq(elf_compress(sa, 0, 0), 1);
		if (ha.sh_type == SHT_NOBITS)
			continue;
		da = elf_getdata(sa, NULL);
		db = elf_getdata(sb, NULL);
		ck_assert(da && db);
		ck_assert_uint_eq(da->d_size, db->d_size);
		if (da->d_size)
			ck_assert_int_eq(memcmp(da->d_buf, db->d_buf, da->d_size), 0);
		n++;
	}
	ck_assert_ptr_null(elf_nextscn(eb, sb));
	ck_assert_uint_gt(n, 5);
	elf_end(ea);
	elf_end(eb);
	close(fa);
	close(fb);
}

/* The line rows of every unit of path, as "addr line" text. */
static char *lines_of(const char *path)
{
	int fd = open(path, O_RDONLY);
	Dwarf *dw = dwarf_begin(fd, DWARF_C_READ);
	Dwarf_Off off = 0, next;
	size_t hsize, len = 0;
	char *text = NULL;
	FILE *out = open_memstream(&text, &len);

	ck_assert_ptr_nonnull(dw);
	while (dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
		Dwarf_Die cu;
		Dwarf_Lines *lines;
		size_t n;

		if (dwarf_offdie(dw, off + hsize, &cu) && dwarf_getsrclines(&cu, &lines, &n) == 0)
			for (size_t i = 0; i < n; i++) {
				Dwarf_Line *l = dwarf_onesrcline(lines, i);
				Dwarf_Addr a;
				int ln;

				dwarf_lineaddr(l, &a);
				dwarf_lineno(l, &ln);
				fprintf(out, "%llx %d %s\n", (unsigned long long)a, ln, dwarf_linesrc(l, NULL, NULL));
			}
		off = next;
	}
	fclose(out);
	dwarf_end(dw);
	close(fd);
	return text;
}

START_TEST(test_copy_is_uncompressed_and_the_same)
{
	char hex[129], want[PATH_MAX + 160], *path = strdup(prog), *a, *b;
	int fd = open(prog, O_RDONLY), nfd;
	size_t nsec_a, nsec_b;
	struct stat st;

	ck_assert_int_ge(fd, 0);
	ck_assert_int_gt(count_compressed(fd, &nsec_a), 0);
	build_id(prog, hex);
	nfd = cp_debugcopy(fd, hex, &path);
	ck_assert_int_ne(nfd, fd);
	ck_assert_int_ge(nfd, 0);
	snprintf(want, sizeof(want), "%s/debug-%s.debug", cachedir, hex);
	ck_assert_str_eq(path, want);
	ck_assert_int_eq(stat(want, &st), 0);
	ck_assert_int_eq(st.st_mode & 0777, 0600);
	ck_assert_int_eq(count_compressed(nfd, &nsec_b), 0);
	ck_assert_uint_eq(nsec_a, nsec_b);
	/* fd was closed: the descriptor may be reused, never leaked */
	ck_assert_int_eq(fcntl(fd, F_GETFD) < 0 || fd == nfd, 1);
	same_sections(prog, want);
	a = lines_of(prog);
	b = lines_of(want);
	ck_assert_uint_gt(strlen(a), 20);
	ck_assert_str_eq(a, b);
	free(a);
	free(b);
	close(nfd);
	free(path);
}
END_TEST

/* the copy at path, for build id hex, is refused and deleted */
static void refused_and_removed(const char *hex, const char *path)
{
	char *p = NULL;

	ck_assert_int_eq(cp_debugcopy_open(hex, &p), -1);
	ck_assert_int_ne(access(path, F_OK), 0);
	free(p);
}

START_TEST(test_copy_reused_and_replaced)
{
	char hex[129], *path = NULL, *p2 = NULL, other[PATH_MAX + 160];
	int fd = open(prog, O_RDONLY), nfd, again;
	struct stat s1, s2;

	build_id(prog, hex);
	ck_assert_int_eq(cp_debugcopy_open(hex, &p2), -1); /* none yet */
	nfd = cp_debugcopy(fd, hex, &path);
	ck_assert_int_ne(nfd, fd);
	ck_assert_int_eq(fstat(nfd, &s1), 0);
	close(nfd);
	/* made once: the second is the same file */
	again = cp_debugcopy_open(hex, &p2);
	ck_assert_int_ge(again, 0);
	ck_assert_str_eq(p2, path);
	ck_assert_int_eq(fstat(again, &s2), 0);
	ck_assert_uint_eq(s1.st_ino, s2.st_ino);
	close(again);
	free(p2);
	p2 = NULL;
	/* damaged (cut short): not used, removed, made again by the next */
	ck_assert_int_eq(truncate(path, s1.st_size / 2), 0);
	refused_and_removed(hex, path);
	fd = open(prog, O_RDONLY);
	nfd = cp_debugcopy(fd, hex, &p2);
	ck_assert_int_ne(nfd, fd);
	ck_assert_int_eq(fstat(nfd, &s2), 0);
	ck_assert_int_eq(s2.st_size, s1.st_size);
	close(nfd);
	free(p2);
	p2 = NULL;
	/* another build's copy under this name is not taken */
	snprintf(other, sizeof(other), "%s/debug-%s.debug", cachedir, "00112233445566778899aabbccddeeff00112233");
	ck_assert_int_eq(rename(path, other), 0);
	refused_and_removed("00112233445566778899aabbccddeeff00112233", other);
	free(path);
}
END_TEST

START_TEST(test_no_copy_when_not_needed_or_possible)
{
	char hex[129], *path = strdup(plain), bad[PATH_MAX + 16];
	int fd = open(plain, O_RDONLY);
	size_t n;
	FILE *f;

	/* nothing compressed: the file itself */
	ck_assert_int_eq(count_compressed(fd, &n), 0);
	build_id(plain, hex);
	ck_assert_int_eq(cp_debugcopy(fd, hex, &path), fd);
	ck_assert_str_eq(path, plain);
	ck_assert_int_eq(fcntl(fd, F_GETFD) >= 0, 1);
	close(fd);
	/* no usable build id */
	fd = open(prog, O_RDONLY);
	ck_assert_int_eq(cp_debugcopy(fd, NULL, &path), fd);
	ck_assert_int_eq(cp_debugcopy(fd, "", &path), fd);
	ck_assert_int_eq(cp_debugcopy(fd, "../../etc/passwd", &path), fd);
	ck_assert_int_eq(cp_debugcopy(fd, "ABCDEF", &path), fd);
	ck_assert_int_eq(cp_debugcopy(-1, hex, &path), -1);
	/* not an ELF file */
	snprintf(bad, sizeof(bad), "%s/notelf", tmpdir);
	f = fopen(bad, "w");
	fputs("not an ELF file\n", f);
	fclose(f);
	{
		int b = open(bad, O_RDONLY);

		ck_assert_int_eq(cp_debugcopy(b, hex, &path), b);
		close(b);
	}
	/* no cache directory to be had: the file itself */
	setenv("XDG_CACHE_HOME", bad, 1); /* a file, not a directory */
	build_id(prog, hex);
	ck_assert_int_eq(cp_debugcopy(fd, hex, &path), fd);
	ck_assert_int_eq(cp_debugcopy_open(hex, &path), -1);
	ck_assert_str_eq(path, plain);
	close(fd);
	free(path);
}
END_TEST

static void make_file(const char *name, size_t size, time_t mtime)
{
	char p[PATH_MAX + 64];
	struct timespec ts[2] = { { mtime, 0 }, { mtime, 0 } };
	int fd;

	snprintf(p, sizeof(p), "%s/%s", cachedir, name);
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, (off_t)size), 0);
	ck_assert_int_eq(futimens(fd, ts), 0);
	close(fd);
}

static bool exists(const char *name)
{
	char p[PATH_MAX + 64];

	snprintf(p, sizeof(p), "%s/%s", cachedir, name);
	return access(p, F_OK) == 0;
}

START_TEST(test_prune_keeps_the_recently_used)
{
	time_t now = time(NULL);

	ck_assert_int_eq(mkdir(cachedir, 0700), 0);
	make_file("debug-aa.debug", 1000, now - 300);
	make_file("debug-bb.debug", 1000, now - 200);
	make_file("debug-cc.debug", 1000, now - 100);
	make_file("kallsyms", 5000, now - 1000);                /* not a copy */
	make_file("debug-dd.debug.123.tmp", 10, now - 7200);    /* a writer's leftover */
	make_file("debug-ee.debug.456.tmp", 10, now);           /* a writer at work */
	cp_debugcopy_prune(cachedir, 3000, 0);
	ck_assert(exists("debug-aa.debug") && exists("debug-bb.debug") && exists("debug-cc.debug"));
	cp_debugcopy_prune(cachedir, 3000, 1500);
	ck_assert(!exists("debug-aa.debug") && !exists("debug-bb.debug") && exists("debug-cc.debug"));
	ck_assert(exists("kallsyms"));
	ck_assert(!exists("debug-dd.debug.123.tmp"));
	ck_assert(exists("debug-ee.debug.456.tmp"));
}
END_TEST

static Suite *debugcopy_suite(void)
{
	Suite *s = suite_create("debugcopy");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_copy_is_uncompressed_and_the_same);
	tcase_add_test(tc, test_copy_reused_and_replaced);
	tcase_add_test(tc, test_no_copy_when_not_needed_or_possible);
	tcase_add_test(tc, test_prune_keeps_the_recently_used);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr;
	int failed;

	elf_version(EV_CURRENT);
	sr = srunner_create(debugcopy_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

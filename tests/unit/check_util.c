/* SPDX-License-Identifier: MIT */
/* lib/util.c (files, streams, growable arrays) and lib/error.c (messages). */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zlib.h>
#include "error.h"
#include "gzip.h"
#include "hugepages.h"
#include "selector.h"
#include "util.h"
#include "testutil.h"

/* ---- a scratch directory per test ---- */

static char dir[PATH_MAX];

static void dir_setup(void)
{
	const char *tmp = getenv("TMPDIR");

	snprintf(dir, sizeof(dir), "%s/cprof-util-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void dir_teardown(void)
{
	rm_rf(dir);
}

static const char *in_dir(const char *name, char *buf, size_t len)
{
	ck_assert_int_lt(snprintf(buf, len, "%s/%s", dir, name), (int)len);
	return buf;
}

/* The entries of path (without . and ..), joined by '|' in sorted order. */
static int count_entries(const char *path, char *names, size_t len)
{
	struct dirent **list = NULL;
	int n = scandir(path, &list, NULL, alphasort), i, count = 0;

	ck_assert_int_ge(n, 0);
	names[0] = '\0';
	for (i = 0; i < n; i++) {
		if (strcmp(list[i]->d_name, ".") && strcmp(list[i]->d_name, "..")) {
			if (count++)
				strncat(names, "|", len - strlen(names) - 1);
			strncat(names, list[i]->d_name, len - strlen(names) - 1);
		}
		free(list[i]);
	}
	free(list);
	return count;
}

static void put_file(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "wb");

	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(data, 1, len, f), len);
	ck_assert_int_eq(fclose(f), 0);
}

/* ---- cp_read_file ---- */

START_TEST(test_read_file)
{
	static const char text[] = "hello\0world\n";
	char path[PATH_MAX];
	uint8_t *data = NULL;
	size_t len = 0;

	put_file(in_dir("a.txt", path, sizeof(path)), text, sizeof(text) - 1);
	ck_assert_int_eq(cp_read_file(path, 1024, &data, &len), 0);
	ck_assert_uint_eq(len, sizeof(text) - 1);
	ck_assert_mem_eq(data, text, len);
	free(data);

	/* an empty file reads as zero bytes */
	put_file(in_dir("empty", path, sizeof(path)), "", 0);
	data = NULL;
	len = 99;
	ck_assert_int_eq(cp_read_file(path, 1024, &data, &len), 0);
	ck_assert_uint_eq(len, 0);
	free(data);
}
END_TEST

START_TEST(test_read_file_large)
{
	/* more than the first 64 KiB read, to exercise growing the buffer */
	size_t n = 300000, i, len = 0;
	uint8_t *buf = malloc(n), *data = NULL;
	char path[PATH_MAX];

	ck_assert_ptr_nonnull(buf);
	for (i = 0; i < n; i++)
		buf[i] = (uint8_t)(i * 7 + (i >> 9));
	put_file(in_dir("big.bin", path, sizeof(path)), buf, n);
	ck_assert_int_eq(cp_read_file(path, n, &data, &len), 0); /* exactly at the limit is fine */
	ck_assert_uint_eq(len, n);
	ck_assert_mem_eq(data, buf, n);
	free(data);
	free(buf);
}
END_TEST

START_TEST(test_read_file_missing)
{
	char path[PATH_MAX];
	uint8_t *data = NULL;
	size_t len = 0;

	cp_error_clear();
	in_dir("no-such-file.pb.gz", path, sizeof(path));
	ck_assert_int_eq(cp_read_file(path, 1024, &data, &len), -ENOENT);
	ck_assert_ptr_null(data);
	ck_assert_contains(cp_errmsg(ENOENT), path);
	ck_assert_contains(cp_errmsg(ENOENT), strerror(ENOENT));
}
END_TEST

START_TEST(test_read_file_directory)
{
	uint8_t *data = NULL;
	size_t len = 0;

	cp_error_clear();
	ck_assert_int_eq(cp_read_file(dir, 1024, &data, &len), -EISDIR);
	ck_assert_ptr_null(data);
	ck_assert_contains(cp_errmsg(EISDIR), dir);
	ck_assert_contains(cp_errmsg(EISDIR), "is a directory");
}
END_TEST

START_TEST(test_read_file_limit)
{
	size_t max = (size_t)1 << 20, len = 0;
	uint8_t *buf = calloc(1, max + 1), *data = NULL;
	char path[PATH_MAX];

	ck_assert_ptr_nonnull(buf);
	put_file(in_dir("over", path, sizeof(path)), buf, max + 1);
	cp_error_clear();
	ck_assert_int_eq(cp_read_file(path, max, &data, &len), -EFBIG);
	ck_assert_ptr_null(data);
	ck_assert_contains(cp_errmsg(EFBIG), path);
	ck_assert_contains(cp_errmsg(EFBIG), "1 MiB");

	/* one byte less is within the limit */
	put_file(path, buf, max);
	ck_assert_int_eq(cp_read_file(path, max, &data, &len), 0);
	ck_assert_uint_eq(len, max);
	free(data);

	/* a small file against a tiny limit */
	put_file(path, "0123456789", 10);
	data = NULL;
	ck_assert_int_eq(cp_read_file(path, 9, &data, &len), -EFBIG);
	ck_assert_ptr_null(data);
	ck_assert_int_eq(cp_read_file(path, 10, &data, &len), 0);
	ck_assert_uint_eq(len, 10);
	ck_assert_mem_eq(data, "0123456789", 10);
	free(data);
	/* no limit at all */
	data = NULL;
	ck_assert_int_eq(cp_read_file(path, SIZE_MAX, &data, &len), 0);
	ck_assert_uint_eq(len, 10);
	ck_assert_mem_eq(data, "0123456789", 10);
	free(data);
	free(buf);
}
END_TEST

/* ---- cp_write_file_atomic ---- */

START_TEST(test_write_atomic)
{
	char path[PATH_MAX], names[1024];
	uint8_t *data = NULL;
	size_t len = 0;
	struct stat st;

	in_dir("out.pb.gz", path, sizeof(path));
	ck_assert_int_eq(cp_write_file_atomic(path, "first version", 13), 0);
	ck_assert_int_eq(cp_read_file(path, 1024, &data, &len), 0);
	ck_assert_uint_eq(len, 13);
	ck_assert_mem_eq(data, "first version", 13);
	free(data);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_eq(st.st_mode & 0777, 0644);

	/* replacing: the new content, whole, and still one file in the directory */
	ck_assert_int_eq(cp_write_file_atomic(path, "v2", 2), 0);
	ck_assert_int_eq(cp_read_file(path, 1024, &data, &len), 0);
	ck_assert_uint_eq(len, 2);
	ck_assert_mem_eq(data, "v2", 2);
	free(data);

	/* empty content gives an empty file */
	ck_assert_int_eq(cp_write_file_atomic(in_dir("empty", path, sizeof(path)), "", 0), 0);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_eq(st.st_size, 0);

	/* no temporary files left behind */
	ck_assert_int_eq(count_entries(dir, names, sizeof(names)), 2);
	ck_assert_str_eq(names, "empty|out.pb.gz");
}
END_TEST

START_TEST(test_write_atomic_missing_dir)
{
	char path[PATH_MAX], names[1024];
	struct stat st;

	in_dir("no-such-dir/out.pb", path, sizeof(path));
	cp_error_clear();
	ck_assert_int_eq(cp_write_file_atomic(path, "data", 4), -ENOENT);
	ck_assert_contains(cp_errmsg(ENOENT), path);
	ck_assert_int_lt(stat(path, &st), 0);
	ck_assert_int_eq(count_entries(dir, names, sizeof(names)), 0);
}
END_TEST

START_TEST(test_write_atomic_failure_cleans_up)
{
	char path[PATH_MAX], inner[PATH_MAX], names[1024];
	struct stat st;
	int err;

	/* the target is a non-empty directory: the temporary file is written,
	 * then the rename fails; it must be removed and the target untouched */
	in_dir("target", path, sizeof(path));
	ck_assert_int_eq(mkdir(path, 0755), 0);
	ck_assert_int_lt(snprintf(inner, sizeof(inner), "%s/keep", path), (int)sizeof(inner));
	put_file(inner, "x", 1);
	cp_error_clear();
	err = cp_write_file_atomic(path, "data", 4);
	ck_assert_int_lt(err, 0);
	ck_assert_contains(cp_errmsg(err), path);
	ck_assert_int_eq(count_entries(dir, names, sizeof(names)), 1);
	ck_assert_str_eq(names, "target");
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert(S_ISDIR(st.st_mode));
	ck_assert_int_eq(count_entries(path, names, sizeof(names)), 1);
	ck_assert_str_eq(names, "keep");
}
END_TEST

/* ---- cp_stream_check ---- */

START_TEST(test_stream_check)
{
	FILE *f = tmpfile();
	int err;

	ck_assert_ptr_nonnull(f);
	fputs("fine\n", f);
	ck_assert_int_eq(cp_stream_check(f, "the temporary file"), 0);
	fclose(f);

	f = fopen("/dev/full", "w");
	if (!f)
		return; /* no /dev/full here: nothing to test */
	fputs("this cannot be written\n", f);
	cp_error_clear();
	err = cp_stream_check(f, "the output");
	ck_assert_int_eq(err, -ENOSPC);
	ck_assert_contains(cp_errmsg(err), "write error on the output");
	ck_assert_contains(cp_errmsg(err), strerror(ENOSPC));
	/* the error indicator sticks: checking again still fails */
	ck_assert_int_lt(cp_stream_check(f, "the output"), 0);
	fclose(f);
}
END_TEST

/* ---- cp_grow ---- */

START_TEST(test_grow)
{
	uint32_t *arr = NULL, *before;
	size_t cap = 0, i;

	ck_assert_int_eq(cp_grow((void **)&arr, &cap, 1, sizeof(*arr)), 0);
	ck_assert_ptr_nonnull(arr);
	ck_assert_uint_eq(cap, 16);
	for (i = 0; i < cap; i++)
		arr[i] = (uint32_t)i;
	/* no change when the capacity suffices */
	before = arr;
	ck_assert_int_eq(cp_grow((void **)&arr, &cap, 16, sizeof(*arr)), 0);
	ck_assert_ptr_eq(arr, before);
	ck_assert_uint_eq(cap, 16);
	ck_assert_int_eq(cp_grow((void **)&arr, &cap, 0, sizeof(*arr)), 0);
	ck_assert_uint_eq(cap, 16);
	/* doubling until enough, keeping the contents */
	ck_assert_int_eq(cp_grow((void **)&arr, &cap, 100, sizeof(*arr)), 0);
	ck_assert_uint_eq(cap, 128);
	for (i = 0; i < 16; i++)
		ck_assert_uint_eq(arr[i], i);
	arr[127] = 42; /* the whole capacity is usable */
	ck_assert_int_eq(cp_grow((void **)&arr, &cap, 129, sizeof(*arr)), 0);
	ck_assert_uint_eq(cap, 256);
	ck_assert_uint_eq(arr[127], 42);
	/* sizes that cannot be represented: refused, the array kept */
	before = arr;
	ck_assert_int_eq(cp_grow((void **)&arr, &cap, SIZE_MAX / 2, 16), -ENOMEM);
	ck_assert_ptr_eq(arr, before);
	ck_assert_uint_eq(cap, 256);
	ck_assert_int_eq(cp_grow((void **)&arr, &cap, SIZE_MAX, 1), -ENOMEM);
	ck_assert_uint_eq(cap, 256);
	free(arr);
}
END_TEST

/* ---- durations and sizes as the options take them back ---- */

START_TEST(test_duration_text)
{
	static const struct {
		int64_t ns;
		const char *text;
	} cases[] = {
		{ 86400000000000LL * 15, "15d" }, { 3600000000000LL, "1h" },  { 90 * 60000000000LL, "90m" },
		{ 10000000000LL, "10s" },         { 1500000000LL, "1500ms" }, { 100000000LL, "100ms" },
		{ 1500LL, "1500ns" },
	};
	char b[32];
	int64_t back;

	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		ck_assert_str_eq(cp_duration_text(cases[i].ns, b, sizeof(b)), cases[i].text);
		if (cases[i].ns % 1000000 == 0) { /* what cp_parse_duration has units for */
			ck_assert_int_eq(cp_parse_duration(b, &back), 0);
			ck_assert_int_eq(back, cases[i].ns);
		}
	}
	ck_assert_str_eq(cp_duration_text(INT64_MAX, b, sizeof(b)), "9223372036854775807ns");
}
END_TEST

START_TEST(test_size_text)
{
	char b[32];
	uint64_t back;

	ck_assert_str_eq(cp_size_text(10ull << 30, b, sizeof(b)), "10G");
	ck_assert_str_eq(cp_size_text(256ull << 20, b, sizeof(b)), "256M");
	ck_assert_str_eq(cp_size_text(1536ull << 10, b, sizeof(b)), "1536K");
	ck_assert_str_eq(cp_size_text(2ull << 40, b, sizeof(b)), "2T");
	ck_assert_str_eq(cp_size_text(1000, b, sizeof(b)), "1000");
	ck_assert_int_eq(cp_parse_size(cp_size_text(1536ull << 10, b, sizeof(b)), &back), 0);
	ck_assert_uint_eq(back, 1536ull << 10);
}
END_TEST

START_TEST(test_hex)
{
	static const unsigned char id[] = { 0x00, 0x0f, 0xa5, 0xff, 0x10 };
	char buf[11], small[10];

	ck_assert_ptr_eq(cp_hex(id, sizeof(id), buf, sizeof(buf)), buf);
	ck_assert_str_eq(buf, "000fa5ff10");
	/* one byte short of the NUL: refused, nothing written past it */
	memset(small, 'x', sizeof(small));
	ck_assert_ptr_null(cp_hex(id, sizeof(id), small, sizeof(small)));
	ck_assert_ptr_eq(cp_hex(id, 0, small, 1), small);
	ck_assert_str_eq(small, "");
	ck_assert_ptr_null(cp_hex(id, 0, small, 0));
}
END_TEST

/* gzip data z[0..zn) inflated by zlib as gunzip does (a 32 KiB window, the gzip header): its
 * length, or -1 */
static long std_gunzip(const uint8_t *z, size_t zn, uint8_t *out, size_t cap)
{
	z_stream s = { 0 };
	long n = -1;

	if (inflateInit2(&s, 15 + 16) != Z_OK)
		return -1;
	s.next_in = (Bytef *)z;
	s.avail_in = (uInt)zn;
	s.next_out = out;
	s.avail_out = (uInt)cap;
	if (inflate(&s, Z_FINISH) == Z_STREAM_END && s.avail_in == 0)
		n = (long)s.total_out;
	inflateEnd(&s);
	return n;
}

/* cp_zlib_compress: what uncompress() (the store's reader) gets back is the input, at zlib's default
 * and best levels, for sizes around each window it picks, for repetitive and incompressible input;
 * repetitive input compresses as well at the best level as compress2 at level 9 (within 2%, plus a few
 * bytes) */
START_TEST(test_zlib_compress)
{
	static const size_t sizes[] = { 0, 1, 100, 511, 512, 513, 4096, 5000, 32768, 40000, 300000 };
	uint32_t seed = 7;

	for (size_t k = 0; k < sizeof(sizes) / sizeof(*sizes); k++) {
		for (int kind = 0; kind < 2; kind++) {
			size_t n = sizes[k], zn = 0;
			uint8_t *in = malloc(n + 1), *z = NULL, *back = malloc(n + 1);
			uLongf bn = (uLongf)n, rn = compressBound((uLong)n);
			uint8_t *ref = malloc(rn);

			for (size_t i = 0; i < n; i++) {
				seed = seed * 1103515245u + 12345u;
				/* stack-like varints, or noise */
				in[i] = kind ? (uint8_t)(seed >> 16) : (uint8_t)("main;work;alpha 30\n"[i % 19] + (i / 977) % 3);
			}
			/* the dictionary's level (zlib's default), then the blocks' (the best) */
			for (int level = Z_DEFAULT_COMPRESSION; level <= Z_BEST_COMPRESSION; level += 10) {
				free(z);
				z = NULL;
				bn = (uLongf)n;
				ck_assert_int_eq(cp_zlib_compress(in, n, level, &z, &zn), 0);
				ck_assert_ptr_nonnull(z);
				ck_assert_int_eq(uncompress(back, &bn, z, (uLong)zn), Z_OK);
				ck_assert_uint_eq(bn, n);
				ck_assert(n == 0 || memcmp(back, in, n) == 0);
			}
			/* cp_gzip, with the same window sizing: standard gzip that gunzip's inflate reads */
			free(z);
			z = NULL;
			ck_assert_int_eq(cp_gzip(in, n, &z, &zn), 0);
			ck_assert_int_eq(std_gunzip(z, zn, back, n + 1), (long)n);
			ck_assert(n == 0 || memcmp(back, in, n) == 0);
			free(z);
			ck_assert_int_eq(cp_zlib_compress(in, n, Z_BEST_COMPRESSION, &z, &zn), 0);
			ck_assert_int_eq(compress2(ref, &rn, in, (uLong)n, 9), Z_OK);
			if (kind == 0)
				ck_assert_msg(zn <= rn + rn / 50 + 8, "%zu bytes: %zu compressed, compress2 %lu", n, zn,
					      (unsigned long)rn);
			free(in);
			free(z);
			free(back);
			free(ref);
		}
	}
}
END_TEST

START_TEST(test_ranges)
{
	/* out of order, one empty, two that overlap, two that touch */
	struct cp_range r[] = { { 0x500, 0x600 }, { 0x100, 0x200 }, { 0x300, 0x300 }, { 0x180, 0x280 },
				{ 0x600, 0x650 }, { 0x900, 0xa00 } };
	uint64_t lo, hi;
	size_t n = cp_ranges_merge(r, sizeof(r) / sizeof(r[0]));

	ck_assert_uint_eq(n, 3);
	ck_assert_uint_eq(r[0].lo, 0x100);
	ck_assert_uint_eq(r[0].hi, 0x280);
	ck_assert_uint_eq(r[1].lo, 0x500);
	ck_assert_uint_eq(r[1].hi, 0x650);
	ck_assert_uint_eq(r[2].lo, 0x900);
	/* held: [lo, hi) untouched */
	lo = 0, hi = UINT64_MAX;
	ck_assert(cp_ranges_hold(r, n, 0x100, &lo, &hi));
	ck_assert(cp_ranges_hold(r, n, 0x27f, &lo, &hi));
	ck_assert(cp_ranges_hold(r, n, 0x600, &lo, &hi));
	ck_assert_uint_eq(lo, 0);
	ck_assert_uint_eq(hi, UINT64_MAX);
	/* in a gap: cut to it, on both sides */
	ck_assert(!cp_ranges_hold(r, n, 0x280, &lo, &hi));
	ck_assert_uint_eq(lo, 0x280);
	ck_assert_uint_eq(hi, 0x500);
	/* a span already inside the gap stays as it was */
	lo = 0x700, hi = 0x800;
	ck_assert(!cp_ranges_hold(r, n, 0x750, &lo, &hi));
	ck_assert_uint_eq(lo, 0x700);
	ck_assert_uint_eq(hi, 0x800);
	/* before the first and after the last */
	lo = 0, hi = UINT64_MAX;
	ck_assert(!cp_ranges_hold(r, n, 0xff, &lo, &hi));
	ck_assert_uint_eq(lo, 0);
	ck_assert_uint_eq(hi, 0x100);
	lo = 0, hi = UINT64_MAX;
	ck_assert(!cp_ranges_hold(r, n, 0xa00, &lo, &hi));
	ck_assert_uint_eq(lo, 0xa00);
	ck_assert_uint_eq(hi, UINT64_MAX);
	/* none at all */
	ck_assert(!cp_ranges_hold(r, 0, 0x100, &lo, &hi));
	ck_assert_uint_eq(cp_ranges_merge(r, 0), 0);
}
END_TEST

START_TEST(test_sparse_upper_bound)
{
	/* arrays around the block size, with runs of equal keys that cross
	 * block boundaries: every answer is the plain search's */
	static const size_t sizes[] = { 0, 1, 63, 127, 128, 129, 1000, 4097 };
	struct elem {
		uint64_t key;
		uint32_t payload;
	};

	for (size_t t = 0; t < sizeof(sizes) / sizeof(sizes[0]); t++) {
		size_t n = sizes[t];
		struct elem *v = malloc((n + 1) * sizeof(*v));
		struct cp_sparse x;
		uint64_t k = 100;

		ck_assert_ptr_nonnull(v);
		for (size_t i = 0; i < n; i++) {
			k += (i * 7919) % 5 == 0 ? 0 : (i * 31) % 9 + 1; /* some equal neighbours */
			v[i].key = k;
			v[i].payload = (uint32_t)i;
		}
		cp_sparse_build(&x, v, n, sizeof(*v));
		ck_assert(n < 2 * CP_SPARSE_STEP ? x.n == 0 : x.n == (n + CP_SPARSE_STEP - 1) / CP_SPARSE_STEP);
		for (uint64_t q = 0; q <= k + 2; q++)
			ck_assert_uint_eq(cp_sparse_upper_bound(&x, v, n, sizeof(*v), q),
					  cp_upper_bound_u64(v, n, sizeof(*v), q));
		ck_assert_uint_eq(cp_sparse_upper_bound(&x, v, n, sizeof(*v), UINT64_MAX), n);
		cp_sparse_free(&x);
		ck_assert_ptr_null(x.keys);
		free(v);
	}
}
END_TEST

/* the mapping of /proc/self/maps that holds addr: its start and end */
static int mapping_of(uintptr_t addr, uintptr_t *start, uintptr_t *end)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	int found = 0;

	while (f && !found && fgets(line, sizeof(line), f)) {
		unsigned long a, b;

		if (sscanf(line, "%lx-%lx", &a, &b) == 2 && addr >= a && addr < b) {
			*start = a;
			*end = b;
			found = 1;
		}
	}
	if (f)
		fclose(f);
	return found;
}

/* the bytes of every mapping of this process */
static uint64_t mapped_total(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	uint64_t total = 0;

	while (f && fgets(line, sizeof(line), f)) {
		unsigned long a, b;

		if (sscanf(line, "%lx-%lx", &a, &b) == 2)
			total += b - a;
	}
	if (f)
		fclose(f);
	return total;
}

START_TEST(test_huge_alloc)
{
	static const size_t sizes[] = { 1, 24 << 16, CP_HUGE_PAGE, CP_HUGE_PAGE + 1 };

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t want = (sizes[i] + CP_HUGE_PAGE - 1) / CP_HUGE_PAGE * CP_HUGE_PAGE;
		uint64_t before = (mapped_total(), mapped_total());
		unsigned char *p = cp_huge_alloc(sizes[i]);
		uintptr_t start, end;

		ck_assert_ptr_nonnull(p);
		ck_assert_uint_eq((uintptr_t)p % CP_HUGE_PAGE, 0);
		/* zeroed and writable to the end */
		ck_assert_uint_eq(p[0], 0);
		ck_assert_uint_eq(p[sizes[i] - 1], 0);
		p[0] = 1;
		p[sizes[i] - 1] = 2;
		/* what was mapped beyond the aligned span is given back: the
		 * mapping is the span (its huge-page advice keeps it from merging
		 * with a neighbour) */
		ck_assert(mapping_of((uintptr_t)p, &start, &end));
		ck_assert_uint_eq(start, (uintptr_t)p);
		ck_assert_uint_eq(end, (uintptr_t)p + want);
		ck_assert_uint_eq(mapped_total() - before, want);
		cp_huge_free(p, sizes[i]);
		/* gone: no mapping holds it any more, unless one was made since */
		ck_assert(!mapping_of((uintptr_t)p, &start, &end) || start > (uintptr_t)p || end <= (uintptr_t)p);
	}
	ck_assert_ptr_null(cp_huge_alloc(0));
	ck_assert_ptr_null(cp_huge_alloc(SIZE_MAX));
}
END_TEST

static Suite *util_suite(void)
{
	Suite *s = suite_create("util");
	TCase *files = tcase_create("files"), *misc = tcase_create("misc");

	tcase_add_checked_fixture(files, dir_setup, dir_teardown);
	tcase_add_test(files, test_read_file);
	tcase_add_test(misc, test_huge_alloc);
	tcase_add_test(misc, test_sparse_upper_bound);
	tcase_add_test(misc, test_ranges);
	tcase_add_test(files, test_read_file_large);
	tcase_add_test(files, test_read_file_missing);
	tcase_add_test(files, test_read_file_directory);
	tcase_add_test(files, test_read_file_limit);
	tcase_add_test(files, test_write_atomic);
	tcase_add_test(files, test_write_atomic_missing_dir);
	tcase_add_test(files, test_write_atomic_failure_cleans_up);
	suite_add_tcase(s, files);

	tcase_add_test(misc, test_stream_check);
	tcase_add_test(misc, test_grow);
	tcase_add_test(misc, test_duration_text);
	tcase_add_test(misc, test_size_text);
	tcase_add_test(misc, test_zlib_compress);
	tcase_add_test(misc, test_hex);
	suite_add_tcase(s, misc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(util_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/* SPDX-License-Identifier: MIT */
/* Small helpers every module uses: whole files read and written atomically,
 * stream checks, clocks, sizes and durations as options spell them,
 * saturating sums, growing arrays.  Functions return 0 or -errno with the
 * message in cp_errmsg() (lib/error.h); buffers are the caller's. */
#ifndef CP_UTIL_H
#define CP_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>

/* Read a whole file ("-" = stdin), refusing more than max bytes. 0 or -errno. */
int cp_read_file(const char *path, size_t max, uint8_t **data, size_t *len);
/* Write data to path atomically: a temporary file in the same directory,
 * fsync, rename.  Nothing half-written is ever left at path; a symbolic
 * link's file is replaced and the link kept.  A path that is not a regular
 * file (a device such as /dev/stdout, a FIFO) is written through, never
 * replaced.  0 or -errno. */
int cp_write_file_atomic(const char *path, const void *data, size_t len);
/* Check a stream for write errors after flushing: 0 or -errno (EIO if unknown).
 * what names the stream in the message; NULL: "standard output" or "the output". */
int cp_stream_check(FILE *f, const char *what);
/* CLOCK_MONOTONIC in nanoseconds: for intervals and deadlines, not times of day (cp_now_ns). */
int64_t cp_mono_ns(void);

/* Sizes: "512K", "32M", "1G", "4096" (bytes; K M G T are 1024-based,
 * "MiB" and "MB" mean the same). 0 or -EINVAL with a message. */
int cp_parse_size(const char *s, uint64_t *out);
/* "1 MiB" for whole mebibytes, else "1000 bytes". */
const char *cp_size_str(size_t n, char *buf, size_t len);
/* A size as cp_parse_size reads it back, in the largest unit that divides
 * it: "10G", "512M", "1000" (bytes).  Returns buf. */
const char *cp_size_text(uint64_t n, char *buf, size_t len);
/* A duration as cp_parse_duration (selector.h) reads it back, in the
 * largest unit that divides it: "7d", "90m", "30s", "500ms"; "1500000ns"
 * below that (which cp_parse_duration refuses: it has no ns).  Returns buf;
 * 32 bytes hold any. */
const char *cp_duration_text(int64_t ns, char *buf, size_t len);

/* In an array sorted by a leading uint64_t key (elements of size bytes),
 * the index just past the last element whose key is <= key (0: none). */
size_t cp_upper_bound_u64(const void *base, size_t n, size_t size, uint64_t key);
/* qsort's order of two elements by their leading uint64_t key: the order
 * cp_upper_bound_u64 searches. */
int cp_cmp_u64_key(const void *a, const void *b);
/* A sparse index over such an array: the key of every CP_SPARSE_STEP-th
 * element, packed.  A search through it reads log2(n / 64) keys from a few
 * pages, then one block of 64 elements, where a plain binary search reads
 * log2(n) keys from as many pages (a symbol table of 100,000 functions: 4 or
 * 5 pages against 17; on a virtual machine that shadows page tables each
 * page first touched costs microseconds: hugepages.h).  The owner builds it
 * once the array is sorted and final and frees it with the array; when
 * built without memory (or for a small array) it holds nothing, and the
 * search is the plain one, with the same answers. */
#define CP_SPARSE_STEP 64
struct cp_sparse {
	uint64_t *keys;
	size_t n;
};
void cp_sparse_build(struct cp_sparse *x, const void *base, size_t n, size_t size);
/* cp_upper_bound_u64(base, n, size, key), through x (built over that array) */
size_t cp_sparse_upper_bound(const struct cp_sparse *x, const void *base, size_t n, size_t size, uint64_t key);
void cp_sparse_free(struct cp_sparse *x);

/* An address range [lo, hi) (lo leads: an array of them is searched by it). */
struct cp_range {
	uint64_t lo, hi;
};
/* Sorts n ranges by lo, drops the empty ones and merges those that overlap
 * or touch: returns how many are left (sorted and disjoint). */
size_t cp_ranges_merge(struct cp_range *r, size_t n);
/* In n sorted, disjoint ranges: whether one holds addr.  When none does,
 * [*lo, *hi) (which holds addr) is cut to the gap between them around addr:
 * what holds for addr for want of a range holds there. */
int cp_ranges_hold(const struct cp_range *r, size_t n, uint64_t addr, uint64_t *lo, uint64_t *hi);

/* Can a file be created at path: its directory exists, is one, and may be
 * written (to fail before a long run that ends by writing it, not after)?
 * 0, or -errno with the message "cannot write PATH: REASON". */
int cp_check_creatable(const char *path);

/* mkdir -p: the missing directories of path, the last with leaf_mode and
 * the others 0755. 0 or -errno with a message. */
int cp_mkdirs(const char *path, mode_t leaf_mode);

/* The directory of cprof's caches, made (mode 0700) when missing: $XDG_CACHE_HOME/cprof,
 * /var/cache/cprof for root, else ~/.cache/cprof.  A directory that is not its owner's
 * alone is refused (EPERM): what is cached there (kernel addresses) is as secret as
 * /proc/kallsyms.  0 or -errno with a message. */
int cp_cache_dir(char *buf, size_t len);
/* This boot's id (/proc/sys/kernel/random/boot_id, 36 characters): what a cache of the
 * running kernel's state is keyed by.  0 or -errno with a message. */
int cp_boot_id(char *buf, size_t len);

/* bytes[0..n) in lowercase hex into buf (2n + 1 bytes with its NUL): buf, or NULL when it
 * does not fit. */
char *cp_hex(const void *bytes, size_t n, char *buf, size_t len);

/* Growable array helper: ensures *cap >= need (elements of size sz). */
int cp_grow(void **arr, size_t *cap, size_t need, size_t sz);

/* qsort and qsort_r that take an empty array as it may come (base NULL, n 0): the C library's
 * declare base nonnull, and UBSan stops on qsort(NULL, 0, ...). */
static inline void cp_qsort(void *base, size_t n, size_t sz, int (*cmp)(const void *, const void *))
{
	if (n > 1)
		qsort(base, n, sz, cmp);
}
static inline void cp_qsort_r(void *base, size_t n, size_t sz, int (*cmp)(const void *, const void *, void *), void *arg)
{
	if (n > 1)
		qsort_r(base, n, sz, cmp, arg);
}

/* Sorts the n malloc'ed strings of v (strcmp) and frees each one equal to the one before:
 * how many are left, each once, at v[0..). */
size_t cp_strs_sort_unique(char **v, size_t n);

/* a + b and a - b saturated at INT64_MIN and INT64_MAX: sums of profile values (pprof allows any
 * int64, e.g. 5e18 twice) stay at the bound instead of wrapping to the other sign. */
static inline int64_t cp_add_sat(int64_t a, int64_t b)
{
	int64_t r;

	if (__builtin_add_overflow(a, b, &r))
		return b > 0 ? INT64_MAX : INT64_MIN;
	return r;
}
static inline int64_t cp_sub_sat(int64_t a, int64_t b)
{
	int64_t r;

	if (__builtin_sub_overflow(a, b, &r))
		return b < 0 ? INT64_MAX : INT64_MIN;
	return r;
}

/* names[0..n) as a list for a message, "a, b, c or d", into buf (cut to its size); buf. */
const char *cp_join_names(const char *const *names, size_t n, char *buf, size_t size);

#endif

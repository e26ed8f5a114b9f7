/* SPDX-License-Identifier: MIT */
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "error.h"

char *cp_hex(const void *bytes, size_t n, char *buf, size_t len)
{
	static const char digits[] = "0123456789abcdef";
	const uint8_t *b = bytes;

	if (len == 0 || n > (len - 1) / 2)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		buf[2 * i] = digits[b[i] >> 4];
		buf[2 * i + 1] = digits[b[i] & 15];
	}
	buf[2 * n] = 0;
	return buf;
}

static int strp_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

size_t cp_strs_sort_unique(char **v, size_t n)
{
	size_t j = 0;

	cp_qsort(v, n, sizeof(*v), strp_cmp);
	for (size_t i = 0; i < n; i++) {
		if (j && !strcmp(v[j - 1], v[i]))
			free(v[i]);
		else
			v[j++] = v[i];
	}
	return j;
}

int cp_grow(void **arr, size_t *cap, size_t need, size_t sz)
{
	size_t n;
	void *p;

	if (need <= *cap)
		return 0;
	n = *cap ? *cap : 16;
	while (n < need) {
		if (n > SIZE_MAX / 2 / sz)
			return cp_error(ENOMEM, "cannot grow an array to %zu items of %zu bytes", need, sz);
		n *= 2;
	}
	p = realloc(*arr, n * sz);
	if (!p)
		return cp_error(ENOMEM, "out of memory growing an array to %zu items of %zu bytes", n, sz);
	*arr = p;
	*cap = n;
	return 0;
}

const char *cp_size_str(size_t n, char *buf, size_t len)
{
	if (n && n % (1u << 20) == 0)
		snprintf(buf, len, "%zu MiB", n >> 20);
	else
		snprintf(buf, len, "%zu bytes", n);
	return buf;
}

int cp_check_creatable(const char *path)
{
	const char *slash = strrchr(path, '/');
	char *dir = !slash ? strdup(".") : slash == path ? strdup("/") : strndup(path, (size_t)(slash - path));
	struct stat st;
	int e = 0;

	if (!dir)
		e = ENOMEM;
	else if (stat(dir, &st) != 0)
		e = errno;
	else if (!S_ISDIR(st.st_mode))
		e = ENOTDIR;
	else if (access(dir, W_OK) != 0)
		e = errno;
	free(dir);
	return e ? cp_error(e, "cannot write %s: %s", path, strerror(e)) : 0;
}

const char *cp_size_text(uint64_t n, char *buf, size_t len)
{
	static const char units[] = "TGMK";

	for (int i = 0; i < 4; i++) {
		uint64_t u = 1ull << (10 * (4 - i));

		if (n && n % u == 0) {
			snprintf(buf, len, "%llu%c", (unsigned long long)(n / u), units[i]);
			return buf;
		}
	}
	snprintf(buf, len, "%llu", (unsigned long long)n);
	return buf;
}

const char *cp_duration_text(int64_t ns, char *buf, size_t len)
{
	static const struct {
		int64_t ns;
		const char *unit;
	} units[] = {
		{ 86400000000000LL, "d" }, { 3600000000000LL, "h" }, { 60000000000LL, "m" },
		{ 1000000000LL, "s" },     { 1000000LL, "ms" },
	};

	for (size_t i = 0; ns && i < sizeof(units) / sizeof(*units); i++)
		if (ns % units[i].ns == 0) {
			snprintf(buf, len, "%lld%s", (long long)(ns / units[i].ns), units[i].unit);
			return buf;
		}
	snprintf(buf, len, "%lldns", (long long)ns);
	return buf;
}

int cp_read_file(const char *path, size_t max, uint8_t **data, size_t *len)
{
	int fd = -1, err = 0;
	uint8_t *buf = NULL;
	size_t cap = 0, n = 0;
	struct stat st;
	char sz[32];

	if (strcmp(path, "-") == 0) {
		fd = STDIN_FILENO;
	} else {
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return cp_error(errno, "cannot open %s: %s", path, strerror(errno));
	}
	if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
		err = cp_error(EISDIR, "%s is a directory, not a profile file", path);
		goto out;
	}
	/* a regular file: read it in one go into a buffer of its size */
	if (S_ISREG(st.st_mode) && st.st_size > 0 && (uint64_t)st.st_size <= max &&
	    cp_grow((void **)&buf, &cap, (size_t)st.st_size + 1, 1)) {
		err = cp_error(ENOMEM, "out of memory reading %s", path);
		goto out;
	}
	for (;;) {
		ssize_t r;

		if (n == cap) {
			if (cap > max) { /* not cap >= max + 1: max may be SIZE_MAX */
				err = cp_error(EFBIG, "%s is larger than the %s limit", path, cp_size_str(max, sz, sizeof(sz)));
				goto out;
			}
			err = cp_grow((void **)&buf, &cap, n + 65536, 1);
			if (err) {
				err = cp_error(ENOMEM, "out of memory reading %s", path);
				goto out;
			}
		}
		r = read(fd, buf + n, cap - n);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			err = cp_error(errno, "cannot read %s: %s", path, strerror(errno));
			goto out;
		}
		if (r == 0)
			break;
		n += (size_t)r;
		if (n > max) {
			err = cp_error(EFBIG, "%s is larger than the %s limit", path, cp_size_str(max, sz, sizeof(sz)));
			goto out;
		}
	}
	*data = buf;
	*len = n;
	buf = NULL;
out:
	if (fd > STDIN_FILENO)
		close(fd);
	free(buf);
	return err;
}

/* All of data to fd; 0 or -errno with "cannot write PATH: why". */
static int write_all(int fd, const char *path, const void *data, size_t len)
{
	const char *p = data;

	while (len) {
		ssize_t w = write(fd, p, len);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return cp_error(errno, "cannot write %s: %s", path, strerror(errno));
		}
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

int cp_write_file_atomic(const char *path, const void *data, size_t len)
{
	char *tmp = NULL, *real = NULL;
	int fd = -1, err = 0;
	size_t plen;
	struct stat st;

	if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
		/* a device, a FIFO, a socket (-o /dev/stdout, a pipe): written
		 * through, never replaced by a file of the same name */
		if (S_ISDIR(st.st_mode))
			return cp_error(EISDIR, "cannot write %s: it is a directory", path);
		if ((fd = open(path, O_WRONLY | O_CLOEXEC)) < 0)
			return cp_error(errno, "cannot write %s: %s", path, strerror(errno));
		err = write_all(fd, path, data, len);
		if (close(fd) < 0 && !err)
			err = cp_error(errno, "cannot write %s: %s", path, strerror(errno));
		return err;
	}
	/* a symbolic link to a file: the file is replaced, the link stays */
	if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode) && (real = realpath(path, NULL)))
		path = real;
	plen = strlen(path);
	tmp = malloc(plen + 16);
	if (!tmp) {
		err = cp_error(ENOMEM, "out of memory writing %s", path);
		free(real);
		return err;
	}
	snprintf(tmp, plen + 16, "%s.tmpXXXXXX", path);
	fd = mkstemp(tmp);
	if (fd < 0) {
		err = cp_error(errno, "cannot create %s: %s", path, strerror(errno));
		free(tmp);
		free(real);
		return err;
	}
	if ((err = write_all(fd, path, data, len)))
		goto out;
	if (fchmod(fd, 0644) < 0 || fsync(fd) < 0) {
		err = cp_error(errno, "cannot write %s: %s", path, strerror(errno));
		goto out;
	}
	if (close(fd) < 0) {
		fd = -1;
		err = cp_error(errno, "cannot write %s: %s", path, strerror(errno));
		goto out;
	}
	fd = -1;
	if (rename(tmp, path) < 0)
		err = cp_error(errno, "cannot write %s: %s", path, strerror(errno));
out:
	if (fd >= 0)
		close(fd);
	if (err)
		unlink(tmp);
	free(tmp);
	free(real);
	return err;
}

int cp_stream_check(FILE *f, const char *what)
{
	int e;

	errno = 0;
	if (fflush(f) == 0 && !ferror(f))
		return 0;
	e = errno ? errno : EIO;
	if (!what)
		what = f == stdout ? "standard output" : "the output";
	return cp_error(e, "write error on %s: %s", what, strerror(e));
}

int cp_cmp_u64_key(const void *a, const void *b)
{
	uint64_t x, y;

	memcpy(&x, a, sizeof(x));
	memcpy(&y, b, sizeof(y));
	return x < y ? -1 : x > y;
}

size_t cp_upper_bound_u64(const void *base, size_t n, size_t size, uint64_t key)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		uint64_t k;

		memcpy(&k, (const char *)base + mid * size, sizeof(k));
		if (k <= key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

void cp_sparse_build(struct cp_sparse *x, const void *base, size_t n, size_t size)
{
	x->keys = NULL;
	x->n = 0;
	if (n < 2 * CP_SPARSE_STEP)
		return; /* a block or two: the plain search reads as few pages */
	x->n = (n + CP_SPARSE_STEP - 1) / CP_SPARSE_STEP;
	if (!(x->keys = malloc(x->n * sizeof(*x->keys)))) {
		x->n = 0;
		return;
	}
	for (size_t i = 0; i < x->n; i++)
		memcpy(&x->keys[i], (const char *)base + i * CP_SPARSE_STEP * size, sizeof(uint64_t));
}

size_t cp_sparse_upper_bound(const struct cp_sparse *x, const void *base, size_t n, size_t size, uint64_t key)
{
	size_t j, lo, hi;

	if (!x->n)
		return cp_upper_bound_u64(base, n, size, key);
	/* block j - 1 holds the last element <= key: every element before it
	 * is <= its first key (<= key), and block j's first is > key */
	j = cp_upper_bound_u64(x->keys, x->n, sizeof(*x->keys), key);
	if (j == 0)
		return 0;
	lo = (j - 1) * CP_SPARSE_STEP;
	hi = j * CP_SPARSE_STEP < n ? j * CP_SPARSE_STEP : n;
	return lo + cp_upper_bound_u64((const char *)base + lo * size, hi - lo, size, key);
}

size_t cp_ranges_merge(struct cp_range *r, size_t n)
{
	size_t k = 0;

	_Static_assert(offsetof(struct cp_range, lo) == 0, "the key leads");
	cp_qsort(r, n, sizeof(*r), cp_cmp_u64_key);
	for (size_t i = 0; i < n; i++) {
		if (r[i].hi <= r[i].lo)
			continue;
		if (k && r[i].lo <= r[k - 1].hi) {
			if (r[i].hi > r[k - 1].hi)
				r[k - 1].hi = r[i].hi;
		} else {
			r[k++] = r[i];
		}
	}
	return k;
}

int cp_ranges_hold(const struct cp_range *r, size_t n, uint64_t addr, uint64_t *lo, uint64_t *hi)
{
	_Static_assert(offsetof(struct cp_range, lo) == 0, "the key leads");
	size_t i = cp_upper_bound_u64(r, n, sizeof(*r), addr); /* r[i - 1].lo <= addr < r[i].lo */

	if (i > 0 && addr < r[i - 1].hi)
		return 1;
	if (i > 0 && r[i - 1].hi > *lo)
		*lo = r[i - 1].hi;
	if (i < n && r[i].lo < *hi)
		*hi = r[i].lo;
	return 0;
}

void cp_sparse_free(struct cp_sparse *x)
{
	free(x->keys);
	x->keys = NULL;
	x->n = 0;
}

int cp_parse_size(const char *s, uint64_t *out)
{
	static const char units[] = "KMGT";
	const char *u;
	char *end;
	unsigned long long v;
	int shift = 0;

	errno = 0;
	if (!*s || *s == '-' || *s == ' ')
		return cp_error(EINVAL, "'%s' is not a size (e.g. 512K, 32M, 1G)", s);
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return cp_error(EINVAL, "'%s' is not a size (e.g. 512K, 32M, 1G)", s);
	if (*end && (u = strchr(units, *end)) != NULL) {
		shift = 10 * (int)(u - units + 1);
		end++;
		if (*end == 'i')
			end++;
	}
	if (*end == 'B')
		end++;
	if (*end)
		return cp_error(EINVAL, "'%s' is not a size (e.g. 512K, 32M, 1G)", s);
	if (shift && v > (UINT64_MAX >> shift))
		return cp_error(ERANGE, "size '%s' is too large", s);
	*out = (uint64_t)v << shift;
	return 0;
}

int cp_mkdirs(const char *path, mode_t leaf_mode)
{
	char *p = strdup(path), *s;
	int err = 0;

	if (!p)
		return cp_error(ENOMEM, "out of memory");
	for (s = p + 1;; s++) {
		if (*s == '/' || !*s) {
			char c = *s;

			*s = '\0';
			if (mkdir(p, c ? 0755 : leaf_mode) < 0 && errno != EEXIST) {
				err = cp_error(errno, "cannot create %s: %s", p, strerror(errno));
				break;
			}
			*s = c;
			if (!c)
				break;
		}
	}
	free(p);
	return err;
}

int64_t cp_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int cp_cache_dir(char *buf, size_t len)
{
	const char *x = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
	struct stat st;
	int n;

	if (x && *x)
		n = snprintf(buf, len, "%s/cprof", x);
	else if (geteuid() == 0)
		n = snprintf(buf, len, "/var/cache/cprof");
	else if (home && *home)
		n = snprintf(buf, len, "%s/.cache/cprof", home);
	else
		return cp_error(ENOENT, "no directory for the cache ($HOME is not set)");
	if (n < 0 || (size_t)n >= len)
		return cp_error(ENAMETOOLONG, "the cache directory's name is too long");
	/* ~/.cache itself may not be there yet on a new account */
	if ((n = cp_mkdirs(buf, 0700)) < 0)
		return n;
	if (stat(buf, &st) < 0)
		return cp_error(errno, "cannot make the cache directory %s: %s", buf, strerror(errno));
	if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077))
		return cp_error(EPERM, "%s is not a directory only its owner can read: not used", buf);
	return 0;
}

int cp_boot_id(char *buf, size_t len)
{
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");
	bool got = f && fgets(buf, (int)len, f);

	if (f)
		fclose(f);
	if (got)
		buf[strcspn(buf, "\n")] = 0;
	if (!got || !buf[0])
		return cp_error(ENOENT, "no boot id in /proc/sys/kernel/random/boot_id");
	return 0;
}

const char *cp_join_names(const char *const *names, size_t n, char *buf, size_t size)
{
	size_t len = 0;

	if (size)
		buf[0] = 0;
	for (size_t i = 0; i < n && len < size; i++) {
		int w = snprintf(buf + len, size - len, "%s%s", !i ? "" : i == n - 1 ? " or " : ", ", names[i]);

		if (w < 0)
			break;
		len += (size_t)w;
	}
	return buf;
}

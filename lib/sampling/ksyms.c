/* SPDX-License-Identifier: MIT */
#include "ksyms.h"

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../error.h"
#include "../util.h"

struct ksym {
	uint64_t addr;
	uint32_t name, module; /* offsets into text */
};

struct cp_ksyms {
	struct ksym *s;
	struct cp_sparse sx; /* over s */
	size_t n;
	char *text;
	size_t tlen;
	char *blob; /* the cache's image: s and text point into it */
	size_t mapped; /* blob is the cache file mapped, this long (else malloc'ed) */
};

/* One /proc/kallsyms line (modified in place): a text symbol's address,
 * name and "[module]" (mod "" for the core kernel). 0, or -1 to skip it. */
static int ksym_line(char *line, uint64_t *addr, char **name, char **mod)
{
	char *q;
	char type;

	*addr = strtoull(line, &q, 16);
	if (q == line || *q != ' ' || !q[1] || q[2] != ' ')
		return -1;
	type = q[1];
	if (!(type == 't' || type == 'T' || type == 'w' || type == 'W') || *addr == 0)
		return -1;
	*name = q + 3;
	(*name)[strcspn(*name, "\n")] = 0;
	q = *name + strcspn(*name, " \t");
	*mod = q;
	if (*q) {
		*q++ = 0;
		q += strspn(q, " \t");
		*mod = q;
		if (*q == '[')
			q[strcspn(q, "]") + (q[strcspn(q, "]")] == ']')] = 0;
		else
			*q = 0;
	}
	return **name ? 0 : -1;
}

/* Adds one symbol to k, its strings appended to *text. */
static int ksym_add(struct cp_ksyms *k, size_t *scap, char **text, size_t *tlen, size_t *tcap, uint64_t addr,
		    const char *name, const char *mod)
{
	size_t nl = strlen(name), ml = strlen(mod);

	if (cp_grow((void **)text, tcap, *tlen + nl + ml + 2, 1) ||
	    cp_grow((void **)&k->s, scap, k->n + 1, sizeof(*k->s)))
		return cp_error(ENOMEM, "out of memory reading the kernel symbols");
	k->s[k->n].addr = addr;
	k->s[k->n].name = (uint32_t)*tlen;
	memcpy(*text + *tlen, name, nl + 1);
	*tlen += nl + 1;
	k->s[k->n].module = (uint32_t)*tlen;
	memcpy(*text + *tlen, mod, ml + 1);
	*tlen += ml + 1;
	k->n++;
	return 0;
}

static void ksyms_finish(struct cp_ksyms *k, char *text, size_t tlen)
{
	struct ksym *t;

	k->text = tlen ? realloc(text, tlen) : NULL;
	if (!k->text)
		k->text = text;
	k->tlen = tlen;
	t = k->n ? realloc(k->s, k->n * sizeof(*k->s)) : NULL;
	if (t)
		k->s = t;
	_Static_assert(offsetof(struct ksym, addr) == 0, "the key leads");
	if (k->n)
		cp_qsort(k->s, k->n, sizeof(*k->s), cp_cmp_u64_key);
	cp_sparse_build(&k->sx, k->s, k->n, sizeof(*k->s));
}

struct cp_ksyms *cp_ksyms_parse(const char *in, size_t len)
{
	struct cp_ksyms *k = calloc(1, sizeof(*k));
	char *text = NULL, line[1024];
	size_t scap = 0, tlen = 0, tcap = 0;
	const char *p = in, *end = in + len;

	if (!k) {
		errno = ENOMEM;
		return NULL;
	}
	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		size_t n = (size_t)((eol ? eol : end) - p);
		uint64_t addr;
		char *name, *mod;

		if (n >= sizeof(line))
			n = sizeof(line) - 1;
		memcpy(line, p, n);
		line[n] = 0;
		p = eol ? eol + 1 : end;
		if (ksym_line(line, &addr, &name, &mod) == 0 &&
		    ksym_add(k, &scap, &text, &tlen, &tcap, addr, name, mod)) {
			free(text);
			cp_ksyms_free(k);
			errno = ENOMEM;
			return NULL;
		}
	}
	ksyms_finish(k, text, tlen);
	return k;
}

void cp_ksyms_release_pages(struct cp_ksyms *k)
{
	if (k && k->mapped)
		madvise(k->blob, k->mapped, MADV_DONTNEED);
}

void cp_ksyms_free(struct cp_ksyms *k)
{
	if (!k)
		return;
	cp_sparse_free(&k->sx);
	if (k->mapped) {
		munmap(k->blob, k->mapped);
	} else if (k->blob) {
		free(k->blob);
	} else {
		free(k->s);
		free(k->text);
	}
	free(k);
}

size_t cp_ksyms_count(const struct cp_ksyms *k)
{
	return k->n;
}

const char *cp_ksyms_find(const struct cp_ksyms *k, uint64_t addr, const char **module, uint64_t span[2])
{
	size_t lo;

	_Static_assert(offsetof(struct ksym, addr) == 0, "the key leads");
	lo = cp_sparse_upper_bound(&k->sx, k->s, k->n, sizeof(*k->s), addr);
	if (lo == 0)
		return NULL;
	/* past the last symbol by more than 1 MiB: not a symbol of ours */
	if (lo == k->n && addr - k->s[lo - 1].addr > (1u << 20))
		return NULL;
	if (module)
		*module = k->text + k->s[lo - 1].module;
	if (span) {
		span[0] = lo < k->n ? k->s[lo - 1].addr : addr;
		span[1] = lo < k->n ? k->s[lo].addr : addr + 1;
	}
	return k->text + k->s[lo - 1].name;
}

/* Streams /proc/kallsyms keeping only text symbols, packed: about 4 MB for
 * a distribution kernel instead of the file's 5+ MB plus an index. */
static struct cp_ksyms *read_proc(void)
{
	FILE *f = fopen("/proc/kallsyms", "re");
	struct cp_ksyms *k = NULL;
	char *line = NULL, *text = NULL;
	size_t lcap = 0, tlen = 0, tcap = 0, scap = 0;

	if (!f || !(k = calloc(1, sizeof(*k))))
		goto out;
	while (getline(&line, &lcap, f) > 0) {
		uint64_t addr;
		char *name, *mod;

		if (ksym_line(line, &addr, &name, &mod) == 0 && ksym_add(k, &scap, &text, &tlen, &tcap, addr, name, mod))
			break;
	}
	ksyms_finish(k, text, tlen);
	if (!k->n) { /* without privileges every address reads as zero: none */
		cp_ksyms_free(k);
		k = NULL;
	}
out:
	free(line);
	if (f)
		fclose(f);
	return k;
}

/* ---- the cache ---- */

#define MAGIC "cprof-kallsyms-1"

struct hdr {
	char magic[16];
	char key[64];
	uint64_t n, tlen;
};

int cp_ksyms_key(char *buf, size_t len)
{
	char boot[64], line[512];
	uint64_t h = 1469598103934665603ull;
	FILE *f;
	int err;

	if ((err = cp_boot_id(boot, sizeof(boot))))
		return err;
	/* each module's name and address: what moves symbols */
	if ((f = fopen("/proc/modules", "re"))) {
		while (fgets(line, sizeof(line), f)) {
			char name[128];
			unsigned long long addr = 0;

			if (sscanf(line, "%127s %*s %*s %*s %*s %llx", name, &addr) < 1)
				continue;
			for (const char *c = name; *c; c++)
				h = (h ^ (uint8_t)*c) * 1099511628211ull;
			h = (h ^ addr) * 1099511628211ull;
		}
		fclose(f);
	}
	if ((size_t)snprintf(buf, len, "%s-%016llx", boot, (unsigned long long)h) >= len)
		return cp_error(ENAMETOOLONG, "the boot id is too long for the cache key");
	return 0;
}

int cp_ksyms_encode(const struct cp_ksyms *k, const char *key, char **out, size_t *len)
{
	struct hdr h;
	size_t ns = k->n * sizeof(*k->s);
	char *buf;

	memset(&h, 0, sizeof(h));
	memcpy(h.magic, MAGIC, sizeof(h.magic));
	snprintf(h.key, sizeof(h.key), "%s", key);
	h.n = k->n;
	h.tlen = k->tlen;
	*len = sizeof(h) + ns + k->tlen;
	if (!(buf = malloc(*len)))
		return cp_error(ENOMEM, "out of memory caching the kernel's symbols");
	memcpy(buf, &h, sizeof(h));
	memcpy(buf + sizeof(h), k->s, ns);
	memcpy(buf + sizeof(h) + ns, k->text, k->tlen);
	*out = buf;
	return 0;
}

/* Decodes data (len bytes: malloc'ed, or mapped when mapped), which the
 * result then owns; on failure data is freed or unmapped. */
static struct cp_ksyms *decode_owned(char *data, size_t len, const char *key, bool mapped)
{
	struct cp_ksyms *k;
	struct hdr h;
	size_t ns;

	_Static_assert(sizeof(struct hdr) % 8 == 0, "the table after the header stays aligned");
	if (len < sizeof(h))
		goto bad;
	memcpy(&h, data, sizeof(h));
	if (memcmp(h.magic, MAGIC, sizeof(h.magic)) || strnlen(h.key, sizeof(h.key)) == sizeof(h.key) ||
	    strcmp(h.key, key) || h.n == 0 || h.tlen == 0 || h.n > (len - sizeof(h)) / sizeof(struct ksym))
		goto bad;
	ns = (size_t)h.n * sizeof(struct ksym);
	if (len - sizeof(h) - ns != h.tlen || data[len - 1] != 0)
		goto bad;
	if (!(k = calloc(1, sizeof(*k)))) {
		errno = ENOMEM;
		goto fail;
	}
	k->blob = data;
	k->mapped = mapped ? len : 0;
	k->s = (struct ksym *)(void *)(data + sizeof(h));
	k->text = data + sizeof(h) + ns;
	k->n = h.n;
	k->tlen = h.tlen;
	for (size_t i = 0; i < k->n; i++) {
		if (k->s[i].name >= k->tlen || k->s[i].module >= k->tlen || (i && k->s[i].addr < k->s[i - 1].addr)) {
			cp_ksyms_free(k);
			errno = EBADMSG;
			return NULL;
		}
	}
	cp_sparse_build(&k->sx, k->s, k->n, sizeof(*k->s));
	return k;
bad:
	errno = EBADMSG;
fail:
	if (mapped)
		munmap(data, len);
	else
		free(data);
	return NULL;
}

struct cp_ksyms *cp_ksyms_decode(const char *data, size_t len, const char *key)
{
	char *copy = malloc(len ? len : 1);

	if (!copy) {
		errno = ENOMEM;
		return NULL;
	}
	memcpy(copy, data, len);
	return decode_owned(copy, len, key, false);
}

struct cp_ksyms *cp_ksyms_load(void)
{
	char dir[4096], path[4200], key[128];
	size_t len = 0;
	struct cp_ksyms *k = NULL;
	char *img;
	bool cache = cp_ksyms_key(key, sizeof(key)) == 0 && cp_cache_dir(dir, sizeof(dir)) == 0;
	struct stat st;
	int fd;

	if (cache) {
		/* mapped, not read: only the table's pages are touched (checking
		 * it), and only the names looked up (a read copied all 5 MB) */
		snprintf(path, sizeof(path), "%s/kallsyms", dir);
		if ((fd = open(path, O_RDONLY | O_CLOEXEC)) >= 0) {
			void *m = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 &&
						  st.st_size <= (off_t)64 << 20
					  ? mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0)
					  : MAP_FAILED;

			close(fd);
			if (m != MAP_FAILED && (k = decode_owned(m, (size_t)st.st_size, key, true)) != NULL) {
				/* the check touched every page of the table: let them go
				 * (lookups fault back the few they read) */
				madvise(m, (size_t)st.st_size, MADV_DONTNEED);
				return k;
			}
		}
	}
	k = read_proc();
	if (k && cache && cp_ksyms_encode(k, key, &img, &len) == 0) {
		cp_write_file_atomic(path, img, len); /* best effort: read again next time */
		free(img);
	}
	return k;
}

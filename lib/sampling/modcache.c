/* SPDX-License-Identifier: MIT */
#include "modcache.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../error.h"
#include "../index.h"
#include "../util.h"
#include "debugcopy.h"
#include "debuginfod.h"

typedef int find_debuginfo_fn(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
			      const char *file_name, const char *debuglink_file, GElf_Word debuglink_crc,
			      char **debuginfo_file_name);

struct cp_modcache {
	Dwfl_Callbacks cb;
	struct cp_mod **mods;
	size_t n, max;
	/* mods by key (ids: their places in mods), made again when one goes:
	 * the unwinder and the symbolizer ask for every rule and name not
	 * cached, and a scan compared up to max keys */
	struct cp_index ix;
	bool ix_stale;
	uint64_t serial; /* the last session's */
	uint64_t clock;
	int vdso_fd;
	struct cp_debuginfod *dbgd;
	void (*on_open)(void *);
	void *on_open_arg;
	/* where separate debug files are found (libdw's standard lookup, or
	 * with debuginfod's); find_debuginfo_copy wraps it */
	find_debuginfo_fn *find;
};

int cp_no_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base, const char *file_name,
		    const char *debuglink_file, GElf_Word debuglink_crc, char **debuginfo_file_name)
{
	(void)mod;
	(void)userdata;
	(void)modname;
	(void)base;
	(void)file_name;
	(void)debuglink_file;
	(void)debuglink_crc;
	(void)debuginfo_file_name;
	return -1;
}

static find_debuginfo_fn find_debuginfo_dbgd;

/* The debug file of build id hex in the build-id trees of the search path
 * (libdw's syntax: ':'-separated, '+'/'-' flags; its default when NULL), or
 * -1. */
static int open_build_id_file(char **debuginfo_path, const char *hex)
{
	const char *p = debuginfo_path && *debuginfo_path ? *debuginfo_path : ":.debug:/usr/lib/debug";
	char path[PATH_MAX];

	while (*p) {
		size_t n = strcspn(p, ":");
		const char *dir = p;

		while (n && (*dir == '+' || *dir == '-'))
			dir++, n--;
		if (n && *dir == '/' && n < sizeof(path) - 160) {
			int fd;

			snprintf(path, sizeof(path), "%.*s/.build-id/%.2s/%s.debug", (int)n, dir, hex, hex + 2);
			if ((fd = open(path, O_RDONLY | O_CLOEXEC)) >= 0)
				return fd;
		}
		p = dir + n;
		if (*p == ':')
			p++;
	}
	return -1;
}

/* libdw's find_debuginfo: a debug file with compressed sections is read
 * from its uncompressed copy (debugcopy.h), else the owner's lookup.  The
 * build-id trees are looked in here first: the standard lookup would open
 * the compressed file itself (and libdw would keep that one). */
static int find_debuginfo_copy(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
			       const char *file_name, const char *debuglink_file, GElf_Word debuglink_crc,
			       char **debuginfo_file_name)
{
	struct cp_mod *sm = *userdata;
	const unsigned char *bits;
	GElf_Addr vaddr;
	int len = dwfl_module_build_id(mod, &bits, &vaddr), fd;

	char hex[129];

	if (len > 1 && cp_hex(bits, (size_t)len, hex, sizeof(hex))) {
		char *name = NULL;

		if ((fd = cp_debugcopy_open(hex, &name)) < 0 &&
		    (fd = open_build_id_file(sm && sm->owner ? sm->owner->cb.debuginfo_path : NULL, hex)) >= 0) {
			int copy = cp_debugcopy(fd, hex, &name);

			if (copy == fd) { /* not compressed: the standard lookup's */
				close(fd);
				fd = -1;
			} else {
				fd = copy;
			}
		}
		if (fd >= 0) {
			*debuginfo_file_name = name;
			return fd;
		}
		free(name);
	}
	if (!sm || !sm->owner)
		return dwfl_standard_find_debuginfo(mod, userdata, modname, base, file_name, debuglink_file,
						    debuglink_crc, debuginfo_file_name);
	return sm->owner->find(mod, userdata, modname, base, file_name, debuglink_file, debuglink_crc,
			       debuginfo_file_name);
}

struct cp_modcache *cp_modcache_new(size_t max, char **debuginfo_path, bool separate_debug, int vdso_fd)
{
	struct cp_modcache *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->max = max ? max : 16;
	c->mods = calloc(c->max, sizeof(*c->mods));
	if (!c->mods) {
		free(c);
		errno = ENOMEM;
		return NULL;
	}
	c->cb.find_elf = dwfl_build_id_find_elf;
	c->find = dwfl_standard_find_debuginfo;
	c->cb.find_debuginfo = separate_debug ? find_debuginfo_copy : cp_no_debuginfo;
	c->cb.section_address = dwfl_offline_section_address;
	c->cb.debuginfo_path = debuginfo_path;
	c->vdso_fd = vdso_fd;
	return c;
}

static void mod_free(struct cp_mod *m)
{
	if (!m)
		return;
	if (m->dwfl)
		dwfl_end(m->dwfl);
	free(m->syms);
	cp_sparse_free(&m->symx);
	if (m->fd >= 0)
		close(m->fd);
	for (size_t i = 0; i < m->ncus; i++)
		cp_scopes_free(m->cus[i].scopes);
	free(m->cus);
	free(m->units);
	free(m->unit_of);
	free(m->go);
	free(m->key);
	free(m);
}

void cp_modcache_free(struct cp_modcache *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->n; i++)
		mod_free(c->mods[i]);
	free(c->mods);
	cp_index_release(&c->ix);
	free(c);
}

static uint32_t key_hash(const char *key)
{
	return (uint32_t)cp_hash_bytes(key, strlen(key), 0);
}

static int key_eq(const void *ctx, uint32_t id, const void *key)
{
	return !strcmp(((const struct cp_modcache *)ctx)->mods[id]->key, key);
}

/* The place of key's session in c->mods, or -1.  The index is made again
 * after sessions were closed (places moved); when that fails (no memory),
 * the keys are compared one by one. */
static ssize_t mod_find(struct cp_modcache *c, const char *key)
{
	uint32_t id;

	if (c->ix_stale) {
		cp_index_release(&c->ix);
		c->ix_stale = false;
		for (size_t i = 0; i < c->n; i++) {
			if (cp_index_add(&c->ix, key_hash(c->mods[i]->key), (uint32_t)i)) {
				c->ix_stale = true;
				break;
			}
		}
	}
	if (c->ix_stale) {
		for (size_t i = 0; i < c->n; i++)
			if (!strcmp(c->mods[i]->key, key))
				return (ssize_t)i;
		return -1;
	}
	id = cp_index_find(&c->ix, key_hash(key), key_eq, c, key);
	return id == UINT32_MAX ? -1 : (ssize_t)id;
}

/* Reads the file of sm (fd, consumed): NULL if it cannot be read. */
static struct cp_mod *mod_open(struct cp_modcache *c, struct cp_mod *sm, const char *path, int fd)
{
	size_t nph;
	Elf *elf;

	sm->owner = c;
	sm->fd = fd >= 0 ? fcntl(fd, F_DUPFD_CLOEXEC, 0) : -1;
	if (fd < 0 || !(sm->dwfl = dwfl_begin(&c->cb))) {
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	dwfl_report_begin(sm->dwfl);
	sm->mod = dwfl_report_offline(sm->dwfl, path, path, fd);
	dwfl_report_end(sm->dwfl, NULL, NULL);
	if (!sm->mod) {
		close(fd);
		return NULL;
	}
	{ /* for find_debuginfo_copy and find_debuginfo_dbgd */
		void **ud;

		dwfl_module_info(sm->mod, &ud, NULL, NULL, NULL, NULL, NULL, NULL);
		*ud = sm;
	}
	elf = dwfl_module_getelf(sm->mod, &sm->bias);
	if (!elf || elf_getphdrnum(elf, &nph) != 0) {
		sm->mod = NULL;
		return NULL;
	}
	for (size_t k = 0; k < nph && sm->nseg < 16; k++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)k, &ph) || ph.p_type != PT_LOAD)
			continue;
		sm->seg[sm->nseg].off = ph.p_offset;
		sm->seg[sm->nseg].filesz = ph.p_filesz;
		sm->seg[sm->nseg].vaddr = ph.p_vaddr;
		sm->nseg++;
	}
	return sm;
}

/* The session of key; a new one reads fd (consumed) or, when fd < 0, the
 * file mapped by m in p. */
static struct cp_mod *mod_get(struct cp_modcache *c, const char *key, const struct cp_proc *p,
			      const struct cp_map *m, const char *path, int fd)
{
	struct cp_mod *sm;
	ssize_t i = mod_find(c, key);

	if (i >= 0) {
		sm = c->mods[i];
		sm->used = ++c->clock;
		sm->used_ns = cp_mono_ns();
		if (fd >= 0)
			close(fd);
		return sm->mod ? sm : NULL;
	}
	if (c->on_open)
		c->on_open(c->on_open_arg);
	cp_modcache_evict(c, c->max - 1);
	sm = calloc(1, sizeof(*sm));
	if (!sm || !(sm->key = strdup(key))) {
		free(sm);
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	sm->fd = -1;
	sm->serial = ++c->serial;
	sm->used = ++c->clock;
	sm->used_ns = cp_mono_ns();
	if (!c->ix_stale && cp_index_add(&c->ix, key_hash(key), (uint32_t)c->n))
		c->ix_stale = true;
	c->mods[c->n++] = sm; /* failures are remembered too */
	if (fd < 0)
		fd = cp_map_open(p, m, c->vdso_fd);
	return mod_open(c, sm, path, fd);
}

struct cp_mod *cp_modcache_get(struct cp_modcache *c, const char *key, const struct cp_proc *p,
			       const struct cp_map *m)
{
	return mod_get(c, key, p, m, m->path, -1);
}

/* ---- debuginfod ---- */

struct cp_mod *cp_modcache_get_fd(struct cp_modcache *c, const char *key, const char *path, int fd)
{
	if (fd < 0)
		return NULL;
	return mod_get(c, key, NULL, NULL, path, fd);
}

/* Closes the binaries drop(c, m) is true for; returns how many. */
static size_t drop_if(struct cp_modcache *c, bool (*drop)(const struct cp_modcache *, struct cp_mod *))
{
	size_t n = 0;

	for (size_t i = 0; i < c->n;) {
		if (drop(c, c->mods[i])) {
			mod_free(c->mods[i]);
			c->mods[i] = c->mods[--c->n];
			c->ix_stale = true;
			n++;
		} else {
			i++;
		}
	}
	return n;
}

static bool landed(const struct cp_modcache *c, struct cp_mod *sm)
{
	/* the key of a file with a build id is the build id */
	return sm->debuginfo_pending && cp_debuginfod_lookup(c->dbgd, sm->key, NULL) == CP_DEBUGINFOD_FOUND;
}

size_t cp_modcache_drop_landed(struct cp_modcache *c)
{
	return c->dbgd ? drop_if(c, landed) : 0;
}

/* libdw's find_debuginfo with a debuginfod fetcher: the build-id lookup in
 * the local directories, then the fetcher's cache; a file still being
 * fetched marks the session (*userdata) pending.  Files without a build id
 * get the standard lookup (by .gnu_debuglink), which has nothing to fetch. */
static int find_debuginfo_dbgd(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
			       const char *file_name, const char *debuglink_file, GElf_Word debuglink_crc,
			       char **debuginfo_file_name)
{
	struct cp_mod *sm = *userdata;
	const unsigned char *bits;
	GElf_Addr vaddr;
	char hex[129], *path = NULL;
	int len = dwfl_module_build_id(mod, &bits, &vaddr), fd;

	if (len <= 0)
		return dwfl_standard_find_debuginfo(mod, userdata, modname, base, file_name, debuglink_file,
						    debuglink_crc, debuginfo_file_name);
	fd = dwfl_build_id_find_debuginfo(mod, userdata, modname, base, file_name, debuglink_file, debuglink_crc,
					  debuginfo_file_name);
	if (fd >= 0 || !sm || !sm->owner || !sm->owner->dbgd || !cp_hex(bits, (size_t)len, hex, sizeof(hex)))
		return fd;
	switch (cp_debuginfod_lookup(sm->owner->dbgd, hex, &path)) {
	case CP_DEBUGINFOD_FOUND:
		fd = path ? open(path, O_RDONLY | O_CLOEXEC) : -1;
		/* opened by name here, so its uncompressed copy can stand in */
		fd = cp_debugcopy(fd, hex, &path);
		if (fd >= 0)
			*debuginfo_file_name = path; /* libdw's now */
		else
			free(path);
		return fd;
	case CP_DEBUGINFOD_PENDING: sm->debuginfo_pending = true; return -1;
	default: return -1;
	}
}

void cp_modcache_set_debuginfod(struct cp_modcache *c, struct cp_debuginfod *d)
{
	c->dbgd = d;
	if (d)
		c->find = find_debuginfo_dbgd;
}

void cp_modcache_on_open(struct cp_modcache *c, void (*fn)(void *), void *arg)
{
	c->on_open = fn;
	c->on_open_arg = arg;
}

void cp_modcache_evict(struct cp_modcache *c, size_t keep)
{
	cp_modcache_evict_idle(c, keep, INT64_MAX);
}

size_t cp_modcache_evict_idle(struct cp_modcache *c, size_t keep, int64_t before_ns)
{
	size_t evicted = 0;

	while (c->n > keep) {
		size_t oldest = 0;

		for (size_t i = 1; i < c->n; i++)
			if (c->mods[i]->used < c->mods[oldest]->used)
				oldest = i;
		if (c->mods[oldest]->used_ns >= before_ns)
			break; /* the rest is in use */
		mod_free(c->mods[oldest]);
		c->mods[oldest] = c->mods[--c->n];
		c->ix_stale = true;
		evicted++;
	}
	return evicted;
}

static bool dwarf_open(const struct cp_modcache *c, struct cp_mod *m)
{
	Dwarf_Addr bias;

	(void)c;
	/* dwarf_read: asking a binary whose DWARF was not read for it would read it */
	return m->mod && m->dwarf_read && dwfl_module_getdwarf(m->mod, &bias);
}

size_t cp_modcache_evict_dwarf(struct cp_modcache *c)
{
	return drop_if(c, dwarf_open);
}

/* Drop the pages of e's file image from this process (it stays mapped and
 * the kernel's page cache keeps the file: what is read again faults back). */
static void release_image(Elf *e)
{
	size_t size = 0;
	char *img = e ? elf_rawfile(e, &size) : NULL;
	uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE), lo, hi;

	if (!img || !size)
		return;
	lo = ((uintptr_t)img + pg - 1) & ~(pg - 1);
	hi = ((uintptr_t)img + size) & ~(pg - 1);
	if (hi > lo)
		madvise((void *)lo, hi - lo, MADV_DONTNEED);
}

void cp_mod_release_pages(struct cp_mod *m)
{
	Dwarf_Addr bias;
	Dwarf *dw;

	if (!m->mod)
		return;
	release_image(dwfl_module_getelf(m->mod, &bias));
	/* the DWARF's file (the binary or its debug file), when it was read
	 * already: asking for it would read it */
	if (m->dwarf_read && (dw = dwfl_module_getdwarf(m->mod, &bias)) != NULL)
		release_image(dwarf_getelf(dw));
}

void cp_modcache_release_debug_pages(struct cp_modcache *c)
{
	Dwarf_Addr bias;
	Dwarf *dw;
	Elf *img;

	for (size_t i = 0; i < c->n; i++) {
		struct cp_mod *m = c->mods[i];

		if (!m->mod || !m->dwarf_read || !(dw = dwfl_module_getdwarf(m->mod, &bias)))
			continue;
		if ((img = dwarf_getelf(dw)) != dwfl_module_getelf(m->mod, &bias))
			release_image(img);
	}
}

void cp_modcache_release_pages(struct cp_modcache *c, int64_t before_ns)
{
	for (size_t i = 0; i < c->n; i++)
		if (c->mods[i]->used_ns < before_ns)
			cp_mod_release_pages(c->mods[i]);
}

size_t cp_modcache_count(const struct cp_modcache *c)
{
	return c->n;
}

uint64_t cp_mod_addr(const struct cp_mod *sm, uint64_t off)
{
	for (int i = 0; i < sm->nseg; i++)
		if (off >= sm->seg[i].off && off - sm->seg[i].off < sm->seg[i].filesz)
			return off - sm->seg[i].off + sm->seg[i].vaddr + sm->bias;
	return 0;
}

/* (unit_of is sorted and searched by its leading key) */
_Static_assert(offsetof(struct cp_mod_unit, lo) == 0, "the key leads");

/* Adds [lo, hi) + bias of the unit whose DIE is at die to m->unit_of:
 * false when out of memory (the units are then not known). */
static bool add_unit(struct cp_mod *m, size_t *cap, uint64_t lo, uint64_t hi, Dwarf_Addr bias, uint64_t die)
{
	if (hi <= lo || lo + bias < lo || hi + bias < hi)
		return true; /* (dropped) */
	if (cp_grow((void **)&m->unit_of, cap, m->nunit_of + 1, sizeof(*m->unit_of)))
		return false;
	m->unit_of[m->nunit_of++] = (struct cp_mod_unit){ lo + bias, hi + bias, die };
	return true;
}

/* m's compilation units' address ranges: from libdw's aranges, else (none:
 * clang, rustc) from each unit's own DW_AT_ranges or low and high pc.
 * units_read 1, -1 when m has no DWARF, -2 when out of memory. */
static void read_units(struct cp_mod *m)
{
	Dwarf_Addr bias;
	Dwarf *dw = m->mod ? dwfl_module_getdwarf(m->mod, &bias) : NULL;
	Dwarf_Aranges *ar;
	size_t n = 0, cap = 0;

	m->units_read = -1;
	if (!dw)
		return;
	if (dwarf_getaranges(dw, &ar, &n) == 0 && n) {
		for (size_t i = 0; i < n; i++) {
			Dwarf_Addr start = 0;
			Dwarf_Word len = 0;
			Dwarf_Off die = 0;
			Dwarf_Arange *a = dwarf_onearange(ar, i);

			if (a && dwarf_getarangeinfo(a, &start, &len, &die) == 0 &&
			    !add_unit(m, &cap, start, start + len, bias, die))
				goto fail;
		}
	} else {
		Dwarf_Off off = 0, next;
		size_t hsize;

		while (dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
			Dwarf_Die cu;
			Dwarf_Addr base, lo, hi;
			ptrdiff_t r = 0;

			if (dwarf_offdie(dw, off + hsize, &cu))
				while ((r = dwarf_ranges(&cu, r, &base, &lo, &hi)) > 0)
					if (!add_unit(m, &cap, lo, hi, bias, off + hsize))
						goto fail;
			off = next;
		}
	}
	cp_qsort(m->unit_of, m->nunit_of, sizeof(*m->unit_of), cp_cmp_u64_key);
	if (m->nunit_of && !(m->units = malloc(m->nunit_of * sizeof(*m->units))))
		goto fail;
	for (size_t i = 0; i < m->nunit_of; i++)
		m->units[i] = (struct cp_range){ m->unit_of[i].lo, m->unit_of[i].hi };
	m->nunits = cp_ranges_merge(m->units, m->nunit_of);
	m->bytes += cap * sizeof(*m->unit_of) + m->nunit_of * sizeof(*m->units);
	m->units_read = 1;
	return;
fail:
	free(m->unit_of);
	m->unit_of = NULL;
	m->nunit_of = 0;
	m->units_read = -2;
}

bool cp_mod_unit_die(struct cp_mod *m, uint64_t addr, Dwarf_Die *cu, Dwarf_Addr *bias)
{
	Dwarf *dw;
	size_t i;

	if (!m->units_read)
		read_units(m);
	if (m->units_read < 0)
		return false;
	i = cp_upper_bound_u64(m->unit_of, m->nunit_of, sizeof(*m->unit_of), addr);
	if (i == 0 || addr >= m->unit_of[i - 1].hi || !(dw = dwfl_module_getdwarf(m->mod, bias)))
		return false;
	return dwarf_offdie(dw, m->unit_of[i - 1].die, cu) != NULL;
}

bool cp_mod_in_unit(struct cp_mod *m, uint64_t addr, uint64_t *lo, uint64_t *hi)
{
	if (!m->units_read)
		read_units(m);
	if (m->units_read == -2 || (m->units_read > 0 && cp_ranges_hold(m->units, m->nunits, addr, lo, hi)))
		return true; /* (-2: DWARF whose units are unknown: any may) */
	for (int i = 0; i < m->nseg; i++) {
		uint64_t s = m->seg[i].vaddr + m->bias, e = s + m->seg[i].filesz;

		if (s <= addr && addr < e) {
			*lo = *lo > s ? *lo : s;
			*hi = *hi < e ? *hi : e;
			return false;
		}
	}
	*lo = addr, *hi = addr + 1; /* in no segment: for itself */
	return false;
}

struct cp_gopclntab *cp_mod_gopclntab(struct cp_mod *m)
{
	Dwarf_Addr bias;
	Elf *e;

	if (m->go_read)
		return m->go;
	m->go_read = -1;
	e = m->mod ? dwfl_module_getelf(m->mod, &bias) : NULL;
	if (!e || !(m->go = malloc(sizeof(*m->go))))
		return NULL;
	if (cp_gopclntab_elf(m->go, e)) { /* not Go (-ENOENT), or a table that cannot be read: no names from it */
		cp_error_clear();
		free(m->go);
		m->go = NULL;
		return NULL;
	}
	m->go_read = 1;
	m->bytes += sizeof(*m->go);
	return m->go;
}

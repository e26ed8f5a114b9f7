/* SPDX-License-Identifier: MIT */
#include "modcache.h"

#include <errno.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

struct cp_modcache {
	Dwfl_Callbacks cb;
	struct cp_mod **mods;
	size_t n, max;
	uint64_t clock;
	int vdso_fd;
	void (*on_open)(void *);
	void *on_open_arg;
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
	c->cb.find_debuginfo = separate_debug ? dwfl_standard_find_debuginfo : cp_no_debuginfo;
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
	for (size_t i = 0; i < m->ncus; i++)
		cp_scopes_free(m->cus[i].scopes);
	free(m->cus);
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
	free(c);
}

struct cp_mod *cp_modcache_get(struct cp_modcache *c, const char *key, const struct cp_proc *p,
			       const struct cp_map *m)
{
	struct cp_mod *sm;
	size_t i, nph;
	int fd;
	Elf *elf;

	for (i = 0; i < c->n; i++) {
		if (!strcmp(c->mods[i]->key, key)) {
			c->mods[i]->used = ++c->clock;
			return c->mods[i]->mod ? c->mods[i] : NULL;
		}
	}
	if (c->on_open)
		c->on_open(c->on_open_arg);
	cp_modcache_evict(c, c->max - 1);
	sm = calloc(1, sizeof(*sm));
	if (!sm || !(sm->key = strdup(key))) {
		free(sm);
		return NULL;
	}
	sm->used = ++c->clock;
	c->mods[c->n++] = sm; /* failures are remembered too */
	fd = cp_map_open(p, m, c->vdso_fd);
	if (fd < 0 || !(sm->dwfl = dwfl_begin(&c->cb))) {
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	dwfl_report_begin(sm->dwfl);
	sm->mod = dwfl_report_offline(sm->dwfl, m->path, m->path, fd);
	dwfl_report_end(sm->dwfl, NULL, NULL);
	if (!sm->mod) {
		close(fd);
		return NULL;
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

void cp_modcache_on_open(struct cp_modcache *c, void (*fn)(void *), void *arg)
{
	c->on_open = fn;
	c->on_open_arg = arg;
}

void cp_modcache_evict(struct cp_modcache *c, size_t keep)
{
	while (c->n > keep) {
		size_t oldest = 0;

		for (size_t i = 1; i < c->n; i++)
			if (c->mods[i]->used < c->mods[oldest]->used)
				oldest = i;
		mod_free(c->mods[oldest]);
		c->mods[oldest] = c->mods[--c->n];
	}
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

void cp_modcache_release_pages(struct cp_modcache *c)
{
	for (size_t i = 0; i < c->n; i++)
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

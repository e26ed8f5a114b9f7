/* SPDX-License-Identifier: MIT */
#include "modcache.h"

#include <errno.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct cp_modcache {
	Dwfl_Callbacks cb;
	struct cp_mod **mods;
	size_t n, max;
	uint64_t clock;
	int vdso_fd;
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
	if (c->n == c->max) {
		size_t oldest = 0;

		for (i = 1; i < c->n; i++)
			if (c->mods[i]->used < c->mods[oldest]->used)
				oldest = i;
		mod_free(c->mods[oldest]);
		c->mods[oldest] = c->mods[--c->n];
	}
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

uint64_t cp_mod_addr(const struct cp_mod *sm, uint64_t off)
{
	for (int i = 0; i < sm->nseg; i++)
		if (off >= sm->seg[i].off && off - sm->seg[i].off < sm->seg[i].filesz)
			return off - sm->seg[i].off + sm->seg[i].vaddr + sm->bias;
	return 0;
}

/* SPDX-License-Identifier: MIT */
/* The runtimes' table, from bpf/runtimes.h's list, and their instances (see
 * runtime.h). */
#include "runtime.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "../../bpf/runtimes.h"
#include "../error.h"
#include "../util.h"

#define CP_RT_DECLARE(id, name) extern const struct cp_runtime cp_runtime_##name;
CP_RUNTIMES(CP_RT_DECLARE)
CP_RUNTIMES_NATIVE(CP_RT_DECLARE)
#undef CP_RT_DECLARE

static const struct cp_runtime *const table[] = {
#define CP_RT_ROW(id, name) &cp_runtime_##name,
	CP_RUNTIMES(CP_RT_ROW)
	CP_RUNTIMES_NATIVE(CP_RT_ROW)
#undef CP_RT_ROW
};
#define NRT (sizeof(table) / sizeof(table[0]))

struct cp_runtimes {
	void *st[NRT]; /* NULL: that runtime is left out */
};

const struct cp_runtime *const *cp_runtime_table(size_t *n)
{
	*n = NRT;
	return table;
}

static int index_of(uint32_t id)
{
	for (size_t i = 0; i < NRT; i++)
		if (table[i]->id == id)
			return (int)i;
	return -1;
}

const struct cp_runtime *cp_runtime_find(uint32_t id)
{
	int i = index_of(id);

	return i < 0 ? NULL : table[i];
}

struct cp_runtimes *cp_runtimes_new(const char *verb)
{
	struct cp_runtimes *rs = calloc(1, sizeof(*rs));

	if (!rs) {
		cp_error(ENOMEM, "out of memory");
		return NULL;
	}
	for (size_t i = 0; i < NRT; i++)
		rs->st[i] = table[i]->new(verb);
	return rs;
}

void cp_runtimes_free(struct cp_runtimes *rs)
{
	if (!rs)
		return;
	for (size_t i = 0; i < NRT; i++)
		if (rs->st[i])
			table[i]->free(rs->st[i]);
	free(rs);
}

bool cp_runtimes_named(const struct cp_runtimes *rs, const char *path)
{
	for (size_t i = 0; i < NRT; i++)
		if (rs->st[i] && table[i]->named(path))
			return true;
	return false;
}

int cp_runtimes_detect(struct cp_runtimes *rs, struct cp_proc *p, struct cp_rt_proc *out, struct cp_rt_found *f)
{
	for (size_t i = 0; i < NRT; i++) {
		int yes;

		if (!rs->st[i])
			continue;
		memset(out, 0, sizeof(*out));
		memset(f, 0, sizeof(*f));
		if ((yes = table[i]->detect(rs->st[i], p, out->data, f)) < 0)
			return yes;
		if (yes) {
			out->runtime = table[i]->id;
			return (int)table[i]->id;
		}
	}
	return 0;
}

int cp_runtimes_frame(struct cp_runtimes *rs, uint32_t id, uint32_t pid, unsigned layout,
		      const struct cp_rt_frame *fr, struct cp_rt_name *out)
{
	int i = index_of(id);

	if (i < 0 || !rs->st[i] || !table[i]->frame)
		return -1;
	return table[i]->frame(rs->st[i], pid, layout, fr, out);
}

void cp_runtimes_forget(struct cp_runtimes *rs, uint32_t id, uint32_t pid)
{
	int i = index_of(id);

	if (i >= 0 && rs->st[i])
		table[i]->forget(rs->st[i], pid);
}

int cp_runtimes_native(struct cp_runtimes *rs, uint32_t id, uint32_t pid, unsigned layout,
		       const struct cp_sample_rec *s, const uint64_t *pcs, const uint64_t *fps, int n,
		       struct cp_rt_name *out)
{
	int i = index_of(id);

	if (i < 0 || !rs->st[i] || !table[i]->native)
		return -1;
	return table[i]->native(rs->st[i], pid, layout, s, pcs, fps, n, out);
}

int cp_runtimes_unwind(struct cp_runtimes *rs, uint32_t id, uint32_t pid, unsigned layout, uint64_t pc, bool exact,
		       uint64_t *cfa_sp, bool *bp_saved)
{
	int i = index_of(id);

	if (i < 0 || !rs->st[i] || !table[i]->unwind)
		return 0;
	return table[i]->unwind(rs->st[i], pid, layout, pc, exact, cfa_sp, bp_saved);
}

bool cp_runtimes_unwinds(const struct cp_runtimes *rs, uint32_t id)
{
	int i = index_of(id);

	return i >= 0 && rs->st[i] && table[i]->unwind;
}

/* ---- what the runtimes keep ---- */

int cp_rt_cache_init(struct cp_rt_cache *c, size_t nbuckets, size_t max, void (*free_fn)(struct cp_rt_entry *e))
{
	memset(c, 0, sizeof(*c));
	if (!(c->buckets = calloc(nbuckets, sizeof(*c->buckets))))
		return cp_error(ENOMEM, "out of memory");
	c->nbuckets = nbuckets;
	c->max = max;
	c->free = free_fn;
	return 0;
}

static size_t rt_hash(const struct cp_rt_cache *c, uint32_t pid, uint64_t addr)
{
	uint64_t h = (addr >> 3) * 0x9e3779b97f4a7c15ull ^ pid * 0xff51afd7ed558ccdull;

	return (size_t)(h >> 32) % c->nbuckets;
}

static struct cp_rt_owner *rt_owner(struct cp_rt_cache *c, uint32_t pid)
{
	for (size_t i = 0; i < c->nowners; i++)
		if (c->owners[i].pid == pid)
			return &c->owners[i];
	return NULL;
}

void cp_rt_cache_clear(struct cp_rt_cache *c)
{
	for (size_t i = 0; i < c->nbuckets; i++) {
		struct cp_rt_entry *e = c->buckets[i], *n;

		for (; e; e = n) {
			n = e->next;
			c->free(e);
		}
		c->buckets[i] = NULL;
	}
	c->n = 0;
	c->nowners = 0;
}

void cp_rt_cache_fini(struct cp_rt_cache *c)
{
	if (c->buckets)
		cp_rt_cache_clear(c);
	free(c->buckets);
	free(c->owners);
	memset(c, 0, sizeof(*c));
}

struct cp_rt_entry *cp_rt_cache_find(const struct cp_rt_cache *c, uint32_t pid, uint64_t addr)
{
	struct cp_rt_entry *e = c->buckets[rt_hash(c, pid, addr)];

	while (e && !(e->pid == pid && e->addr == addr))
		e = e->next;
	return e;
}

int cp_rt_cache_put(struct cp_rt_cache *c, struct cp_rt_entry *e)
{
	struct cp_rt_owner *o;
	size_t h;

	if (c->n >= c->max)
		cp_rt_cache_clear(c);
	if (!(o = rt_owner(c, e->pid))) {
		if (cp_grow((void **)&c->owners, &c->ownercap, c->nowners + 1, sizeof(*c->owners))) {
			c->free(e);
			return cp_error(ENOMEM, "out of memory");
		}
		o = &c->owners[c->nowners++];
		*o = (struct cp_rt_owner){ e->pid, 0 };
	}
	o->n++;
	h = rt_hash(c, e->pid, e->addr);
	e->next = c->buckets[h];
	c->buckets[h] = e;
	c->n++;
	return 0;
}

void cp_rt_cache_drop(struct cp_rt_cache *c, struct cp_rt_entry *e)
{
	struct cp_rt_entry **pp = &c->buckets[rt_hash(c, e->pid, e->addr)];
	struct cp_rt_owner *o = rt_owner(c, e->pid);

	while (*pp && *pp != e)
		pp = &(*pp)->next;
	if (!*pp)
		return;
	*pp = e->next;
	if (o && o->n && !--o->n)
		*o = c->owners[--c->nowners];
	c->n--;
	c->free(e);
}

void cp_rt_cache_forget(struct cp_rt_cache *c, uint32_t pid)
{
	struct cp_rt_owner *o = rt_owner(c, pid);

	if (!o)
		return;
	*o = c->owners[--c->nowners];
	for (size_t i = 0; i < c->nbuckets; i++) {
		struct cp_rt_entry **pp = &c->buckets[i];

		while (*pp) {
			struct cp_rt_entry *e = *pp;

			if (e->pid == pid) {
				*pp = e->next;
				c->free(e);
				c->n--;
			} else {
				pp = &e->next;
			}
		}
	}
}

void *cp_rt_bin(struct cp_rt_bins *bs, const struct cp_proc *p, struct cp_map *m,
		void (*look)(void *ctx, void *bin, int fd, const char *path), void *ctx)
{
	char kb[512], key[4096 + 512];
	const char *id = cp_map_key(m, p, kb, sizeof(kb));
	char *b, *k;
	int fd;

	if (!id) {
		errno = ENOENT;
		return NULL;
	}
	snprintf(key, sizeof(key), "%s %s", id, m->path);
	for (size_t i = 0; i < bs->n; i++) {
		b = (char *)bs->v + i * bs->size;
		if (!strcmp(*(char **)b, key))
			return b;
	}
	if (!bs->v && !(bs->v = calloc(CP_RT_BINS_MAX, bs->size))) {
		errno = ENOMEM;
		return NULL;
	}
	if (!(k = strdup(key))) {
		errno = ENOMEM;
		return NULL;
	}
	if (bs->n < CP_RT_BINS_MAX) {
		b = (char *)bs->v + bs->n++ * bs->size;
	} else { /* round robin */
		b = (char *)bs->v + bs->next++ % CP_RT_BINS_MAX * bs->size;
		free(*(char **)b);
	}
	memset(b, 0, bs->size);
	*(char **)b = k;
	fd = cp_map_open(p, m, -1);
	look(ctx, b, fd, m->path);
	if (fd >= 0)
		close(fd);
	return b;
}

void cp_rt_bins_fini(struct cp_rt_bins *bs)
{
	for (size_t i = 0; i < bs->n; i++)
		free(*(char **)((char *)bs->v + i * bs->size));
	free(bs->v);
	bs->v = NULL;
	bs->n = bs->next = 0;
}

bool cp_runtime_peek(uint32_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = { buf, len }, remote = { (void *)(uintptr_t)addr, len };

	return addr && process_vm_readv((pid_t)pid, &local, 1, &remote, 1, 0) == (ssize_t)len;
}

bool cp_runtime_sym_read(Elf *e, int fd, const GElf_Sym *sym, void *out, size_t n)
{
	Elf_Scn *scn = elf_getscn(e, sym->st_shndx);
	GElf_Shdr sh;

	memset(out, 0, n);
	if (!scn || !gelf_getshdr(scn, &sh) || sym->st_value < sh.sh_addr || sym->st_value + n > sh.sh_addr + sh.sh_size)
		return false;
	if (sh.sh_type == SHT_NOBITS)
		return true; /* zero */
	return pread(fd, out, n, (off_t)(sh.sh_offset + sym->st_value - sh.sh_addr)) == (ssize_t)n;
}

void cp_runtime_loads(Elf *e, struct cp_rt_loads *l)
{
	size_t nph;

	l->n = 0;
	if (elf_getphdrnum(e, &nph) != 0)
		return;
	for (size_t i = 0; i < nph && l->n < 8; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD) {
			l->seg[l->n].off = ph.p_offset;
			l->seg[l->n].vaddr = ph.p_vaddr;
			l->seg[l->n].filesz = ph.p_filesz;
			l->n++;
		}
	}
}

bool cp_runtime_bias(const struct cp_rt_loads *l, const struct cp_map *m, uint64_t *bias)
{
	for (unsigned i = 0; i < l->n; i++) {
		uint64_t start = l->seg[i].off & ~4095ull;

		if (m->pgoff >= start && m->pgoff < l->seg[i].off + l->seg[i].filesz) {
			*bias = m->start - m->pgoff - l->seg[i].vaddr + l->seg[i].off;
			return true;
		}
	}
	return false;
}

bool cp_runtime_syms(Elf *e, bool symtab, const char *prefix,
		     bool (*fn)(void *ctx, const char *name, const GElf_Sym *sym), void *ctx)
{
	size_t plen = strlen(prefix);
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_DYNSYM && !(symtab && sh.sh_type == SHT_SYMTAB)) ||
		    !(d = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 0; sh.sh_entsize && i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym s;
			const char *nm;

			if (!gelf_getsym(d, (int)i, &s) || s.st_shndx == SHN_UNDEF ||
			    !(nm = elf_strptr(e, sh.sh_link, s.st_name)) || strncmp(nm, prefix, plen))
				continue;
			if (!fn(ctx, nm, &s))
				return false;
		}
	}
	return true;
}

/* SPDX-License-Identifier: MIT */
#include "btfmin.h"

#include <dirent.h>
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/btf.h>

#include "../error.h"
#include "../util.h"

/* .BTF.ext (the kernel's include/uapi/linux/btf.h has no struct for it:
 * libbpf's btf.h documents it): a header, then sections of records, each
 * section a (name, count) pair followed by count records of rec_size. */
struct ext_hdr {
	uint16_t magic;
	uint8_t version, flags;
	uint32_t hdr_len;
	uint32_t func_info_off, func_info_len, line_info_off, line_info_len;
	uint32_t core_relo_off, core_relo_len;
};
struct core_relo {
	uint32_t insn_off, type_id, access_str_off, kind;
};
enum { RELO_FIELD_LAST = 5, RELO_TYPE_ID_LOCAL = 6, RELO_ENUMVAL_EXISTS = 10, RELO_ENUMVAL_VALUE = 11 };

struct keep {
	uint32_t type, member;
};
struct gen {
	const struct btf *k; /* the kernel's */
	const struct btf *l; /* the object's */
	struct keep *keep;
	size_t nkeep, ckeep;
	uint32_t *roots;
	size_t nroots, croots;
	uint32_t *newid; /* kernel type id -> id in the result (0: not in it) */
	uint32_t *order; /* kernel type ids in the order of their new ids */
	size_t norder;
};

static const struct btf_type *skip_mods(const struct btf *b, uint32_t id, uint32_t *out)
{
	const struct btf_type *t = btf__type_by_id(b, id);

	while (t && (btf_is_mod(t) || btf_is_typedef(t))) {
		id = t->type;
		t = btf__type_by_id(b, id);
	}
	*out = id;
	return t;
}

static bool kept(const struct gen *g, uint32_t type, uint32_t member)
{
	for (size_t i = 0; i < g->nkeep; i++)
		if (g->keep[i].type == type && g->keep[i].member == member)
			return true;
	return false;
}

static int add_keep(struct gen *g, uint32_t type, uint32_t member)
{
	if (kept(g, type, member))
		return 0;
	if (cp_grow((void **)&g->keep, &g->ckeep, g->nkeep + 1, sizeof(*g->keep)))
		return cp_error(ENOMEM, "out of memory");
	g->keep[g->nkeep++] = (struct keep){ type, member };
	return 0;
}

static int add_root(struct gen *g, uint32_t id)
{
	if (cp_grow((void **)&g->roots, &g->croots, g->nroots + 1, sizeof(*g->roots)))
		return cp_error(ENOMEM, "out of memory");
	g->roots[g->nroots++] = id;
	return 0;
}

/* The kernel's type of the same kind named as local type t without its
 * "___flavour" suffix (as libbpf matches them). */
static int kernel_type(struct gen *g, const struct btf_type *t, uint32_t *out)
{
	const char *name = btf__name_by_offset(g->l, t->name_off), *flavour;
	char ess[256];
	int kind = btf_kind(t), id;
	size_t n;

	if (!name || !*name)
		return cp_error(ENOTSUP, "a CO-RE relocation of an anonymous type");
	flavour = strstr(name, "___");
	n = flavour ? (size_t)(flavour - name) : strlen(name);
	if (n >= sizeof(ess))
		return cp_error(ENOTSUP, "a type name too long: %.40s...", name);
	memcpy(ess, name, n);
	ess[n] = 0;
	id = btf__find_by_name_kind(g->k, ess, kind);
	if (id <= 0 && kind == BTF_KIND_ENUM)
		id = btf__find_by_name_kind(g->k, ess, BTF_KIND_ENUM64);
	if (id <= 0)
		return cp_error(ENOENT, "the kernel has no type %s", ess);
	*out = (uint32_t)id;
	return 0;
}

/* Member name of kernel composite id, looked for through its anonymous
 * members as libbpf does (the first in member order): the path is kept and
 * *type is the member's type. */
static int find_member(struct gen *g, uint32_t id, const char *name, uint32_t *type, int depth)
{
	uint32_t cid;
	const struct btf_type *t = skip_mods(g->k, id, &cid);
	const struct btf_member *m;
	int err;

	if (!t || !btf_is_composite(t) || depth > 32)
		return 1;
	m = btf_members(t);
	for (uint16_t i = 0; i < btf_vlen(t); i++, m++) {
		const char *mn = btf__name_by_offset(g->k, m->name_off);

		if (mn && *mn) {
			if (strcmp(mn, name))
				continue;
			*type = m->type;
			return add_keep(g, cid, i);
		}
		if ((err = find_member(g, m->type, name, type, depth + 1)) <= 0)
			return err ? err : add_keep(g, cid, i);
	}
	return 1;
}

/* A field relocation: local type id, access "0:3:1" (an array index on the
 * root, then member or element indices). */
static int field_relo(struct gen *g, uint32_t id, const char *access)
{
	uint32_t lid, kid;
	const struct btf_type *lt = skip_mods(g->l, id, &lid), *kt;
	char *end;
	unsigned long idx;
	int err;

	if (!lt)
		return cp_error(EBADMSG, "a CO-RE relocation of type %u, which the object lacks", id);
	if ((err = kernel_type(g, lt, &kid)) || (err = add_root(g, kid)))
		return err;
	idx = strtoul(access, &end, 10);
	while (*end == ':') {
		idx = strtoul(end + 1, &end, 10);
		lt = skip_mods(g->l, lid, &lid);
		kt = skip_mods(g->k, kid, &kid);
		if (!lt || !kt)
			return cp_error(EBADMSG, "a CO-RE access path through a missing type");
		if (btf_is_composite(lt)) {
			const struct btf_member *m;
			const char *mn;

			if (idx >= btf_vlen(lt))
				return cp_error(EBADMSG, "a CO-RE access past the members of a type");
			m = btf_members(lt) + idx;
			mn = btf__name_by_offset(g->l, m->name_off);
			lid = m->type;
			if (!mn || !*mn)
				continue; /* anonymous here: found by the next name */
			if ((err = find_member(g, kid, mn, &kid, 0)) < 0)
				return err;
			if (err)
				return cp_error(ENOENT, "the kernel's %s has no member %s",
						btf__name_by_offset(g->k, kt->name_off), mn);
		} else if (btf_is_array(lt) && btf_is_array(kt)) {
			lid = btf_array(lt)->type;
			kid = btf_array(kt)->type;
		} else {
			return cp_error(ENOENT, "a CO-RE access path the kernel's types do not have");
		}
	}
	if (*end)
		return cp_error(EBADMSG, "a malformed CO-RE access string '%s'", access);
	return 0;
}

/* Gives id (and what it needs) its id in the result. */
static int assign(struct gen *g, uint32_t id, int depth)
{
	const struct btf_type *t;
	int err = 0;

	if (id == 0 || g->newid[id])
		return 0;
	if (!(t = btf__type_by_id(g->k, id)) || depth > 64)
		return cp_error(EBADMSG, "the kernel's BTF has no type %u", id);
	g->order[g->norder++] = id;
	g->newid[id] = (uint32_t)g->norder;
	switch (btf_kind(t)) {
	case BTF_KIND_INT:
	case BTF_KIND_FLOAT:
	case BTF_KIND_ENUM:
	case BTF_KIND_ENUM64:
	case BTF_KIND_FWD:
	case BTF_KIND_PTR: /* to void: CO-RE never looks through a pointer */
		return 0;
	case BTF_KIND_ARRAY:
		if (!(err = assign(g, btf_array(t)->type, depth + 1)))
			err = assign(g, btf_array(t)->index_type, depth + 1);
		return err;
	case BTF_KIND_TYPEDEF:
	case BTF_KIND_VOLATILE:
	case BTF_KIND_CONST:
	case BTF_KIND_RESTRICT:
	case BTF_KIND_TYPE_TAG:
		return assign(g, t->type, depth + 1);
	case BTF_KIND_STRUCT:
	case BTF_KIND_UNION:
		for (uint16_t i = 0; !err && i < btf_vlen(t); i++)
			if (kept(g, id, i))
				err = assign(g, btf_members(t)[i].type, depth + 1);
		return err;
	default:
		return cp_error(ENOTSUP, "a kernel type of kind %u on a CO-RE path", btf_kind(t));
	}
}

static const char *name_or_null(const struct btf *b, uint32_t off)
{
	const char *n = btf__name_by_offset(b, off);

	return n && *n ? n : NULL;
}

/* The type kernel id as the result's next one. */
static int emit(struct gen *g, struct btf *out, uint32_t id)
{
	const struct btf_type *t = btf__type_by_id(g->k, id);
	const char *name = name_or_null(g->k, t->name_off);
	int r, err = 0;

	switch (btf_kind(t)) {
	case BTF_KIND_INT:
		r = btf__add_int(out, name, t->size, btf_int_encoding(t));
		break;
	case BTF_KIND_FLOAT:
		r = btf__add_float(out, name, t->size);
		break;
	case BTF_KIND_PTR:
		r = btf__add_ptr(out, 0);
		break;
	case BTF_KIND_FWD:
		r = btf__add_fwd(out, name, btf_kflag(t) ? BTF_FWD_UNION : BTF_FWD_STRUCT);
		break;
	case BTF_KIND_ARRAY:
		r = btf__add_array(out, (int)g->newid[btf_array(t)->index_type], (int)g->newid[btf_array(t)->type],
				   btf_array(t)->nelems);
		break;
	case BTF_KIND_TYPEDEF:
		r = btf__add_typedef(out, name, (int)g->newid[t->type]);
		break;
	case BTF_KIND_VOLATILE:
		r = btf__add_volatile(out, (int)g->newid[t->type]);
		break;
	case BTF_KIND_CONST:
		r = btf__add_const(out, (int)g->newid[t->type]);
		break;
	case BTF_KIND_RESTRICT:
		r = btf__add_restrict(out, (int)g->newid[t->type]);
		break;
	case BTF_KIND_TYPE_TAG:
		r = btf__add_type_tag(out, name, (int)g->newid[t->type]);
		break;
	case BTF_KIND_ENUM:
		r = btf__add_enum(out, name, t->size);
		for (uint16_t i = 0; r > 0 && !err && i < btf_vlen(t); i++)
			err = btf__add_enum_value(out, btf__name_by_offset(g->k, btf_enum(t)[i].name_off),
						  btf_enum(t)[i].val);
		break;
	case BTF_KIND_ENUM64:
		r = btf__add_enum64(out, name, t->size, btf_kflag(t));
		for (uint16_t i = 0; r > 0 && !err && i < btf_vlen(t); i++)
			err = btf__add_enum64_value(out, btf__name_by_offset(g->k, btf_enum64(t)[i].name_off),
						    btf_enum64_value(&btf_enum64(t)[i]));
		break;
	default: /* struct, union: what assign() lets through */
		r = btf_is_union(t) ? btf__add_union(out, name, t->size) : btf__add_struct(out, name, t->size);
		for (uint16_t i = 0; r > 0 && !err && i < btf_vlen(t); i++)
			if (kept(g, id, i))
				err = btf__add_field(out, name_or_null(g->k, btf_members(t)[i].name_off),
						     (int)g->newid[btf_members(t)[i].type], btf_member_bit_offset(t, i),
						     btf_member_bitfield_size(t, i));
		break;
	}
	if (r < 0 || err)
		return cp_error(EINVAL, "libbpf refused a type of the cut BTF: %s", strerror(r < 0 ? -r : -err));
	if ((uint32_t)r != g->newid[id])
		return cp_error(EINVAL, "the cut BTF's type ids went out of step");
	return 0;
}

/* The sections name of the object: .BTF and .BTF.ext. */
static int object_sections(Elf *e, Elf_Data **btf, Elf_Data **ext)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;

	*btf = *ext = NULL;
	if (elf_getshdrstrndx(e, &shstrndx))
		return cp_error(EBADMSG, "the BPF object is not ELF: %s", elf_errmsg(-1));
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		const char *n;

		if (!gelf_getshdr(scn, &sh) || !(n = elf_strptr(e, shstrndx, sh.sh_name)))
			continue;
		if (!strcmp(n, ".BTF"))
			*btf = elf_getdata(scn, NULL);
		else if (!strcmp(n, ".BTF.ext"))
			*ext = elf_getdata(scn, NULL);
	}
	if (!*btf || !*ext || !(*btf)->d_buf || !(*ext)->d_buf)
		return cp_error(EBADMSG, "the BPF object has no .BTF or .BTF.ext");
	return 0;
}

/* Every CO-RE relocation of .BTF.ext, through field_relo. */
static int walk_relos(struct gen *g, const Elf_Data *ext)
{
	const uint8_t *p = ext->d_buf, *end;
	struct ext_hdr h;
	uint32_t rsize;

	memset(&h, 0, sizeof(h));
	if (ext->d_size < 8)
		return cp_error(EBADMSG, "a .BTF.ext too short");
	memcpy(&h, p, ext->d_size < sizeof(h) ? ext->d_size : sizeof(h));
	if (h.magic != 0xeB9F || h.hdr_len < sizeof(h) || h.hdr_len > ext->d_size)
		return 0; /* no CO-RE part: nothing needed */
	if (h.core_relo_off > ext->d_size - h.hdr_len || h.core_relo_len > ext->d_size - h.hdr_len - h.core_relo_off)
		return cp_error(EBADMSG, "a .BTF.ext whose CO-RE part is out of bounds");
	if (h.core_relo_len == 0)
		return 0;
	p += h.hdr_len + h.core_relo_off;
	end = p + h.core_relo_len;
	memcpy(&rsize, p, 4);
	p += 4;
	if (rsize < sizeof(struct core_relo))
		return cp_error(EBADMSG, "a .BTF.ext with CO-RE records of %u bytes", rsize);
	while (end - p >= 8) {
		uint32_t sec[2];

		memcpy(sec, p, 8);
		p += 8;
		if (sec[1] > (size_t)(end - p) / rsize)
			return cp_error(EBADMSG, "a .BTF.ext section past its end");
		for (uint32_t i = 0; i < sec[1]; i++, p += rsize) {
			struct core_relo r;
			const char *acc;
			uint32_t kid;
			int err;

			memcpy(&r, p, sizeof(r));
			if (!(acc = btf__name_by_offset(g->l, r.access_str_off)))
				return cp_error(EBADMSG, "a CO-RE record with no access string");
			if (r.kind <= RELO_FIELD_LAST)
				err = field_relo(g, r.type_id, acc);
			else if (r.kind == RELO_TYPE_ID_LOCAL)
				err = 0;
			else if (r.kind == RELO_ENUMVAL_EXISTS || r.kind == RELO_ENUMVAL_VALUE) {
				/* the whole enum: assign() and emit() copy every value */
				const struct btf_type *t = skip_mods(g->l, r.type_id, &kid);

				if (!t)
					err = cp_error(EBADMSG, "a CO-RE record of a missing type");
				else if (!(err = kernel_type(g, t, &kid)))
					err = add_root(g, kid);
			} else
				err = cp_error(ENOTSUP, "a CO-RE relocation of kind %u", r.kind);
			if (err)
				return err;
		}
	}
	return 0;
}

int cp_btfmin_build(const void *obj, size_t len, const struct btf *kernel, void **out, size_t *outlen)
{
	struct gen g = { .k = kernel };
	struct btf *local = NULL, *res = NULL;
	char *copy = malloc(len ? len : 1);
	Elf *e = NULL;
	Elf_Data *bd, *ed;
	uint32_t n = btf__type_cnt(kernel), size;
	const void *raw;
	int err;

	*out = NULL;
	g.newid = calloc(n, sizeof(*g.newid));
	g.order = calloc(n, sizeof(*g.order));
	if (!copy || !g.newid || !g.order) {
		err = cp_error(ENOMEM, "out of memory");
		goto out;
	}
	/* libelf may write to what it reads: a copy, never the caller's */
	memcpy(copy, obj, len);
	elf_version(EV_CURRENT);
	if (!(e = elf_memory(copy, len))) {
		err = cp_error(EBADMSG, "the BPF object is not ELF: %s", elf_errmsg(-1));
		goto out;
	}
	if ((err = object_sections(e, &bd, &ed)))
		goto out;
	if (!(local = btf__new(bd->d_buf, (uint32_t)bd->d_size))) {
		err = cp_error(EBADMSG, "the BPF object's .BTF does not parse: %s", strerror(errno));
		goto out;
	}
	g.l = local;
	if ((err = walk_relos(&g, ed)))
		goto out;
	for (size_t i = 0; !err && i < g.nroots; i++)
		err = assign(&g, g.roots[i], 0);
	if (err)
		goto out;
	if (!(res = btf__new_empty())) {
		err = cp_error(ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; !err && i < g.norder; i++)
		err = emit(&g, res, g.order[i]);
	if (err)
		goto out;
	if (!(raw = btf__raw_data(res, &size)) || !(*out = malloc(size))) {
		err = cp_error(ENOMEM, "out of memory");
		goto out;
	}
	memcpy(*out, raw, size);
	*outlen = size;
out:
	btf__free(res);
	btf__free(local);
	if (e)
		elf_end(e);
	free(copy);
	free(g.keep);
	free(g.roots);
	free(g.newid);
	free(g.order);
	return err;
}

#define PREFIX "btf-"

/* Removes the cut BTF files of other boots or objects beside keep. */
static void remove_others(const char *dir, const char *keep)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	char path[4400];

	while (d && (de = readdir(d))) {
		size_t n = strlen(de->d_name);

		if (strncmp(de->d_name, PREFIX, strlen(PREFIX)) || n < 4 || strcmp(de->d_name + n - 4, ".btf") ||
		    !strcmp(de->d_name, keep))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		unlink(path);
	}
	if (d)
		closedir(d);
}

int cp_btfmin_path(const void *obj, size_t len, char *buf, size_t buflen)
{
	char dir[4096], boot[64], name[128];
	const uint8_t *p = obj;
	uint64_t h = 1469598103934665603ull;
	struct btf *kernel;
	void *raw;
	size_t rlen;
	int err;

	if ((err = cp_boot_id(boot, sizeof(boot))) || (err = cp_cache_dir(dir, sizeof(dir))))
		return err;
	for (size_t i = 0; i < len; i++)
		h = (h ^ p[i]) * 1099511628211ull;
	snprintf(name, sizeof(name), PREFIX "%s-%016llx.btf", boot, (unsigned long long)h);
	if ((size_t)snprintf(buf, buflen, "%s/%s", dir, name) >= buflen)
		return cp_error(ENAMETOOLONG, "the cache directory's name is too long");
	if (access(buf, R_OK) == 0)
		return 0;
	/* a directory that cannot take the file (read-only, as /var/cache is
	 * under ProtectSystem=strict without CacheDirectory=): not worth the
	 * kernel's BTF parsed here and again by libbpf */
	if (access(dir, W_OK) != 0)
		return cp_error(errno, "cannot write the cache directory %s: %s", dir, strerror(errno));
	if (!(kernel = btf__load_vmlinux_btf()))
		return cp_error(errno, "cannot read the kernel's BTF: %s", strerror(errno));
	err = cp_btfmin_build(obj, len, kernel, &raw, &rlen);
	btf__free(kernel);
	if (err)
		return err;
	err = cp_write_file_atomic(buf, raw, rlen);
	free(raw);
	if (!err)
		remove_others(dir, name);
	return err;
}

void cp_btfmin_forget(const char *path)
{
	unlink(path);
}

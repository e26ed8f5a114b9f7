/* SPDX-License-Identifier: MIT */
/* The cut BTF of lib/sampling/btfmin.c against the running kernel's whole
 * BTF: every member the sampler's CO-RE relocations name is where the
 * kernel has it; libbpf relocates the sampler to the same instructions with
 * either (loaded into the kernel both ways: needs root, as CI runs); and
 * what cannot be cut is refused, not guessed. */
#include <check.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <linux/bpf.h>

#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "bpf/sampler.skel.h"
#include "sampling/btfmin.h"
#include "util.h"

static struct btf *kernel_btf(void)
{
	struct btf *k = btf__load_vmlinux_btf();

	ck_assert_msg(k != NULL, "the kernel's BTF: %s", strerror(errno));
	return k;
}

static struct btf *cut(const struct btf *k)
{
	size_t len, rlen;
	const void *obj = sampler__elf_bytes(&len);
	void *raw = NULL;
	struct btf *b;
	int err = cp_btfmin_build(obj, len, k, &raw, &rlen);

	ck_assert_msg(err == 0, "cp_btfmin_build: %d", err);
	b = btf__new(raw, (uint32_t)rlen);
	ck_assert_msg(b != NULL, "libbpf parses the cut BTF");
	free(raw);
	return b;
}

/* The bit offset of member name in composite type id of b, looked for
 * through anonymous members as C does; -1 if none. */
static long find_in(const struct btf *b, uint32_t id, const char *name, int depth)
{
	const struct btf_type *t = btf__type_by_id(b, id);
	const struct btf_member *m;

	while (t && (btf_is_mod(t) || btf_is_typedef(t)))
		t = btf__type_by_id(b, t->type);
	if (!t || !btf_is_composite(t) || depth > 8)
		return -1;
	m = btf_members(t);
	for (uint16_t i = 0; i < btf_vlen(t); i++, m++) {
		const char *mn = btf__name_by_offset(b, m->name_off);
		long r;

		if (mn && *mn) {
			if (!strcmp(mn, name))
				return btf_member_bit_offset(t, i);
		} else if ((r = find_in(b, m->type, name, depth + 1)) >= 0) {
			return btf_member_bit_offset(t, i) + r;
		}
	}
	return -1;
}

static long member_offset(const struct btf *b, const char *sname, const char *name)
{
	int id = btf__find_by_name_kind(b, sname, BTF_KIND_STRUCT);

	return id > 0 ? find_in(b, (uint32_t)id, name, 0) : -1;
}

START_TEST(test_members_where_the_kernel_has_them)
{
	struct btf *k = kernel_btf(), *b = cut(k);
	static const struct {
		const char *s, *m;
	} want[] = {
		{ "task_struct", "flags" }, { "task_struct", "mm" },  { "task_struct", "group_leader" },
		{ "task_struct", "comm" },  { "task_struct", "tgid" }, { "task_struct", "pid" },
		{ "pt_regs", "ip" },        { "pt_regs", "sp" },       { "pt_regs", "bp" },
		{ "pt_regs", "r15" },       { "pt_regs", "orig_ax" },  { "vm_area_struct", "vm_end" },
	};
	int id;

	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		long kb = member_offset(k, want[i].s, want[i].m), cb = member_offset(b, want[i].s, want[i].m);

		ck_assert_msg(kb >= 0, "the kernel has %s.%s", want[i].s, want[i].m);
		ck_assert_msg(cb == kb, "%s.%s at bit %ld in the cut BTF, %ld in the kernel's", want[i].s, want[i].m, cb,
			      kb);
	}
	/* the sizes kept, and only what is named: task_struct's hundred-odd members are not all there */
	id = btf__find_by_name_kind(b, "task_struct", BTF_KIND_STRUCT);
	ck_assert_int_gt(id, 0);
	ck_assert_uint_eq(btf__type_by_id(b, (uint32_t)id)->size,
			  btf__type_by_id(k, (uint32_t)btf__find_by_name_kind(k, "task_struct", BTF_KIND_STRUCT))->size);
	/* (the sampler reads 9 of them today) */
	ck_assert_int_le(btf_vlen(btf__type_by_id(b, (uint32_t)id)), 12);
	ck_assert_uint_lt(btf__type_cnt(b), 100);
	btf__free(b);
	btf__free(k);
}
END_TEST

/* loads the sampler with CO-RE against btf (NULL: the kernel's); its programs' instructions */
static struct bpf_insn *loaded_insns(const char *btf, const char *prog, size_t *n)
{
	LIBBPF_OPTS(bpf_object_open_opts, oo, .btf_custom_path = btf);
	struct sampler *s = sampler__open_opts(&oo);
	struct bpf_program *p;
	struct bpf_insn *out;

	ck_assert_msg(s != NULL, "open: %s", strerror(errno));
	ck_assert_msg(sampler__load(s) == 0, "the sampler loads with %s", btf ? btf : "the kernel's BTF");
	p = bpf_object__find_program_by_name(s->obj, prog);
	ck_assert_ptr_nonnull(p);
	*n = bpf_program__insn_cnt(p);
	out = malloc(*n * sizeof(*out));
	memcpy(out, bpf_program__insns(p), *n * sizeof(*out));
	sampler__destroy(s);
	return out;
}

START_TEST(test_same_instructions_loaded)
{
	char dir[] = "/tmp/check_btfmin.XXXXXX", path[4300];
	static const char *progs[] = { "cp_sample", "cp_fork", "cp_exit" };
	size_t len;
	const void *obj = sampler__elf_bytes(&len);

	if (geteuid() != 0) {
		ck_abort_msg("loading BPF needs root (CI runs as root)");
		return;
	}
	ck_assert_ptr_nonnull(mkdtemp(dir));
	setenv("XDG_CACHE_HOME", dir, 1);
	ck_assert_int_eq(cp_btfmin_path(obj, len, path, sizeof(path)), 0);
	ck_assert_msg(access(path, R_OK) == 0, "%s was written", path);
	for (size_t i = 0; i < sizeof(progs) / sizeof(progs[0]); i++) {
		size_t nf, nc;
		struct bpf_insn *f = loaded_insns(NULL, progs[i], &nf), *c = loaded_insns(path, progs[i], &nc);

		ck_assert_uint_eq(nf, nc);
		for (size_t j = 0; j < nf; j++) {
			/* a map's fd (ld_imm64 of a map, two slots) is the load's own */
			if (f[j].code == (BPF_LD | BPF_IMM | BPF_DW) && f[j].src_reg &&
			    c[j].src_reg == f[j].src_reg && j + 1 < nf) {
				j++;
				continue;
			}
			ck_assert_msg(!memcmp(&f[j], &c[j], sizeof(*f)),
				      "%s: instruction %zu is the same either way (off %d imm %d, cut: off %d imm %d)",
				      progs[i], j, f[j].off, f[j].imm, c[j].off, c[j].imm);
		}
		free(f);
		free(c);
	}
	/* the second call finds it */
	ck_assert_int_eq(cp_btfmin_path(obj, len, path, sizeof(path)), 0);
	cp_btfmin_forget(path);
	ck_assert_int_ne(access(path, F_OK), 0);
	{
		char cmd[4400];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		ck_assert_int_eq(system(cmd), 0);
	}
}
END_TEST

START_TEST(test_refused_not_guessed)
{
	struct btf *k = kernel_btf(), *fake = btf__new_empty();
	size_t len, rlen;
	const void *obj = sampler__elf_bytes(&len);
	char junk[4096];
	void *raw = NULL;
	int ti;

	/* not an object */
	memset(junk, 'x', sizeof(junk));
	ck_assert_int_eq(cp_btfmin_build(junk, sizeof(junk), k, &raw, &rlen), -EBADMSG);
	ck_assert_ptr_null(raw);
	/* a kernel without the members the program reads: libbpf would fail too */
	ti = btf__add_int(fake, "int", 4, BTF_INT_SIGNED);
	ck_assert_int_gt(ti, 0);
	ck_assert_int_gt(btf__add_struct(fake, "task_struct", 64), 0);
	ck_assert_int_eq(btf__add_field(fake, "pid", ti, 0, 0), 0);
	ck_assert_int_eq(cp_btfmin_build(obj, len, fake, &raw, &rlen), -ENOENT);
	ck_assert_ptr_null(raw);
	btf__free(fake);
	btf__free(k);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("btfmin");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int nf;

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_members_where_the_kernel_has_them);
	tcase_add_test(tc, test_same_instructions_loaded);
	tcase_add_test(tc, test_refused_not_guessed);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

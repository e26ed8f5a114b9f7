/* SPDX-License-Identifier: MIT */
/* Go's function table (lib/sampling/gopclntab.c) on real Go programs: the
 * burn fixture built here with the Go on this machine ($GO, else go on
 * PATH; Debian 12's is 1.19, whose table is the 1.18 format) twice, as is
 * and stripped (-ldflags='-s -w'), and the stripped twin's table asked:
 *
 * - for every function symbol of the other's .symtab and addresses inside
 *   it: the symbol's name and entry;
 * - for a sample of pcs: the function and the innermost file:line that
 *   `go tool addr2line` gives on the unstripped twin (Go's own reader);
 * - for a sample of pcs: the frames (inlined calls, innermost first, then
 *   the function) and their lines that the unstripped twin's DWARF gives
 *   (libdw's scopes: the inlined subroutines' names and call lines);
 * - with the table broken: truncated at many lengths, another magic, its
 *   offsets past its end, huge counts, a function's record or pc table past
 *   the end, bytes flipped at random: -EINVAL or an answer, never a read
 *   outside it (the sanitizer build checks that), never a crash.
 *
 * The same twins cross-built for 386 (4-byte pointers) and s390x
 * (big-endian, 2-byte pc quantum) are asked against go tool addr2line.
 *
 * Binaries of the other formats, from npm (tools/setup.sh installs them in
 * $CPROF_TEST_NPM, default /usr/local/lib/cprof-test-npm: esbuild's Linux
 * builds, stripped, made with Go 1.15, 1.16 and 1.26) are asked the same
 * against `go tool addr2line` where this Go reads them (1.15, 1.16), and
 * for 1.20 on (0xfffffff1, which Go 1.19 does not read) every function's
 * entry gives its name and every inlined chain ends with its function.
 * Without them those cases say so and pass. */
#include <check.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "error.h"
#include "sampling/gopclntab.h"
#include "testutil.h"

static char dir[] = "/tmp/cprof-gopclntab.XXXXXX";
static char plain[4096], stripped[4096], gotool[4096];
static bool have_go;
/* the cross-built twins: GOARCH, and whether they were built */
static const char *const arches[] = { "386", "s390x" };
static bool have_arch[2];

/* ---- helpers ---- */

struct bin {
	int fd;
	Elf *e;
	struct cp_gopclntab t;
};

static void bin_open(struct bin *b, const char *path)
{
	b->fd = open(path, O_RDONLY);
	ck_assert_msg(b->fd >= 0, "cannot open %s", path);
	b->e = elf_begin(b->fd, ELF_C_READ_MMAP, NULL);
	ck_assert_msg(b->e != NULL, "%s is not ELF", path);
	ck_assert_int_eq(cp_gopclntab_elf(&b->t, b->e), 0);
}

static void bin_close(struct bin *b)
{
	elf_end(b->e);
	close(b->fd);
}

/* the bytes and address of section name of e, or NULL */
static const uint8_t *section(Elf *e, const char *name, size_t *size, uint64_t *addr)
{
	size_t shstrndx, isize;
	const uint8_t *img = (const uint8_t *)elf_rawfile(e, &isize);
	Elf_Scn *scn = NULL;

	if (elf_getshdrstrndx(e, &shstrndx))
		return NULL;
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		const char *n;

		if (gelf_getshdr(scn, &sh) && (n = elf_strptr(e, shstrndx, sh.sh_name)) && !strcmp(n, name)) {
			*size = sh.sh_size;
			*addr = sh.sh_addr;
			return sh.sh_offset + sh.sh_size <= isize ? img + sh.sh_offset : NULL;
		}
	}
	return NULL;
}

/* A Go symbol's name as the function table has it: the linker names an
 * assembly function's ABI0 symbol "NAME.abi0", and writes a name's type
 * arguments (what is between its first '[' and last ']') as "..." in the
 * table (pkg.F[...], type..eq.[...]T) */
static void go_name(const char *sym, char *buf, size_t cap)
{
	size_t n = strlen(sym), k = 0;
	const char *a = strchr(sym, '['), *b = strrchr(sym, ']');
	char *dot;

	if (n > 5 && !strcmp(sym + n - 5, ".abi0"))
		n -= 5;
	if (a && b && a < b && b < sym + n)
		snprintf(buf, cap, "%.*s[...]%.*s", (int)(a - sym), sym, (int)(sym + n - b - 1), b + 1);
	else
		snprintf(buf, cap, "%.*s", (int)n, sym);
	/* and the middle dot of a closure's number (newFunc·1) as a dot, as .symtab has it */
	while ((dot = strstr(buf + k, "\xc2\xb7"))) {
		*dot = '.';
		memmove(dot + 1, dot + 2, strlen(dot + 2) + 1);
		k = (size_t)(dot - buf) + 1;
	}
}

/* The frames of pc in t: how many (asserted >= 0) */
static int frames(const struct cp_gopclntab *t, uint64_t pc, struct cp_goframe *f, uint64_t *entry)
{
	uint64_t lo, hi;
	int n = cp_gopclntab_lookup(t, pc, f, 32, entry, &lo, &hi);

	ck_assert_msg(n >= 0, "lookup of %#llx failed: %d", (unsigned long long)pc, n);
	if (n > 0)
		ck_assert_msg(lo <= pc && pc < hi && *entry <= lo, "%#llx: its run [%#llx, %#llx) from %#llx",
			      (unsigned long long)pc, (unsigned long long)lo, (unsigned long long)hi,
			      (unsigned long long)*entry);
	return n;
}

/* Compares pcs[0..n) of t (the function and the innermost file:line) with
 * `go tool addr2line BIN`; returns how many agree (asserted: all). */
static size_t against_addr2line(const struct cp_gopclntab *t, const char *bin, const uint64_t *pcs, size_t n)
{
	char in[4200], cmd[12000], fn[4096], fl[4096];
	FILE *f, *p;
	size_t same = 0;

	snprintf(in, sizeof(in), "%s/pcs.txt", dir);
	ck_assert((f = fopen(in, "w")) != NULL);
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%#llx\n", (unsigned long long)pcs[i]);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "'%s' tool addr2line '%s' < '%s'", gotool, bin, in);
	ck_assert((p = popen(cmd, "r")) != NULL);
	for (size_t i = 0; i < n; i++) {
		struct cp_goframe fr[32];
		uint64_t entry;
		char want[8300], got[8300], *colon;
		long line;
		int k;

		ck_assert_msg(fgets(fn, sizeof(fn), p) && fgets(fl, sizeof(fl), p), "go tool addr2line stopped at %zu", i);
		fn[strcspn(fn, "\n")] = fl[strcspn(fl, "\n")] = 0;
		/* FILE:LINE; no file ("?:0", ":-1") is none */
		colon = strrchr(fl, ':');
		ck_assert(colon != NULL);
		*colon = 0;
		line = strtol(colon + 1, NULL, 10);
		if (!*fl || !strcmp(fl, "?"))
			snprintf(want, sizeof(want), "%s -", fn);
		else
			snprintf(want, sizeof(want), "%s %s:%ld", fn, fl, line > 0 ? line : 0);
		k = frames(t, pcs[i], fr, &entry);
		if (k == 0)
			snprintf(got, sizeof(got), "? -");
		else if (!fr[0].file)
			snprintf(got, sizeof(got), "%s -", fr[k - 1].func);
		else
			snprintf(got, sizeof(got), "%s %s:%lld", fr[k - 1].func, fr[0].file, (long long)fr[0].line);
		ck_assert_msg(!strcmp(want, got), "%#llx: go tool addr2line says '%s', the table '%s'",
			      (unsigned long long)pcs[i], want, got);
		same++;
	}
	ck_assert_int_eq(pclose(p), 0);
	return same;
}

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* n pcs of t's functions: entries, and random ones inside */
static size_t sample_pcs(const struct cp_gopclntab *t, uint64_t *pcs, size_t n, uint64_t seed)
{
	size_t k = 0;

	for (uint32_t i = 0; i < t->nfunc && k < n; i++) {
		uint64_t entry, end;
		const char *name;

		ck_assert_int_eq(cp_gopclntab_func(t, i, &entry, &end, &name), 0);
		if (i % 3 == 0)
			pcs[k++] = entry;
		if (k < n && end > entry)
			pcs[k++] = entry + rnd(&seed) % (end - entry);
	}
	return k;
}

/* ---- the twins built here ---- */

START_TEST(test_names_match_symtab)
{
	struct bin s, u;
	Elf_Scn *scn = NULL;
	size_t funcs = 0, asked = 0;

	if (!have_go)
		return;
	bin_open(&s, stripped);
	u.fd = open(plain, O_RDONLY);
	u.e = elf_begin(u.fd, ELF_C_READ_MMAP, NULL);
	ck_assert(u.e != NULL);
	ck_assert_msg(cp_gopclntab_elf(&s.t, s.e) == 0 && s.t.version >= 118, "Go 1.18 on's table");
	while ((scn = elf_nextscn(u.e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB || !(d = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sym;
			const char *name;
			char want[4096];

			if (!gelf_getsym(d, (int)i, &sym) || GELF_ST_TYPE(sym.st_info) != STT_FUNC ||
			    sym.st_value < s.t.minpc || sym.st_value >= s.t.maxpc || !sym.st_size ||
			    !(name = elf_strptr(u.e, sh.sh_link, sym.st_name)))
				continue;
			go_name(name, want, sizeof(want));
			funcs++;
			for (uint64_t pc = sym.st_value; pc < sym.st_value + sym.st_size;
			     pc += sym.st_size > 3 ? (sym.st_size + 2) / 3 : 1) {
				struct cp_goframe f[32];
				uint64_t entry;
				int n = frames(&s.t, pc, f, &entry);
				char got[4096];

				ck_assert_msg(n > 0, "%s+%#llx: no function", want, (unsigned long long)(pc - sym.st_value));
				go_name(f[n - 1].func, got, sizeof(got));
				ck_assert_msg(!strcmp(got, want) && entry == sym.st_value,
					      "%#llx: the symbol %s at %#llx, the table %s at %#llx", (unsigned long long)pc,
					      want, (unsigned long long)sym.st_value, f[n - 1].func,
					      (unsigned long long)entry);
				asked++;
			}
		}
	}
	fprintf(stderr, "# names: %zu of %zu function symbols of the unstripped twin (%zu addresses), from the "
			"stripped one's table of %u functions\n", funcs, funcs, asked, s.t.nfunc);
	ck_assert_msg(funcs > 1000, "only %zu function symbols", funcs);
	elf_end(u.e);
	close(u.fd);
	bin_close(&s);
}
END_TEST

START_TEST(test_lines_match_go_addr2line)
{
	struct bin s;
	uint64_t pcs[3000];
	size_t n, same;

	if (!have_go)
		return;
	bin_open(&s, stripped);
	n = sample_pcs(&s.t, pcs, 3000, 7);
	same = against_addr2line(&s.t, plain, pcs, n);
	fprintf(stderr, "# file:line: %zu of %zu pcs as go tool addr2line says on the unstripped twin\n", same, n);
	bin_close(&s);
}
END_TEST

/* the name of a DWARF function or inlined call (through its abstract origin) */
static const char *die_name(Dwarf_Die *d)
{
	Dwarf_Attribute a;

	return dwarf_attr_integrate(d, DW_AT_name, &a) ? dwarf_formstring(&a) : NULL;
}

/* the compilation unit of dw whose ranges hold pc (Go emits no
 * .debug_aranges, which dwarf_addrdie needs) */
static bool unit_of(Dwarf *dw, uint64_t pc, Dwarf_Die *out)
{
	Dwarf_Off off = 0, next;
	size_t hsize;

	while (dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
		Dwarf_Die cu;
		Dwarf_Addr base, lo, hi;
		ptrdiff_t r = 0;

		if (dwarf_offdie(dw, off + hsize, &cu))
			while ((r = dwarf_ranges(&cu, r, &base, &lo, &hi)) > 0)
				if (lo <= pc && pc < hi) {
					*out = cu;
					return true;
				}
		off = next;
	}
	return false;
}

START_TEST(test_inline_frames_match_dwarf)
{
	struct bin s;
	int fd;
	Dwarf *dw;
	uint64_t pcs[4000];
	size_t n, checked = 0, inlined = 0;

	if (!have_go)
		return;
	bin_open(&s, stripped);
	ck_assert(cp_gopclntab_inlines(&s.t));
	fd = open(plain, O_RDONLY);
	ck_assert((dw = dwarf_begin(fd, DWARF_C_READ)) != NULL);
	n = sample_pcs(&s.t, pcs, 1500, 11);
	for (size_t i = 0; i < n; i++) {
		struct cp_goframe f[32];
		uint64_t entry;
		Dwarf_Die cu, *sc = NULL;
		Dwarf_Line *dl;
		const char *ref[32];
		int64_t line[32];
		int k = frames(&s.t, pcs[i], f, &entry), ns, m = 0, ln = 0;
		char a[4096], b[4096];

		if (!unit_of(dw, pcs[i], &cu) || (ns = dwarf_getscopes(&cu, pcs[i], &sc)) <= 0) {
			free(sc);
			continue; /* (DWARF does not cover it: padding, or code without lines) */
		}
		/* (past an inlined call, dwarf_getscopes goes on in its abstract
		 * definition: the concrete chain is the innermost call's own) */
		for (int j = 0; j < ns; j++) {
			if (dwarf_tag(&sc[j]) == DW_TAG_inlined_subroutine) {
				Dwarf_Die *chain = NULL;
				int nc = dwarf_getscopes_die(&sc[j], &chain);

				if (nc > 0) {
					free(sc);
					sc = chain;
					ns = nc;
				} else {
					free(chain);
				}
				break;
			}
		}
		dl = dwarf_getsrc_die(&cu, pcs[i]);
		if (dl)
			dwarf_lineno(dl, &ln);
		line[0] = ln;
		for (int j = 0; j < ns && m < 32; j++) {
			int tag = dwarf_tag(&sc[j]);
			Dwarf_Attribute at;
			Dwarf_Word v;

			if (tag != DW_TAG_inlined_subroutine && tag != DW_TAG_subprogram)
				continue;
			ref[m++] = die_name(&sc[j]);
			if (tag == DW_TAG_subprogram)
				break;
			/* the caller's line is the call's */
			if (m < 32)
				line[m] = dwarf_attr(&sc[j], DW_AT_call_line, &at) && dwarf_formudata(&at, &v) == 0 ? (int64_t)v : 0;
		}
		free(sc);
		if (!m || !ref[m - 1])
			continue;
		ck_assert_msg(k == m, "%#llx: %d frames in the table, %d in DWARF (innermost %s, %s)",
			      (unsigned long long)pcs[i], k, m, k ? f[0].func : "-", ref[0] ? ref[0] : "-");
		for (int j = 0; j < m; j++) {
			go_name(ref[j], a, sizeof(a));
			go_name(f[j].func, b, sizeof(b));
			ck_assert_msg(!strcmp(a, b) && f[j].line == line[j], "%#llx frame %d: DWARF %s:%lld, the table %s:%lld",
				      (unsigned long long)pcs[i], j, a, (long long)line[j], b, (long long)f[j].line);
		}
		checked++;
		inlined += m > 1;
	}
	fprintf(stderr, "# inline frames: %zu pcs as the unstripped twin's DWARF says, %zu of them in inlined calls\n",
		checked, inlined);
	ck_assert_msg(checked > 1000 && inlined > 100, "%zu pcs checked, %zu inlined", checked, inlined);
	dwarf_end(dw);
	close(fd);
	bin_close(&s);
}
END_TEST

START_TEST(test_lookup_cost)
{
	struct bin s;
	uint64_t seed = 5, sum = 0, span = 0;
	struct timespec a, b;
	const int N = 200000;
	double ns;

	if (!have_go)
		return;
	bin_open(&s, stripped);
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (int i = 0; i < N; i++) {
		struct cp_goframe f[32];
		uint64_t entry, lo, hi, pc = s.t.minpc + rnd(&seed) % (s.t.maxpc - s.t.minpc);
		int n = cp_gopclntab_lookup(&s.t, pc, f, 32, &entry, &lo, &hi);

		ck_assert_int_gt(n, 0);
		sum += (uint64_t)n;
		span += hi - lo;
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	ns = ((double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec)) / N;
	fprintf(stderr, "# lookup: %.0f ns per pc (%d random pcs of %u functions, %.2f frames, runs of %.1f bytes)\n", ns,
		N, s.t.nfunc, (double)sum / N, (double)span / N);
	bin_close(&s);
}
END_TEST

/* ---- broken tables ---- */

/* every lookup in t at the entries and middles of its functions, and
 * around them: an answer or -EINVAL */
static void ask_all(const struct cp_gopclntab *t, uint32_t step)
{
	for (uint32_t i = 0; i < t->nfunc; i += step) {
		uint64_t entry, end, lo, hi, e2, pcs[4];
		const char *name;
		struct cp_goframe f[4];

		if (cp_gopclntab_func(t, i, &entry, &end, &name) != 0)
			continue;
		pcs[0] = entry, pcs[1] = entry + (end - entry) / 2, pcs[2] = end - 1, pcs[3] = entry - 1;
		for (int k = 0; k < 4; k++) {
			int n = cp_gopclntab_lookup(t, pcs[k], f, 1 + k, &e2, &lo, &hi);

			ck_assert(n >= 0 || n == -EINVAL);
			for (int j = 0; j < n; j++)
				ck_assert(f[j].func && strlen(f[j].func) < t->size && (!f[j].file || strlen(f[j].file) < t->size));
		}
	}
}

/* the stripped twin's table, copied into a buffer of its own size */
static uint8_t *table_copy(struct bin *s, size_t *size, uint64_t *addr)
{
	const uint8_t *tab = section(s->e, ".gopclntab", size, addr);
	uint8_t *c;

	ck_assert(tab != NULL);
	ck_assert((c = malloc(*size)) != NULL);
	memcpy(c, tab, *size);
	return c;
}

START_TEST(test_truncated_tables)
{
	struct bin s;
	struct cp_gopclntab t;
	size_t size, ok = 0, refused = 0;
	uint64_t addr;
	uint8_t *c;

	if (!have_go)
		return;
	bin_open(&s, stripped);
	c = table_copy(&s, &size, &addr);
	for (size_t cut = 0; cut < size; cut += cut < 96 ? 1 : 1 + size / 61) {
		uint8_t *x = malloc(cut ? cut : 1);
		int err;

		memcpy(x, c, cut);
		err = cp_gopclntab_init(&t, x, cut, addr, 0x401000);
		ck_assert_msg(err == 0 || err == -EINVAL, "cut at %zu: %d", cut, err);
		if (err == 0) {
			ok++;
			cp_gopclntab_set_memory(&t, s.t.mem, s.t.nmem);
			t.gofunc = s.t.gofunc;
			ask_all(&t, 7);
		} else {
			refused++;
		}
		free(x);
	}
	/* (the header and the function table come first: most cuts are refused at once) */
	ck_assert_int_gt(refused, 90);
	fprintf(stderr, "# truncated: %zu refused, %zu opened and asked\n", refused, ok);
	free(c);
	bin_close(&s);
}
END_TEST

/* the word at index i of the header (after magic, pads, quantum, pointer size) */
static void set_word(uint8_t *tab, int i, uint64_t v)
{
	memcpy(tab + 8 + 8 * i, &v, 8);
}

START_TEST(test_bad_headers)
{
	struct bin s;
	struct cp_gopclntab t;
	size_t size;
	uint64_t addr;
	uint8_t *c;

	if (!have_go)
		return;
	bin_open(&s, stripped);
	c = table_copy(&s, &size, &addr);
	ck_assert_int_eq(cp_gopclntab_init(&t, c, size, addr, 0), 0);
	/* another magic */
	memcpy(c, "\x78\x56\x34\x12", 4);
	ck_assert_int_eq(cp_gopclntab_init(&t, c, size, addr, 0), -EINVAL);
	ck_assert_msg(strstr(cp_errmsg(EINVAL), "magic"), "%s", cp_errmsg(EINVAL));
	memcpy(c, s.t.tab, 8);
	c[7] = 3; /* a pointer size */
	ck_assert_int_eq(cp_gopclntab_init(&t, c, size, addr, 0), -EINVAL);
	memcpy(c, s.t.tab, 8);
	/* each offset (1.18: words 3 to 7) past the end */
	for (int i = 3; i <= 7; i++) {
		set_word(c, i, size + 100);
		ck_assert_msg(cp_gopclntab_init(&t, c, size, addr, 0) == -EINVAL, "word %d past the end", i);
		set_word(c, i, UINT64_MAX);
		ck_assert_int_eq(cp_gopclntab_init(&t, c, size, addr, 0), -EINVAL);
		memcpy(c + 8 + 8 * i, s.t.tab + 8 + 8 * i, 8);
	}
	/* huge counts */
	set_word(c, 0, 0xffffffffull);
	ck_assert_int_eq(cp_gopclntab_init(&t, c, size, addr, 0), -EINVAL);
	set_word(c, 0, 1ull << 60);
	ck_assert_int_eq(cp_gopclntab_init(&t, c, size, addr, 0), -EINVAL);
	set_word(c, 0, 0);
	ck_assert_int_eq(cp_gopclntab_init(&t, c, size, addr, 0), -EINVAL);
	memcpy(c + 8, s.t.tab + 8, 8);
	set_word(c, 1, 1ull << 40);
	ck_assert_int_eq(cp_gopclntab_init(&t, c, size, addr, 0), -EINVAL);
	memcpy(c + 16, s.t.tab + 16, 8);
	ck_assert_int_eq(cp_gopclntab_init(&t, c, size, addr, 0), 0);
	free(c);
	bin_close(&s);
}
END_TEST

START_TEST(test_bad_records)
{
	struct bin s;
	struct cp_gopclntab t;
	struct cp_goframe f[8];
	size_t size;
	uint64_t addr, entry, end, e2, lo, hi;
	const char *name;
	uint8_t *c;
	uint32_t v, fi;
	bool inl = false;

	if (!have_go)
		return;
	bin_open(&s, stripped);
	c = table_copy(&s, &size, &addr);
	ck_assert_int_eq(cp_gopclntab_init(&t, c, size, addr, 0), 0);
	/* a function with calls inlined in it (its record has an inline tree) */
	for (fi = 7; fi < t.nfunc && !inl; fi++) {
		ck_assert_int_eq(cp_gopclntab_func(&s.t, fi, &entry, &end, &name), 0);
		for (uint64_t pc = entry; pc < end && !inl; pc++)
			inl = cp_gopclntab_lookup(&s.t, pc, f, 8, &e2, &lo, &hi) > 1;
	}
	ck_assert(inl && --fi > 6);
	fprintf(stderr, "# function %u (%s) has calls inlined\n", fi, name);
	ck_assert_int_eq(cp_gopclntab_func(&t, 5, &entry, &end, &name), 0);
	/* function 5's record past the end */
	v = 0xfffffff0;
	memcpy(c + t.functab + (2 * 5 + 1) * 4, &v, 4);
	ck_assert_int_eq(cp_gopclntab_lookup(&t, entry, f, 8, &e2, &lo, &hi), -EINVAL);
	ck_assert_int_eq(cp_gopclntab_func(&t, 5, &entry, &end, &name), -EINVAL);
	ck_assert_int_eq(cp_gopclntab_func(&t, 6, &entry, &end, &name), 0); /* (the others stand) */
	ck_assert_int_gt(cp_gopclntab_lookup(&t, entry, f, 8, &e2, &lo, &hi), 0);
	memcpy(c, s.t.tab, size);
	/* function 6's pc-line table (field 6 of its record) and name past the end */
	memcpy(&v, c + t.functab + (2 * 6 + 1) * 4, 4);
	{
		size_t rec = t.funcs.off + v;
		uint32_t big = (uint32_t)size;

		memcpy(c + rec + 4 + 20, &big, 4);
		ck_assert_int_eq(cp_gopclntab_lookup(&t, entry, f, 8, &e2, &lo, &hi), -EINVAL);
		memcpy(c + rec + 4 + 20, s.t.tab + rec + 4 + 20, 4);
		memcpy(c + rec + 4, &big, 4);
		ck_assert_int_eq(cp_gopclntab_lookup(&t, entry, f, 8, &e2, &lo, &hi), -EINVAL);
		memcpy(c + rec + 4, s.t.tab + rec + 4, 4);
	}
	/* the pc-value tables' count of a function with an inline tree huge (its
	 * function data past the end) */
	ck_assert_int_eq(cp_gopclntab_func(&t, fi, &entry, &end, &name), 0);
	memcpy(&v, c + t.functab + (2 * fi + 1) * 4, 4);
	{
		size_t rec = t.funcs.off + v;
		uint32_t big = 0x40000000;

		cp_gopclntab_set_memory(&t, s.t.mem, s.t.nmem);
		t.gofunc = s.t.gofunc;
		ck_assert_int_gt(cp_gopclntab_lookup(&t, entry, f, 8, &e2, &lo, &hi), 0);
		memcpy(c + rec + 4 + 24, &big, 4);
		ck_assert_int_eq(cp_gopclntab_lookup(&t, entry, f, 8, &e2, &lo, &hi), -EINVAL);
	}
	free(c);
	bin_close(&s);
}
END_TEST

START_TEST(test_flipped_bytes)
{
	struct bin s;
	struct cp_gopclntab t;
	size_t size, opened = 0;
	uint64_t addr, seed = 99;
	uint8_t *c;

	if (!have_go)
		return;
	bin_open(&s, stripped);
	c = table_copy(&s, &size, &addr);
	for (int round = 0; round < 400; round++) {
		memcpy(c, s.t.tab, size);
		for (int k = 0; k < 1 + round % 8; k++) {
			/* (the header and function table are the most read: half the flips land there) */
			size_t at = k % 2 ? rnd(&seed) % size : rnd(&seed) % (s.t.functab + 8 * s.t.nfunc + 64);

			c[at % size] ^= (uint8_t)(1u << (rnd(&seed) % 8));
		}
		if (cp_gopclntab_init(&t, c, size, addr, 0x401000) != 0)
			continue;
		opened++;
		cp_gopclntab_set_memory(&t, s.t.mem, s.t.nmem);
		t.gofunc = s.t.gofunc;
		ask_all(&t, 97);
	}
	ck_assert_int_gt(opened, 100);
	free(c);
	bin_close(&s);
}
END_TEST

/* ---- other architectures ---- */

static void other_arch(int k, unsigned ptrsize, bool be)
{
	char p[4200], st[4200];
	struct bin s;
	uint64_t pcs[1500];
	size_t n, inl = 0;

	if (!have_arch[k]) {
		fprintf(stderr, "# the %s twins were not built: not checked\n", arches[k]);
		return;
	}
	snprintf(p, sizeof(p), "%s/burn-%s", dir, arches[k]);
	snprintf(st, sizeof(st), "%s/burn-%s-stripped", dir, arches[k]);
	bin_open(&s, st);
	ck_assert_int_eq(s.t.ptrsize, ptrsize);
	ck_assert_int_eq(s.t.be, be);
	ck_assert(cp_gopclntab_inlines(&s.t));
	n = sample_pcs(&s.t, pcs, 1500, 13);
	for (size_t i = 0; i < n; i++) {
		struct cp_goframe f[32];
		uint64_t entry;

		inl += frames(&s.t, pcs[i], f, &entry) > 1;
	}
	fprintf(stderr, "# %s (%u-byte pointers, %s-endian, pc quantum %u): %zu of %zu pcs as go tool addr2line says, "
			"%zu in inlined calls\n", arches[k], ptrsize, be ? "big" : "little", s.t.quantum,
		against_addr2line(&s.t, p, pcs, n), n, inl);
	ck_assert_int_gt(inl, 20);
	bin_close(&s);
}

START_TEST(test_386_table)
{
	other_arch(0, 4, false);
}
END_TEST

START_TEST(test_s390x_table)
{
	other_arch(1, 8, true);
}
END_TEST

/* ---- the other formats, from npm ---- */

static const char *npm_bin(const char *pkg, char *buf, size_t cap)
{
	const char *p = getenv("CPROF_TEST_NPM");

	snprintf(buf, cap, "%s/node_modules/%s/bin/esbuild", p && *p ? p : "/usr/local/lib/cprof-test-npm", pkg);
	return access(buf, R_OK) == 0 ? buf : NULL;
}

static void other_format(const char *pkg, int version)
{
	char path[4096];
	struct bin s;
	uint64_t pcs[2000];
	size_t n;

	if (!npm_bin(pkg, path, sizeof(path))) {
		fprintf(stderr, "# %s is not installed (tools/setup.sh): the Go %d table of a real binary not checked\n",
			pkg, version);
		return;
	}
	bin_open(&s, path);
	ck_assert_int_eq(s.t.version, version);
	n = sample_pcs(&s.t, pcs, 2000, 3);
	if (have_go) /* (Go 1.19 reads these formats) */
		fprintf(stderr, "# %s (Go %d format): %zu of %zu pcs as go tool addr2line says\n", pkg, version,
			against_addr2line(&s.t, path, pcs, n), n);
	ask_all(&s.t, 1);
	bin_close(&s);
}

START_TEST(test_go115_table)
{
	other_format("cprof-go1.15", 12);
}
END_TEST

START_TEST(test_go116_table)
{
	other_format("cprof-go1.16", 116);
}
END_TEST

START_TEST(test_go120_table)
{
	char path[4096];
	struct bin s;
	size_t inlined = 0, pcs = 0;
	bool main_main = false;

	if (!npm_bin("@esbuild/linux-x64", path, sizeof(path))) {
		fprintf(stderr, "# @esbuild/linux-x64 is not installed (tools/setup.sh): a Go 1.20+ table not checked\n");
		return;
	}
	bin_open(&s, path);
	ck_assert_int_eq(s.t.version, 120);
	ck_assert(cp_gopclntab_inlines(&s.t));
	for (uint32_t i = 0; i < s.t.nfunc; i++) {
		uint64_t entry, end, e2;
		const char *name;
		struct cp_goframe f[32];

		ck_assert_int_eq(cp_gopclntab_func(&s.t, i, &entry, &end, &name), 0);
		main_main |= !strcmp(name, "main.main");
		for (uint64_t pc = entry; pc < end; pc += 1 + (end - entry) / 16) {
			int n = frames(&s.t, pc, f, &e2);

			ck_assert_msg(n > 0 && e2 == entry && !strcmp(f[n - 1].func, name),
				      "%#llx: the function %s, the table's outermost frame %s", (unsigned long long)pc, name,
				      n > 0 ? f[n - 1].func : "-");
			for (int k = 0; k < n; k++)
				ck_assert_msg(f[k].func[0] && (!f[k].file || f[k].line > 0), "%#llx frame %d", (unsigned long long)pc, k);
			inlined += n > 1;
			pcs++;
		}
	}
	ck_assert(main_main);
	ck_assert_int_gt(inlined, 1000);
	fprintf(stderr, "# @esbuild/linux-x64 (Go 1.20+ format): %u functions, %zu pcs, %zu in inlined calls\n", s.t.nfunc,
		pcs, inlined);
	bin_close(&s);
}
END_TEST

/* ---- building the twins ---- */

static int sh(const char *cmd)
{
	int st = system(cmd);

	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void build_twins(void)
{
	const char *go = getenv("GO"), *src = getenv("srcdir");
	char cmd[16384];

	if (!go || !*go)
		go = "go";
	snprintf(cmd, sizeof(cmd), "command -v '%s' >/dev/null 2>&1", go);
	if (sh(cmd) != 0) {
		fprintf(stderr, "# go is not installed (apt-get install golang-go): the Go programs are not built\n");
		return;
	}
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		exit(1);
	}
	snprintf(gotool, sizeof(gotool), "%s", go);
	snprintf(plain, sizeof(plain), "%s/burn", dir);
	snprintf(stripped, sizeof(stripped), "%s/burn-stripped", dir);
	snprintf(cmd, sizeof(cmd),
		 "cd '%s' && GOCACHE='%s/gocache' GO111MODULE=off GOFLAGS= '%s' build -o '%s' tests/fixtures/burn/burn.go && "
		 "GOCACHE='%s/gocache' GO111MODULE=off GOFLAGS= '%s' build -ldflags='-s -w' -o '%s' tests/fixtures/burn/burn.go",
		 src && *src ? src : "..", dir, go, plain, dir, go, stripped);
	if (sh(cmd) != 0) {
		fprintf(stderr, "building the burn fixture failed: %s\n", cmd);
		rm_rf(dir);
		exit(1);
	}
	have_go = true;
	for (int k = 0; k < 2; k++) {
		snprintf(cmd, sizeof(cmd),
			 "cd '%s' && export GOCACHE='%s/gocache' GO111MODULE=off GOFLAGS= GOARCH=%s && '%s' build -o "
			 "'%s/burn-%s' tests/fixtures/burn/burn.go && '%s' build -ldflags='-s -w' -o '%s/burn-%s-stripped' "
			 "tests/fixtures/burn/burn.go",
			 src && *src ? src : "..", dir, arches[k], go, dir, arches[k], go, dir, arches[k]);
		have_arch[k] = sh(cmd) == 0;
	}
}

int main(void)
{
	const TTest *const tests[] = {
		test_names_match_symtab, test_lines_match_go_addr2line, test_inline_frames_match_dwarf, test_lookup_cost,
		test_truncated_tables, test_bad_headers, test_bad_records, test_flipped_bytes, test_go115_table,
		test_go116_table, test_go120_table, test_386_table, test_s390x_table,
	};
	int rc;

	elf_version(EV_CURRENT);
	build_twins();
	rc = run_tests_timeout("gopclntab", tests, sizeof(tests) / sizeof(*tests), 600);
	if (have_go)
		rm_rf(dir);
	return rc;
}

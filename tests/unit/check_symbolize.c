/* SPDX-License-Identifier: MIT */
/* The symbolizer through its interface (lib/sampling/symbolize.h), against
 * real binaries: this test's own functions (names and file:line from its
 * DWARF: it is built with -g), a function of zlib and of libc, a small
 * library built here with -O2 -g (an inlined call's frames), its copies
 * without DWARF (objcopy --strip-debug: the symbol table's names) and
 * without a symbol table (--strip-all: the dynamic symbols' names, none for a
 * local function), kernel addresses from /proc/kallsyms (needs root, as CI
 * runs), an address in no mapping, the counts and what forgetting and a
 * bounded cache do.  Every answer is read back from the profile's
 * location, function and string tables. */
#include <check.h>
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <limits.h>
#include <link.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "profile.h"
#include "sampling/proc.h"
#include "sampling/symbolize.h"
#include "sampling/unwind.h"
#include "testutil.h"

/* ---- what a location says, from the profile's tables ---- */

struct fr {
	const char *name, *file;
	int64_t line;
};

/* The frames of location loc (innermost first): its lines, their functions'
 * names and files.  Their number. */
static int loc_frames(const struct cp_profile *prof, int64_t loc, struct fr *out, int max)
{
	const struct cp_location *l;

	ck_assert_int_gt(loc, 0);
	ck_assert_int_le(loc, prof->nlocations);
	l = cp_profile_loc(prof, (uint32_t)loc);
	ck_assert_int_le(l->nlines, max);
	for (uint32_t i = 0; i < l->nlines; i++) {
		const struct cp_line *ln = &prof->lines[l->line_off + i];
		const struct cp_function *f;

		ck_assert_uint_ge(ln->function, 1);
		ck_assert_uint_le(ln->function, prof->nfunctions);
		f = &prof->functions[ln->function - 1];
		out[i].name = cp_profile_string(prof, f->name);
		out[i].file = cp_profile_string(prof, f->filename);
		out[i].line = ln->line;
	}
	return (int)l->nlines;
}

/* The mapping of location loc (NULL: none) */
static const struct cp_mapping *loc_mapping(const struct cp_profile *prof, int64_t loc)
{
	const struct cp_location *l = cp_profile_loc(prof, (uint32_t)loc);

	if (!l->mapping)
		return NULL;
	ck_assert_uint_le(l->mapping, prof->nmappings);
	return &prof->mappings[l->mapping - 1];
}

static bool ends_with(const char *s, const char *end)
{
	size_t n = strlen(s), e = strlen(end);

	return n >= e && !strcmp(s + n - e, end);
}

/* The build id (hex) of the loaded object holding addr, read from its notes
 * in memory (not by the library under test); "" when it has none. */
struct bid_find {
	uintptr_t addr;
	char hex[2 * 64 + 1];
	bool found;
};

static int bid_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct bid_find *b = arg;
	bool in = false;

	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type == PT_LOAD && b->addr >= info->dlpi_addr + ph->p_vaddr &&
		    b->addr < info->dlpi_addr + ph->p_vaddr + ph->p_memsz)
			in = true;
	}
	if (!in)
		return 0;
	b->found = true;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		const uint8_t *p, *end;

		if (ph->p_type != PT_NOTE)
			continue;
		p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
		end = p + ph->p_memsz;
		while (p + sizeof(ElfW(Nhdr)) <= end) {
			const ElfW(Nhdr) *n = (const ElfW(Nhdr) *)p;
			const uint8_t *name = p + sizeof(*n), *desc = name + ((n->n_namesz + 3) & ~3u);

			if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 && !memcmp(name, "GNU", 4) &&
			    n->n_descsz <= 64) {
				for (size_t k = 0; k < n->n_descsz; k++)
					sprintf(b->hex + 2 * k, "%02x", desc[k]);
				return 1;
			}
			p = desc + ((n->n_descsz + 3) & ~3u);
		}
	}
	return 1;
}

static void build_id_of(const void *addr, char *hex, size_t len)
{
	struct bid_find b = { .addr = (uintptr_t)addr };

	dl_iterate_phdr(bid_cb, &b);
	ck_assert_msg(b.found, "no loaded object holds %p", addr);
	snprintf(hex, len, "%s", b.hex);
}

/* ---- this process as the recorder sees it ---- */

struct self {
	struct cp_procs *t;
	struct cp_proc *p;
	struct cp_symbolizer *s;
	struct cp_profile *prof;
};

/* (a table of processes of its own: the symbolizer keeps its ids of each
 * file in the table's mappings) */
static void self_open(struct self *x, size_t max_entries)
{
	x->t = cp_procs_new();
	ck_assert_ptr_nonnull(x->t);
	x->p = cp_procs_get(x->t, (uint32_t)getpid(), true);
	ck_assert_ptr_nonnull(x->p);
	ck_assert_int_eq(cp_proc_read(x->p), 0);
	x->s = cp_symbolizer_new(NULL, max_entries);
	ck_assert_ptr_nonnull(x->s);
	x->prof = cp_profile_new();
	ck_assert_ptr_nonnull(x->prof);
}

static void self_close(struct self *x)
{
	cp_profile_free(x->prof);
	cp_symbolizer_free(x->s);
	cp_procs_free(x->t, NULL);
}

/* ---- functions of this binary ---- */

static volatile uintptr_t noted;
static volatile int sink;
static int call_line; /* the line of the call in sym_target */

/* what a sampled caller's stack holds: the return address into it */
__attribute__((noinline)) void sym_note(void)
{
	noted = (uintptr_t)__builtin_return_address(0);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void sym_target(void)
{
	sym_note(); call_line = __LINE__;
	sink++; /* (no tail call) */
}

__attribute__((noinline)) int sym_other(int x)
{
	return x * 3 + sink;
}

__attribute__((noinline)) int sym_third(int x)
{
	return x * 5 + sink;
}

START_TEST(test_own_function)
{
	/* a return address in sym_target, as a sampled stack has it: the call
	 * before it, with the line of the call, from this binary's DWARF */
	struct self x;
	struct fr f[8];
	const struct cp_mapping *m;
	const struct cp_location *l;
	char exe[PATH_MAX];
	uint64_t ret;
	int64_t loc, loc2;
	bool stable = false;
	ssize_t n;

	sym_target();
	ret = noted;
	ck_assert_uint_ne(ret, 0);
	self_open(&x, 0);
	loc = cp_symbolize_user(x.s, x.prof, x.p, ret, true, &stable);
	ck_assert_int_eq(loc_frames(x.prof, loc, f, 8), 1);
	ck_assert_str_eq(f[0].name, "sym_target");
	ck_assert_msg(ends_with(f[0].file, "check_symbolize.c"), "file %s", f[0].file);
	ck_assert_int_eq(f[0].line, call_line);
	ck_assert(stable); /* a file's code: the same pc, the same location */
	/* the call instruction's address, in the mapping of this binary */
	l = cp_profile_loc(x.prof, (uint32_t)loc);
	ck_assert_uint_eq(l->address, ret - 1);
	m = loc_mapping(x.prof, loc);
	ck_assert_ptr_nonnull(m);
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	ck_assert_int_gt(n, 0);
	exe[n] = 0;
	ck_assert_str_eq(cp_profile_string(x.prof, m->filename), exe);
	ck_assert(m->start <= ret && ret < m->limit);
	ck_assert(m->has_functions && m->has_filenames && m->has_line_numbers);
	/* the function's own address, looked up as is: its name; the same pc
	 * again: the same location */
	loc2 = cp_symbolize_user(x.s, x.prof, x.p, (uint64_t)(uintptr_t)sym_other, false, NULL);
	ck_assert_int_eq(loc_frames(x.prof, loc2, f, 8), 1);
	ck_assert_str_eq(f[0].name, "sym_other");
	ck_assert_int_ne(loc2, loc);
	ck_assert_int_eq(cp_symbolize_user(x.s, x.prof, x.p, ret, true, NULL), loc);
	/* not a return address: ret itself (whose line may be another), not the call */
	loc2 = cp_symbolize_user(x.s, x.prof, x.p, ret, false, NULL);
	ck_assert_int_ne(loc2, loc);
	ck_assert_uint_eq(cp_profile_loc(x.prof, (uint32_t)loc2)->address, ret);
	self_close(&x);
}
END_TEST

START_TEST(test_mapping)
{
	/* cp_symbolize_mapping: the profile's mapping of the file holding the
	 * address (the one its locations get), with its build id; none outside */
	struct self x;
	uint64_t fn = (uint64_t)(uintptr_t)sym_other;
	void *z = dlopen("libz.so.1", RTLD_NOW), *crc = z ? dlsym(z, "crc32") : NULL;
	char bid[160];
	const struct cp_mapping *m;
	int64_t id, loc, other;

	self_open(&x, 0);
	id = cp_symbolize_mapping(x.s, x.prof, x.p, fn);
	ck_assert_int_gt(id, 0);
	m = &x.prof->mappings[id - 1];
	ck_assert(m->start <= fn && fn < m->limit);
	build_id_of(sym_other, bid, sizeof(bid));
	ck_assert_msg(strlen(bid) >= 16, "this test binary has a build id (%s)", bid);
	ck_assert_str_eq(cp_profile_string(x.prof, m->build_id), bid);
	loc = cp_symbolize_user(x.s, x.prof, x.p, fn, false, NULL);
	ck_assert_int_gt(loc, 0);
	ck_assert_uint_eq(cp_profile_loc(x.prof, (uint32_t)loc)->mapping, (uint32_t)id);
	/* the same file, the same mapping; another file, another */
	ck_assert_int_eq(cp_symbolize_mapping(x.s, x.prof, x.p, (uint64_t)(uintptr_t)sym_target), id);
	ck_assert_ptr_nonnull(crc);
	other = cp_symbolize_mapping(x.s, x.prof, x.p, (uint64_t)(uintptr_t)crc);
	ck_assert_int_gt(other, 0);
	ck_assert_int_ne(other, id);
	ck_assert_int_eq(cp_symbolize_mapping(x.s, x.prof, x.p, 0x1123), -ENOENT);
	self_close(&x);
	dlclose(z);
}
END_TEST

START_TEST(test_shared_libraries)
{
	/* zlib's crc32 and libc's getpid, from their symbol tables (the
	 * profile's mapping names their file and build id) */
	void *z = dlopen("libz.so.1", RTLD_NOW);
	void *crc = z ? dlsym(z, "crc32") : NULL, *gp = dlsym(RTLD_DEFAULT, "getpid");
	const struct cp_mapping *m;
	struct self x;
	struct fr f[8];
	char bid[160];
	int64_t loc;

	ck_assert_msg(crc != NULL, "zlib: %s", dlerror());
	ck_assert_ptr_nonnull(gp);
	self_open(&x, 0);
	loc = cp_symbolize_user(x.s, x.prof, x.p, (uint64_t)(uintptr_t)crc, false, NULL);
	ck_assert_int_ge(loc_frames(x.prof, loc, f, 8), 1);
	ck_assert_str_eq(f[0].name, "crc32");
	m = loc_mapping(x.prof, loc);
	ck_assert_ptr_nonnull(m);
	ck_assert_contains(cp_profile_string(x.prof, m->filename), "/libz.so");
	build_id_of(crc, bid, sizeof(bid));
	ck_assert_str_eq(cp_profile_string(x.prof, m->build_id), bid);
	ck_assert(m->has_functions);
	/* getpid is a weak alias of the global __getpid in glibc: either name */
	loc = cp_symbolize_user(x.s, x.prof, x.p, (uint64_t)(uintptr_t)gp, false, NULL);
	ck_assert_int_ge(loc_frames(x.prof, loc, f, 8), 1);
	ck_assert_msg(!strcmp(f[0].name, "getpid") || !strcmp(f[0].name, "__getpid"), "getpid named %s", f[0].name);
	m = loc_mapping(x.prof, loc);
	ck_assert_ptr_nonnull(m);
	ck_assert_contains(cp_profile_string(x.prof, m->filename), "/libc.so");
	self_close(&x);
	dlclose(z);
}
END_TEST

/* ---- a library built here: an inlined call, and copies without DWARF
 * and without a symbol table ---- */

/* its source: the line numbers below are these lines' */
static const char helper_src[] =
	"void *helper_rets[4];\n"                                                 /* 1 */
	"int helper_n;\n"                                                         /* 2 */
	"static volatile int sink;\n"                                             /* 3 */
	"__attribute__((noinline)) void helper_note(void)\n"                      /* 4 */
	"{\n"                                                                     /* 5 */
	"	helper_rets[helper_n++ & 3] = __builtin_return_address(0);\n"     /* 6 */
	"	__asm__ volatile(\"\" ::: \"memory\");\n"                         /* 7 */
	"}\n"                                                                     /* 8 */
	"static inline __attribute__((always_inline)) void helper_inner(int x)\n" /* 9 */
	"{\n"                                                                     /* 10 */
	"	sink = sink * 7 + x;\n"                                           /* 11 */
	"	helper_note();\n"                                                 /* 12 */
	"	sink ^= x << 3;\n"                                                /* 13 */
	"}\n"                                                                     /* 14 */
	"__attribute__((noinline)) static void helper_local(void)\n"              /* 15 */
	"{\n"                                                                     /* 16 */
	"	helper_note();\n"                                                 /* 17 */
	"	sink += 2;\n"                                                     /* 18 */
	"}\n"                                                                     /* 19 */
	"__attribute__((noinline)) int helper_outer(int x)\n"                     /* 20 */
	"{\n"                                                                     /* 21 */
	"	helper_inner(x);\n"                                               /* 22 */
	"	helper_local();\n"                                                /* 23 */
	"	return sink + 1;\n"                                               /* 24 */
	"}\n";                                                                    /* 25 */
#define HELPER_INNER_CALL 12
#define HELPER_OUTER_CALLSITE 22
#define HELPER_LOCAL_CALL 17
#define HELPER_BUILD_ID "c0ffee0123456789abcdef0123456789abcdef42"

/* the tests' scratch directory (made by main, removed when they are done:
 * Check ends a failed test's process without its atexit handlers) */
static char scratch[64], helper_dir[96];

__attribute__((format(printf, 1, 2))) static int sh(const char *fmt, ...)
{
	char cmd[1024];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	ck_assert(n > 0 && (size_t)n < sizeof(cmd));
	return system(cmd);
}

/* helper.so (-O2 -g), helper-nodebug.so (objcopy --strip-debug) and
 * helper-stripped.so (objcopy --strip-all), in a new directory */
static void helper_build(void)
{
	char path[128];
	FILE *f;

	snprintf(helper_dir, sizeof(helper_dir), "%s/helper", scratch);
	ck_assert_int_eq(mkdir(helper_dir, 0700), 0);
	snprintf(path, sizeof(path), "%s/helper.c", helper_dir);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(fputs(helper_src, f) >= 0, 1);
	ck_assert_int_eq(fclose(f), 0);
	ck_assert_msg(sh("cd %s && cc -O2 -g -fPIC -shared -Wl,--build-id=0x" HELPER_BUILD_ID
			 " -o helper.so helper.c 2>cc.err || { cat cc.err >&2; false; }",
			 helper_dir) == 0,
		      "cc builds the helper library");
	ck_assert_msg(sh("cd %s && objcopy --strip-debug helper.so helper-nodebug.so && "
			 "objcopy --strip-all helper.so helper-stripped.so",
			 helper_dir) == 0,
		      "objcopy strips copies of it");
}

/* dlopen dir/name, run helper_outer(1): the return addresses it noted (in
 * helper_outer, from the inlined helper_inner, then in helper_local) */
static void *helper_run(const char *name, uint64_t rets[2])
{
	char path[160];
	void *h;
	int (*outer)(int);
	void **r;
	int *n;

	snprintf(path, sizeof(path), "%s/%s", helper_dir, name);
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	ck_assert_msg(h != NULL, "dlopen %s: %s", path, dlerror());
	outer = (int (*)(int))dlsym(h, "helper_outer");
	r = dlsym(h, "helper_rets");
	n = dlsym(h, "helper_n");
	ck_assert(outer && r && n);
	*n = 0;
	outer(1);
	ck_assert_int_eq(*n, 2);
	rets[0] = (uint64_t)(uintptr_t)r[0];
	rets[1] = (uint64_t)(uintptr_t)r[1];
	return h;
}

START_TEST(test_inlined_and_stripped)
{
	uint64_t full[2], nodebug[2], stripped[2];
	void *h1, *h2, *h3;
	const struct cp_mapping *m;
	struct self x;
	struct fr f[8];
	int64_t loc;

	unsetenv("DEBUGINFOD_URLS");
	helper_build();
	h1 = helper_run("helper.so", full);
	h2 = helper_run("helper-nodebug.so", nodebug);
	h3 = helper_run("helper-stripped.so", stripped);
	/* (three copies of one binary, with one build id: a symbolizer each,
	 * as it caches by build id) */

	/* with DWARF: the call in the inlined helper_inner, at its line, inside
	 * helper_outer at the line of the inlined call */
	self_open(&x, 0);
	loc = cp_symbolize_user(x.s, x.prof, x.p, full[0], true, NULL);
	ck_assert_int_eq(loc_frames(x.prof, loc, f, 8), 2);
	ck_assert_str_eq(f[0].name, "helper_inner");
	ck_assert_str_eq(f[1].name, "helper_outer");
	ck_assert_msg(ends_with(f[0].file, "/helper.c"), "file %s", f[0].file);
	ck_assert_msg(ends_with(f[1].file, "/helper.c"), "file %s", f[1].file);
	ck_assert_int_eq(f[0].line, HELPER_INNER_CALL);
	ck_assert_int_eq(f[1].line, HELPER_OUTER_CALLSITE);
	m = loc_mapping(x.prof, loc);
	ck_assert_ptr_nonnull(m);
	ck_assert_str_eq(cp_profile_string(x.prof, m->build_id), HELPER_BUILD_ID);
	ck_assert(ends_with(cp_profile_string(x.prof, m->filename), "/helper.so"));
	ck_assert(m->has_functions && m->has_filenames && m->has_line_numbers && m->has_inline_frames);
	/* a local function: its name and line */
	loc = cp_symbolize_user(x.s, x.prof, x.p, full[1], true, NULL);
	ck_assert_int_eq(loc_frames(x.prof, loc, f, 8), 1);
	ck_assert_str_eq(f[0].name, "helper_local");
	ck_assert_int_eq(f[0].line, HELPER_LOCAL_CALL);
	self_close(&x);

	/* without DWARF: the symbol table's names, no inline frame, no file or
	 * line (and the mapping says so) */
	self_open(&x, 0);
	loc = cp_symbolize_user(x.s, x.prof, x.p, nodebug[0], true, NULL);
	ck_assert_int_eq(loc_frames(x.prof, loc, f, 8), 1);
	ck_assert_str_eq(f[0].name, "helper_outer");
	ck_assert_str_eq(f[0].file, "");
	ck_assert_int_eq(f[0].line, 0);
	loc = cp_symbolize_user(x.s, x.prof, x.p, nodebug[1], true, NULL);
	ck_assert_int_eq(loc_frames(x.prof, loc, f, 8), 1);
	ck_assert_str_eq(f[0].name, "helper_local");
	m = loc_mapping(x.prof, loc);
	ck_assert_ptr_nonnull(m);
	ck_assert(ends_with(cp_profile_string(x.prof, m->filename), "/helper-nodebug.so"));
	ck_assert(m->has_functions);
	ck_assert(!m->has_filenames && !m->has_line_numbers && !m->has_inline_frames);
	self_close(&x);

	/* without a symbol table: the exported function from the dynamic
	 * symbols; the local one has no name, a bare location in its mapping */
	self_open(&x, 0);
	loc = cp_symbolize_user(x.s, x.prof, x.p, stripped[0], true, NULL);
	ck_assert_int_eq(loc_frames(x.prof, loc, f, 8), 1);
	ck_assert_str_eq(f[0].name, "helper_outer");
	loc = cp_symbolize_user(x.s, x.prof, x.p, stripped[1], true, NULL);
	ck_assert_int_eq(loc_frames(x.prof, loc, f, 8), 0);
	m = loc_mapping(x.prof, loc);
	ck_assert_ptr_nonnull(m);
	ck_assert(ends_with(cp_profile_string(x.prof, m->filename), "/helper-stripped.so"));
	ck_assert_uint_eq(cp_profile_loc(x.prof, (uint32_t)loc)->address, stripped[1] - 1);
	self_close(&x);

	/* one symbolizer for all three: cached by (build id, file offset), a
	 * copy's address gets the first copy's answer without a lookup of its
	 * own, and (as pprof merges a binary's mappings: same size, offset and
	 * build id) the first copy's mapping, its address made relative to it */
	{
		struct cp_symbolize_counts c0, c1;
		int64_t first;

		self_open(&x, 0);
		first = cp_symbolize_user(x.s, x.prof, x.p, full[1], true, NULL);
		ck_assert_int_gt(first, 0);
		cp_symbolize_counts(x.s, &c0);
		loc = cp_symbolize_user(x.s, x.prof, x.p, stripped[1], true, NULL);
		cp_symbolize_counts(x.s, &c1);
		ck_assert_uint_eq(c1.misses, c0.misses);
		ck_assert_uint_eq(c1.lookups, c0.lookups + 1);
		ck_assert_int_eq(loc_frames(x.prof, loc, f, 8), 1);
		ck_assert_str_eq(f[0].name, "helper_local");
		ck_assert_int_eq(f[0].line, HELPER_LOCAL_CALL);
		ck_assert_int_eq(loc, first);
		self_close(&x);
	}
	dlclose(h1);
	dlclose(h2);
	dlclose(h3);
}
END_TEST

/* ---- kernel ---- */

/* A text symbol of this kernel with an address of its own, at least 16
 * bytes before the next symbol, from /proc/kallsyms: its name and address. */
static bool kernel_symbol(char *name, size_t len, uint64_t *addr)
{
	static const char *const want[] = { "schedule", "__x64_sys_getpid", "do_sys_openat2", "vfs_read", "ksys_read" };
	uint64_t found[5] = { 0 }, next[5], same[5] = { 0 };
	FILE *f = fopen("/proc/kallsyms", "r");
	char line[512];

	ck_assert_ptr_nonnull(f);
	for (int i = 0; i < 5; i++)
		next[i] = UINT64_MAX;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long a;
		char type, sym[256];

		if (sscanf(line, "%llx %c %255s", &a, &type, sym) != 3)
			continue;
		for (int i = 0; i < 5; i++) {
			if ((type == 't' || type == 'T') && !strcmp(sym, want[i]) && !found[i])
				found[i] = a;
		}
	}
	/* the next address of any symbol, and whether another has the same */
	rewind(f);
	while (fgets(line, sizeof(line), f)) {
		unsigned long long a;
		char type, sym[256];

		if (sscanf(line, "%llx %c %255s", &a, &type, sym) != 3)
			continue;
		for (int i = 0; i < 5; i++) {
			if (!found[i])
				continue;
			if (a == found[i] && strcmp(sym, want[i]))
				same[i]++;
			if (a > found[i] && a < next[i])
				next[i] = a;
		}
	}
	fclose(f);
	for (int i = 0; i < 5; i++) {
		if (found[i] && !same[i] && next[i] > found[i] + 16) {
			snprintf(name, len, "%s", want[i]);
			*addr = found[i];
			return true;
		}
	}
	return false;
}

/* the kernel's symbol cache in a directory of the test's own */
static void own_cache(void)
{
	char dir[96];

	snprintf(dir, sizeof(dir), "%s/cache", scratch);
	ck_assert_int_eq(mkdir(dir, 0700), 0);
	ck_assert_int_eq(setenv("XDG_CACHE_HOME", dir, 1), 0);
}

START_TEST(test_kernel)
{
	struct cp_symbolize_counts c0, c1;
	struct cp_symbolizer *s;
	struct cp_profile *prof = cp_profile_new();
	const struct cp_mapping *m;
	struct fr f[4];
	char name[64];
	uint64_t a = 0;
	int64_t loc;
	int n;

	if (geteuid() != 0) {
		ck_abort_msg("kernel addresses need root (/proc/kallsyms reads zeros; CI runs as root)");
		return;
	}
	ck_assert_msg(kernel_symbol(name, sizeof(name), &a), "a known kernel function in /proc/kallsyms");
	own_cache();
	s = cp_symbolizer_new(NULL, 0);
	ck_assert_ptr_nonnull(s);
	ck_assert_ptr_nonnull(prof);
	cp_symbolize_counts(s, &c0);
	ck_assert_uint_eq(c0.kernel_symbols, 0); /* read at the first kernel frame, or preload */
	cp_symbolize_preload(s);
	cp_symbolize_counts(s, &c0);
	ck_assert_uint_gt(c0.kernel_symbols, 1000);
	ck_assert_uint_eq(c0.lookups, 0);
	/* inside the function: its name, in the kernel's mapping */
	loc = cp_symbolize_kernel(s, prof, a + 5, false);
	ck_assert_int_eq(loc_frames(prof, loc, f, 4), 1);
	ck_assert_str_eq(f[0].name, name);
	ck_assert_str_eq(f[0].file, ""); /* the kernel image itself: no module */
	ck_assert_uint_eq(cp_profile_loc(prof, (uint32_t)loc)->address, a + 5);
	m = loc_mapping(prof, loc);
	ck_assert_ptr_nonnull(m);
	ck_assert_str_eq(cp_profile_string(prof, m->filename), "[kernel.kallsyms]");
	ck_assert(m->has_functions);
	cp_symbolize_counts(s, &c1);
	ck_assert_uint_eq(c1.lookups, c0.lookups + 1);
	ck_assert_uint_eq(c1.misses, c0.misses + 1);
	/* the same address again: the same location, no lookup of the table */
	ck_assert_int_eq(cp_symbolize_kernel(s, prof, a + 5, false), loc);
	cp_symbolize_counts(s, &c0);
	ck_assert_uint_eq(c0.lookups, c1.lookups + 1);
	ck_assert_uint_eq(c0.misses, c1.misses);
	/* a return address: the byte before it, still the function after its
	 * first byte; at its first byte, the one before (another function, or
	 * none) */
	loc = cp_symbolize_kernel(s, prof, a + 1, true);
	ck_assert_uint_eq(cp_profile_loc(prof, (uint32_t)loc)->address, a);
	ck_assert_int_eq(loc_frames(prof, loc, f, 4), 1);
	ck_assert_str_eq(f[0].name, name);
	loc = cp_symbolize_kernel(s, prof, a, true);
	ck_assert_uint_eq(cp_profile_loc(prof, (uint32_t)loc)->address, a - 1);
	n = loc_frames(prof, loc, f, 4);
	ck_assert(n == 0 || strcmp(f[0].name, name));
	/* forgotten: looked up again, the same answer (the table stays) */
	cp_symbolize_forget(s);
	cp_symbolize_counts(s, &c0);
	loc = cp_symbolize_kernel(s, prof, a + 5, false);
	cp_symbolize_counts(s, &c1);
	ck_assert_uint_eq(c1.misses, c0.misses + 1);
	ck_assert_int_eq(loc_frames(prof, loc, f, 4), 1);
	ck_assert_str_eq(f[0].name, name);
	cp_symbolizer_free(s);
	cp_profile_free(prof);
}
END_TEST

/* ---- addresses in no file ---- */

START_TEST(test_no_mapping)
{
	/* an address in no mapping: a location with no mapping and no lines,
	 * at that address (shown as it) */
	struct self x;
	const struct cp_location *l;
	struct cp_frame *frames = NULL;
	size_t cap = 0;
	char buf[64];
	uint32_t lid;
	int64_t loc, stack;
	/* (mapped before the process is read: a mapping made since is read
	 * again from /proc at most once a second) */
	void *anon = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	ck_assert_ptr_ne(anon, MAP_FAILED);
	self_open(&x, 0);
	loc = cp_symbolize_user(x.s, x.prof, x.p, 0x1123, false, NULL);
	ck_assert_int_gt(loc, 0);
	l = cp_profile_loc(x.prof, (uint32_t)loc);
	ck_assert_uint_eq(l->mapping, 0);
	ck_assert_uint_eq(l->nlines, 0);
	ck_assert_uint_eq(l->address, 0x1123);
	lid = (uint32_t)loc;
	stack = cp_profile_stack(x.prof, &lid, 1);
	ck_assert_int_gt(stack, 0);
	ck_assert_int_eq(cp_profile_frames(x.prof, (uint32_t)stack, &frames, &cap), 1);
	ck_assert_str_eq(cp_frame_name(x.prof, &frames[0], buf, sizeof(buf)), "0x1123");
	free(frames);
	/* as a return address: the byte before */
	loc = cp_symbolize_user(x.s, x.prof, x.p, 0x1123, true, NULL);
	ck_assert_int_gt(loc, 0);
	ck_assert_uint_eq(cp_profile_loc(x.prof, (uint32_t)loc)->address, 0x1122);
	/* executable memory with no file (a JIT's, without a perf map): a
	 * location in its mapping, no name */
	loc = cp_symbolize_user(x.s, x.prof, x.p, (uint64_t)(uintptr_t)anon + 16, false, NULL);
	ck_assert_int_gt(loc, 0);
	ck_assert_uint_eq(cp_profile_loc(x.prof, (uint32_t)loc)->nlines, 0);
	ck_assert_ptr_nonnull(loc_mapping(x.prof, loc));
	ck_assert_str_eq(cp_profile_string(x.prof, loc_mapping(x.prof, loc)->filename), "//anon");
	munmap(anon, 4096);
	self_close(&x);
}
END_TEST

/* ---- counts, other processes, forgetting, the bound ---- */

START_TEST(test_counts_and_processes)
{
	/* lookups count every call, misses the ones not cached; another
	 * process running the same binary gets the cached answer */
	struct cp_symbolize_counts c0, c1;
	struct cp_proc *child;
	struct self x;
	struct fr f[8];
	uint64_t fn = (uint64_t)(uintptr_t)sym_other;
	int64_t loc;
	pid_t pid;

	self_open(&x, 0);
	cp_symbolize_counts(x.s, &c0);
	ck_assert_uint_eq(c0.lookups, 0);
	ck_assert_uint_eq(c0.misses, 0);
	ck_assert_uint_eq(c0.kernel_symbols, 0);
	loc = cp_symbolize_user(x.s, x.prof, x.p, fn, false, NULL);
	cp_symbolize_counts(x.s, &c1);
	ck_assert_uint_eq(c1.lookups, 1);
	ck_assert_uint_eq(c1.misses, 1);
	ck_assert_uint_ge(c1.names_read, 1);
	ck_assert_int_eq(cp_symbolize_user(x.s, x.prof, x.p, fn, false, NULL), loc);
	cp_symbolize_counts(x.s, &c0);
	ck_assert_uint_eq(c0.lookups, 2);
	ck_assert_uint_eq(c0.misses, 1);
	ck_assert_uint_eq(c0.names_read, c1.names_read);
	/* a child of this process maps the same binary */
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		for (int i = 0; i < 300; i++)
			usleep(100000);
		_exit(0);
	}
	child = cp_procs_get(x.t, (uint32_t)pid, true);
	ck_assert_ptr_nonnull(child);
	ck_assert_int_eq(cp_proc_read(child), 0);
	loc = cp_symbolize_user(x.s, x.prof, child, fn, false, NULL);
	cp_symbolize_counts(x.s, &c1);
	ck_assert_uint_eq(c1.lookups, 3);
	ck_assert_uint_eq(c1.misses, 1);
	ck_assert_int_eq(loc_frames(x.prof, loc, f, 8), 1);
	ck_assert_str_eq(f[0].name, "sym_other");
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	self_close(&x);
}
END_TEST

START_TEST(test_forget)
{
	/* forgotten: every address is looked up (and its name read) again,
	 * with the same answer */
	struct cp_symbolize_counts c0, c1;
	struct self x;
	struct fr f[8];
	uint64_t ret;
	int64_t loc;

	sym_target();
	ret = noted;
	self_open(&x, 0);
	ck_assert_int_gt(cp_symbolize_user(x.s, x.prof, x.p, ret, true, NULL), 0);
	ck_assert_int_gt(cp_symbolize_user(x.s, x.prof, x.p, (uint64_t)(uintptr_t)sym_other, false, NULL), 0);
	cp_symbolize_counts(x.s, &c0);
	cp_symbolize_forget(x.s);
	loc = cp_symbolize_user(x.s, x.prof, x.p, ret, true, NULL);
	ck_assert_int_gt(cp_symbolize_user(x.s, x.prof, x.p, (uint64_t)(uintptr_t)sym_other, false, NULL), 0);
	cp_symbolize_counts(x.s, &c1);
	ck_assert_uint_eq(c1.misses, c0.misses + 2);
	ck_assert_uint_eq(c1.lookups, c0.lookups + 2);
	ck_assert_uint_eq(c1.names_read, c0.names_read + 2);
	ck_assert_int_eq(loc_frames(x.prof, loc, f, 8), 1);
	ck_assert_str_eq(f[0].name, "sym_target");
	ck_assert_int_eq(f[0].line, call_line);
	/* forgetting twice, or with nothing cached, is harmless */
	cp_symbolize_forget(x.s);
	cp_symbolize_forget(x.s);
	loc = cp_symbolize_user(x.s, x.prof, x.p, ret, true, NULL);
	ck_assert_int_eq(loc_frames(x.prof, loc, f, 8), 1);
	ck_assert_str_eq(f[0].name, "sym_target");
	self_close(&x);
}
END_TEST

START_TEST(test_bounded_cache)
{
	/* a cache of 2 addresses is emptied when full: each answer is right,
	 * and the first address is looked up again after two others (in an
	 * unbounded one it is not) */
	const uint64_t pcs[3] = { (uint64_t)(uintptr_t)sym_other, (uint64_t)(uintptr_t)sym_third,
				  (uint64_t)(uintptr_t)sym_target };
	static const char *const names[3] = { "sym_other", "sym_third", "sym_target" };
	struct cp_symbolize_counts c0, c1;
	struct fr f[8];

	for (int bounded = 0; bounded < 2; bounded++) {
		struct self x;

		self_open(&x, bounded ? 2 : 0);
		for (int round = 0; round < 2; round++)
			for (int i = 0; i < 3; i++) {
				int64_t loc = cp_symbolize_user(x.s, x.prof, x.p, pcs[i], false, NULL);

				ck_assert_int_eq(loc_frames(x.prof, loc, f, 8), 1);
				ck_assert_str_eq(f[0].name, names[i]);
			}
		cp_symbolize_counts(x.s, &c0);
		ck_assert_int_gt(cp_symbolize_user(x.s, x.prof, x.p, pcs[0], false, NULL), 0);
		cp_symbolize_counts(x.s, &c1);
		if (bounded) {
			ck_assert_uint_eq(c0.misses, 6);
			ck_assert_uint_eq(c1.misses, 7);
		} else {
			ck_assert_uint_eq(c0.misses, 3);
			ck_assert_uint_eq(c1.misses, 3);
		}
		self_close(&x);
	}
}
END_TEST

int main(void)
{
	const TTest *const tests[] = {
		test_own_function, test_mapping, test_shared_libraries, test_inlined_and_stripped, test_kernel,
		test_no_mapping, test_counts_and_processes, test_forget, test_bounded_cache,
	};
	int rc;

	snprintf(scratch, sizeof(scratch), "/tmp/check_symbolize.XXXXXX");
	if (!mkdtemp(scratch)) {
		perror("mkdtemp");
		return EXIT_FAILURE;
	}
	rc = run_tests_timeout("symbolize", tests, sizeof(tests) / sizeof(tests[0]), 20);
	rm_rf(scratch);
	return rc;
}

/* SPDX-License-Identifier: MIT */
/* The user-stack unwinder on real stacks: this process copies its own
 * registers and stack, as the BPF sampler does, and the unwinder must name
 * every caller up to the test: through ordinary CFI, a signal frame (the
 * kernel's trampoline) and JIT code with no CFI (the frame pointer). */
#include <check.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "profile.h"
#include "util.h"
#include "sampling/budget.h"
#include "sampling/locmemo.h"
#include "sampling/modcache.h"
#include "sampling/proc.h"
#include "sampling/spans.h"
#include "sampling/symbolize.h"
#include "sampling/unwind.h"

#if defined(__x86_64__)

static struct cp_sample_rec *rec;

/* The end of the mapping holding addr (the stack's top). */
static uint64_t map_end(uint64_t addr)
{
	FILE *f = fopen("/proc/self/maps", "r");
	unsigned long long lo, hi;
	uint64_t end = 0;
	char line[512];

	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%llx-%llx", &lo, &hi) == 2 && addr >= lo && addr < hi)
			end = hi;
	fclose(f);
	return end;
}

/* Byte by byte, past ASan's redzones, as the kernel copies it. */
__attribute__((no_sanitize("address"), noinline)) static void copy_stack(uint8_t *dst, uint64_t sp, size_t n)
{
	const volatile uint8_t *src = (const volatile uint8_t *)(uintptr_t)sp;

	for (size_t i = 0; i < n; i++)
		dst[i] = src[i];
}

/* The registers and stack as the sampler sends them, here. */
__attribute__((noinline)) static void capture(void)
{
	uint64_t ip, sp, bp, bx, end;
	size_t n;

	/* rbx first: an output may be given rbx */
	__asm__ volatile("mov %%rbx, %3\n\tlea 0(%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2"
			 : "=&r"(ip), "=&r"(sp), "=&r"(bp), "=&r"(bx));
	memset(rec, 0, sizeof(*rec));
	rec->regs[CP_REG_IP] = ip;
	rec->regs[CP_REG_SP] = sp;
	rec->regs[CP_REG_BP] = bp;
	rec->regs[CP_REG_BX] = bx;
	rec->flags = CP_SAMPLE_USER;
	end = map_end(sp);
	n = end > sp && end - sp < CP_USTACK_MAX ? (size_t)(end - sp) : CP_USTACK_MAX;
	copy_stack(rec->ustack, sp, n);
	rec->ustack_len = (uint32_t)n;
	rec->pid = rec->tid = (uint32_t)getpid();
}

/* The frames (innermost first) s gives pc of process p, in prof: their
 * number; *frames is the caller's to free. */
static int pc_frames(struct cp_symbolizer *s, struct cp_profile *prof, struct cp_proc *p, uint64_t pc, bool is_return,
		     struct cp_frame **frames)
{
	int64_t loc = cp_symbolize_user(s, prof, p, pc, is_return, NULL), stack;
	uint32_t l = (uint32_t)loc;
	size_t cap = 0;
	int nf;

	*frames = NULL;
	ck_assert_int_gt(loc, 0);
	stack = cp_profile_stack(prof, &l, 1);
	ck_assert_int_gt(stack, 0);
	nf = cp_profile_frames(prof, (uint32_t)stack, frames, &cap);
	ck_assert_int_ge(nf, 0);
	return nf;
}

/* The unwound stack of rec, as names (frames joined by ';'), and how many
 * frames it has. */
static int unwound(char *out, size_t len)
{
	struct cp_procs *t = cp_procs_new();
	struct cp_proc *p = cp_procs_get(t, (uint32_t)getpid(), true);
	struct cp_unwinder *u = cp_unwinder_new(NULL);
	struct cp_symbolizer *s = cp_symbolizer_new(u, 0);
	struct cp_profile *prof = cp_profile_new();
	uint64_t pcs[CP_USER_FRAMES_MAX];
	size_t off = 0;
	int n;

	ck_assert_ptr_nonnull(p);
	ck_assert_ptr_nonnull(s);
	ck_assert_ptr_nonnull(prof);
	ck_assert_int_eq(cp_proc_read(p), 0);
	n = cp_unwind(u, p, rec, pcs, CP_USER_FRAMES_MAX);
	out[0] = 0;
	for (int i = 0; i < n; i++) {
		struct cp_frame *frames;
		char buf[256];
		int nf = pc_frames(s, prof, p, pcs[i], i > 0, &frames);

		for (int k = nf - 1; k >= 0; k--) {
			const char *name = cp_frame_name(prof, &frames[k], buf, sizeof(buf));
			int w = snprintf(out + off, len - off, "%s%s", off ? ";" : "", name);

			if (w > 0 && (size_t)w < len - off)
				off += (size_t)w;
		}
		free(frames);
	}
	cp_profile_free(prof);
	cp_symbolizer_free(s);
	cp_unwinder_free(u);
	cp_procs_free(t, NULL);
	return n;
}

/* a;b;c appear in this order in the stack text (leaf first) */
static void assert_order(const char *stack, const char *const *names, size_t n)
{
	const char *at = stack;

	for (size_t i = 0; i < n; i++) {
		const char *hit = strstr(at, names[i]);

		ck_assert_msg(hit != NULL, "%s is not where it belongs in %s", names[i], stack);
		at = hit + strlen(names[i]);
	}
}

/* run() captures a stack, which must unwind to at least min frames, with
 * want's names in that order (up to this function: its caller, the test,
 * calls it last, so may have jumped to it) */
__attribute__((noinline)) static void check_unwinds(void (*run)(void), const char *const *want, size_t n, int min)
{
	char stack[4096];

	rec = calloc(1, sizeof(*rec));
	ck_assert_ptr_nonnull(rec);
	run();
	ck_assert_int_ge(unwound(stack, sizeof(stack)), min);
	assert_order(stack, want, n);
	free(rec);
}

/* no tail call, and no two functions alike (they would be merged) */
static volatile int visits;
#define KEEP() (visits += __LINE__)

__attribute__((noinline)) static void cfi_level2(void)
{
	capture();
	KEEP();
}

__attribute__((noinline)) static void cfi_level1(void)
{
	cfi_level2();
	KEEP();
}

START_TEST(test_unwind_cfi)
{
	static const char *const want[] = { "capture", "cfi_level2", "cfi_level1", "check_unwinds" };

	check_unwinds(cfi_level1, want, 4, 4);
}
END_TEST

/* A frame whose CFA is rbx + 16, as in glibc's _dl_runtime_resolve: rsp is
 * aligned down to 64 bytes, so neither rsp nor rbp (untouched) finds the
 * return address.  rbx_frame(fn) calls fn. */
void rbx_frame(void (*fn)(void));
__asm__(".text\n"
	".globl rbx_frame\n"
	".type rbx_frame, @function\n"
	"rbx_frame:\n"
	".cfi_startproc\n"
	"push %rbx\n"
	".cfi_adjust_cfa_offset 8\n"
	".cfi_rel_offset %rbx, 0\n"
	"mov %rsp, %rbx\n"
	".cfi_def_cfa_register %rbx\n"
	"and $-64, %rsp\n"
	"sub $64, %rsp\n"
	"call *%rdi\n"
	"mov %rbx, %rsp\n"
	".cfi_def_cfa_register %rsp\n"
	"pop %rbx\n"
	".cfi_adjust_cfa_offset -8\n"
	".cfi_restore %rbx\n"
	"ret\n"
	".cfi_endproc\n"
	".size rbx_frame, .-rbx_frame\n");

__attribute__((noinline)) static void rbx_callee(void)
{
	capture();
	KEEP();
}

__attribute__((noinline)) static void rbx_level1(void)
{
	rbx_frame(rbx_callee);
	KEEP();
}

START_TEST(test_unwind_cfa_rbx)
{
	static const char *const want[] = { "capture", "rbx_callee", "rbx_frame", "rbx_level1", "check_unwinds" };

	check_unwinds(rbx_level1, want, 5, 5);
}
END_TEST

static void sig_handler(int sig)
{
	(void)sig;
	capture();
	KEEP();
}

__attribute__((noinline)) static void sig_level1(void)
{
	raise(SIGUSR1);
	KEEP();
}

START_TEST(test_unwind_signal)
{
	/* the handler's caller is the kernel's signal frame; beyond it, the
	 * interrupted code and its callers */
	static const char *const want[] = { "capture", "sig_handler", "sig_level1", "check_unwinds" };
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = sig_handler;
	ck_assert_int_eq(sigaction(SIGUSR1, &sa, NULL), 0);
	check_unwinds(sig_level1, want, 4, 5);
}
END_TEST

__attribute__((noinline)) static void jit_callee(void)
{
	capture();
	KEEP();
}

__attribute__((noinline)) static void jit_level1(void (*code)(void (*)(void)))
{
	code(jit_callee);
	KEEP();
}

START_TEST(test_unwind_jit)
{
	/* code with no CFI in anonymous memory, as a JIT makes it: push rbp;
	 * mov rbp, rsp; call *rdi; pop rbp; ret */
	static const uint8_t jit[] = { 0x55, 0x48, 0x89, 0xe5, 0xff, 0xd7, 0x5d, 0xc3 };
	static const char *const want[] = { "capture", "jit_callee", "anon", "jit_level1", "test_unwind_jit" };
	void *code = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char stack[4096];

	ck_assert_ptr_ne(code, MAP_FAILED);
	memcpy(code, jit, sizeof(jit));
	rec = calloc(1, sizeof(*rec));
	ck_assert_ptr_nonnull(rec);
	jit_level1((void (*)(void (*)(void)))code);
	ck_assert_int_ge(unwound(stack, sizeof(stack)), 5);
	assert_order(stack, want, 5);
	free(rec);
	munmap(code, 4096);
}
END_TEST

START_TEST(test_unwind_no_stack)
{
	/* no copied stack: the interrupted address alone; no user part: nothing */
	struct cp_procs *t = cp_procs_new();
	struct cp_proc *p = cp_procs_get(t, (uint32_t)getpid(), true);
	struct cp_unwinder *u = cp_unwinder_new(NULL);
	uint64_t pcs[8];

	rec = calloc(1, sizeof(*rec));
	ck_assert_ptr_nonnull(rec);
	ck_assert_ptr_nonnull(u);
	rec->flags = CP_SAMPLE_USER;
	rec->regs[CP_REG_IP] = (uint64_t)(uintptr_t)jit_callee;
	ck_assert_int_eq(cp_unwind(u, p, rec, pcs, 8), 1);
	ck_assert_uint_eq(pcs[0], (uint64_t)(uintptr_t)jit_callee);
	rec->flags = 0;
	ck_assert_int_eq(cp_unwind(u, p, rec, pcs, 8), 0);
	/* garbage above the stack pointer ends the stack, never loops */
	rec->flags = CP_SAMPLE_USER;
	rec->regs[CP_REG_SP] = 0x7ff000000000ull;
	rec->regs[CP_REG_BP] = 0x7ff000000000ull;
	memset(rec->ustack, 0, 64);
	rec->ustack_len = 64;
	ck_assert_int_le(cp_unwind(u, p, rec, pcs, 8), 8);
	cp_unwinder_free(u);
	cp_procs_free(t, NULL);
	free(rec);
}
END_TEST

/* The name the symbolizer gives addr of this process (a function's own
 * address, looked up as is). */
static void sym_of(struct cp_symbolizer *s, struct cp_proc *p, uint64_t addr, char *buf, size_t len)
{
	struct cp_profile *prof = cp_profile_new();
	struct cp_frame *frames;

	ck_assert_int_ge(pc_frames(s, prof, p, addr, false, &frames), 1);
	snprintf(buf, len, "%s", cp_frame_name(prof, &frames[0], buf, len));
	free(frames);
	cp_profile_free(prof);
}

/* This process as the recorder sees it: its mappings read from /proc, and
 * an unwinder and a symbolizer over them. */
struct self {
	struct cp_procs *t;
	struct cp_proc *p;
	struct cp_unwinder *u;
	struct cp_symbolizer *s;
};

static void self_open(struct self *x)
{
	x->t = cp_procs_new();
	x->p = cp_procs_get(x->t, (uint32_t)getpid(), true);
	x->u = cp_unwinder_new(NULL);
	x->s = cp_symbolizer_new(x->u, 0);
	ck_assert_ptr_nonnull(x->s);
	ck_assert_int_eq(cp_proc_read(x->p), 0);
}

static void self_close(struct self *x)
{
	cp_symbolizer_free(x->s);
	cp_unwinder_free(x->u);
	cp_procs_free(x->t, NULL);
}

/* A name whose end is the last byte of the symbolizer's first read of a
 * name (255 bytes), one a byte longer and a long one: read from this
 * binary's file, whole. */
#define NAME50 abcdefghij_abcdefghij_abcdefghij_abcdefghij_abcdef
#define CAT(a, b) a##b
#define XCAT(a, b) CAT(a, b)
#define NAME250 XCAT(XCAT(XCAT(XCAT(NAME50, NAME50), NAME50), NAME50), NAME50)
#define STR(a) #a
#define XSTR(a) STR(a)
__attribute__((noinline, used)) int XCAT(NAME250, _fnx)(int x)
{
	return x + 1;
}
__attribute__((noinline, used)) int XCAT(NAME250, _fn_x)(int x)
{
	return x + 3;
}
__attribute__((noinline, used)) int XCAT(XCAT(NAME250, NAME250), _long_fn)(int x)
{
	return x + 2;
}

START_TEST(test_long_names)
{
	struct self x;
	char buf[1024];
	const char *n254 = XSTR(XCAT(NAME250, _fnx)), *n255 = XSTR(XCAT(NAME250, _fn_x));
	const char *n508 = XSTR(XCAT(XCAT(NAME250, NAME250), _long_fn));

	ck_assert_uint_eq(strlen(n254), 254);
	ck_assert_uint_eq(strlen(n255), 255);
	ck_assert_uint_eq(strlen(n508), 508);
	self_open(&x);
	sym_of(x.s, x.p, (uint64_t)(uintptr_t)XCAT(NAME250, _fnx), buf, sizeof(buf));
	ck_assert_str_eq(buf, n254);
	sym_of(x.s, x.p, (uint64_t)(uintptr_t)XCAT(NAME250, _fn_x), buf, sizeof(buf));
	ck_assert_str_eq(buf, n255);
	sym_of(x.s, x.p, (uint64_t)(uintptr_t)XCAT(XCAT(NAME250, NAME250), _long_fn), buf, sizeof(buf));
	ck_assert_str_eq(buf, n508);
	self_close(&x);
}
END_TEST

/* Symbols that share an address: global ones named with and without a
 * clone's '.' suffix (declared before and after the plain name, so that the
 * symbol table has a dotted one first too), and a weak one. */
__attribute__((noinline, used)) int tie_one(int x)
{
	return x * 3 + 1;
}
__attribute__((noinline, used)) int tie_two(int x)
{
	return x * 5 + 2;
}
extern int tie_one_clone(int) __asm__("tie_one.clone.0") __attribute__((alias("tie_one")));
extern int tie_one_weak(int) __attribute__((weak, alias("tie_one")));
extern int tie_two_part(int) __asm__("tie_two.part.1") __attribute__((alias("tie_two")));
extern int tie_two_cold(int) __asm__("tie_two.cold") __attribute__((alias("tie_two")));
extern int tie_two_zz(int) __attribute__((alias("tie_two")));

START_TEST(test_symbol_ties)
{
	struct self x;
	char buf[256];

	self_open(&x);
	/* the plain global name over the clones' (whose names are read, with
	 * pread, only for such ties) and over a weak one */
	sym_of(x.s, x.p, (uint64_t)(uintptr_t)tie_one, buf, sizeof(buf));
	ck_assert_str_eq(buf, "tie_one");
	/* two plain global names: either, but not a clone's */
	sym_of(x.s, x.p, (uint64_t)(uintptr_t)tie_two, buf, sizeof(buf));
	ck_assert_msg(!strcmp(buf, "tie_two") || !strcmp(buf, "tie_two_zz"), "named %s", buf);
	self_close(&x);
}
END_TEST

/* A function named in C++'s mangling (demangled when named) */
__attribute__((noinline, used)) int mangled_fn(int x) __asm__("_ZN5cprof7manglerEi");
__attribute__((noinline, used)) int mangled_fn(int x)
{
	return x * 7 + 3;
}

/* The function of location loc's outermost line */
static void loc_name(const struct cp_profile *prof, int64_t loc, char *buf, size_t len)
{
	const struct cp_location *l = &prof->locations[loc - 1];

	ck_assert_uint_ge(l->nlines, 1);
	snprintf(buf, len, "%s",
		 cp_profile_string(prof, prof->functions[prof->lines[l->line_off + l->nlines - 1].function - 1].name));
}

START_TEST(test_symbol_names_once)
{
	/* in a binary with DWARF every address is looked up (its line may
	 * differ), but a function's name is read and demangled once */
	struct cp_profile *prof = cp_profile_new();
	struct cp_symbolize_counts c0, c1;
	uint64_t f = (uint64_t)(uintptr_t)mangled_fn;
	char a[256], b[256];
	int64_t l1, l2;
	struct self x;

	self_open(&x);
	cp_symbolize_counts(x.s, &c0);
	l1 = cp_symbolize_user(x.s, prof, x.p, f, false, NULL);
	l2 = cp_symbolize_user(x.s, prof, x.p, f + 1, false, NULL);
	ck_assert_int_gt(l1, 0);
	ck_assert_int_gt(l2, 0);
	ck_assert_int_ne(l1, l2);
	cp_symbolize_counts(x.s, &c1);
	/* (each address its own lookup: this test is built with -g, as the
	 * other DWARF tests here need) */
	ck_assert_msg(c1.misses - c0.misses == 2, "2 lookups, not %llu: the test binary needs its DWARF (-g)",
		      (unsigned long long)(c1.misses - c0.misses));
	ck_assert_uint_eq(c1.names_read - c0.names_read, 1);
	ck_assert_uint_eq(c1.demangled - c0.demangled, 1);
	loc_name(prof, l1, a, sizeof(a));
	loc_name(prof, l2, b, sizeof(b));
	ck_assert_str_eq(a, "cprof::mangler(int)");
	ck_assert_str_eq(b, a);
	/* the cache starts over: read again */
	cp_symbolize_forget(x.s);
	ck_assert_int_gt(cp_symbolize_user(x.s, prof, x.p, f + 1, false, NULL), 0);
	cp_symbolize_counts(x.s, &c0);
	ck_assert_uint_eq(c0.names_read - c1.names_read, 1);
	ck_assert_uint_eq(c0.demangled - c1.demangled, 1);
	self_close(&x);
	cp_profile_free(prof);
}
END_TEST

/* The symbolizer's memo of (binary, file offset, kind) in a profile: a
 * second lookup is a hit with the same location; a return address and
 * another profile are other keys; forgetting the cache clears it. */
START_TEST(test_symbolize_memo)
{
	struct cp_locmemo *m = cp_locmemo_new(10);
	struct cp_profile *a = cp_profile_new(), *b = cp_profile_new();
	uint64_t pc = (uint64_t)(uintptr_t)tie_one, probes, hits;
	int64_t l1, l2, l3, l4;
	struct self x;
	char buf[256];

	ck_assert_ptr_nonnull(m);
	self_open(&x);
	cp_symbolizer_set_memo(x.s, m);
	/* (a's first location: pc's are not the first) */
	ck_assert_int_eq(cp_symbolize_user(x.s, a, x.p, (uint64_t)(uintptr_t)tie_two, false, NULL), 1);
	l1 = cp_symbolize_user(x.s, a, x.p, pc + 1, false, NULL);
	l2 = cp_symbolize_user(x.s, a, x.p, pc + 1, false, NULL);
	cp_locmemo_counts(m, &probes, &hits);
	ck_assert_int_eq(l1, 2);
	ck_assert_int_eq(l2, l1);
	ck_assert_uint_eq(probes, 3);
	ck_assert_uint_eq(hits, 1);
	/* pc + 1 as a return address: the call before it, at pc */
	l3 = cp_symbolize_user(x.s, a, x.p, pc + 1, true, NULL);
	ck_assert_int_gt(l3, 0);
	ck_assert_int_ne(l3, l1);
	ck_assert_uint_eq(a->locations[l3 - 1].address + 1, a->locations[l1 - 1].address);
	/* another profile: its own location (its first) */
	l4 = cp_symbolize_user(x.s, b, x.p, pc + 1, false, NULL);
	ck_assert_int_eq(l4, 1);
	ck_assert_uint_eq(b->nlocations, 1);
	cp_locmemo_counts(m, &probes, &hits);
	ck_assert_uint_eq(hits, 1);
	cp_symbolize_forget(x.s);
	ck_assert_int_eq(cp_symbolize_user(x.s, a, x.p, pc + 1, false, NULL), l1);
	cp_locmemo_counts(m, &probes, &hits);
	ck_assert_uint_eq(hits, 1);
	sym_of(x.s, x.p, pc + 1, buf, sizeof(buf));
	ck_assert_str_eq(buf, "tie_one");
	self_close(&x);
	cp_profile_free(a);
	cp_profile_free(b);
	cp_locmemo_free(m);
}
END_TEST

/* Every frame of addr's location in s: function, file and line, joined. */
static void frames_of(struct cp_symbolizer *s, struct cp_proc *p, uint64_t addr, char *out, size_t len)
{
	struct cp_profile *prof = cp_profile_new();
	struct cp_frame *frames;
	size_t off = 0;
	int nf = pc_frames(s, prof, p, addr, false, &frames);

	out[0] = 0;
	for (int k = 0; k < nf; k++) {
		char buf[512];
		int w = snprintf(out + off, len - off, "%s@%s:%lld;", cp_frame_name(prof, &frames[k], buf, sizeof(buf)),
				 cp_profile_string(prof, frames[k].filename), (long long)frames[k].line);

		if (w > 0 && (size_t)w < len - off)
			off += (size_t)w;
	}
	free(frames);
	cp_profile_free(prof);
}

/* The executable mapping of this process whose path holds name. */
static const struct cp_map *mapping_of(const struct cp_proc *p, const char *name)
{
	for (size_t i = 0; i < p->nmaps; i++)
		if (strstr(p->maps[i].path, name))
			return &p->maps[i];
	return NULL;
}

/* A separate debug file of m's binary is installed (a -dbg or dbgsym
 * package): it has DWARF then. */
static bool has_debug_file(struct cp_map *m, const struct cp_proc *p)
{
	const uint8_t *id;
	char path[128];
	size_t len, off;

	if (!(id = cp_map_build_id(m, p, &len)) || len < 2)
		return false;
	off = (size_t)snprintf(path, sizeof(path), "/usr/lib/debug/.build-id/%02x/", id[0]);
	for (size_t i = 1; i < len && off + 3 < sizeof(path); i++)
		off += (size_t)snprintf(path + off, sizeof(path) - off, "%02x", id[i]);
	snprintf(path + off, sizeof(path) - off, ".debug");
	return access(path, F_OK) == 0;
}

/* The address of the k-th of n steps of 5 bytes from `from`, in order 0
 * (rising), 1 (falling) or 2 (scattered: 7919 is prime, n a power of 2). */
static uint64_t step_pc(uint64_t from, uint64_t k, uint64_t n, int order)
{
	return from + 5 * (order == 0 ? k : order == 1 ? n - 1 - k : (k * 7919) % n);
}

START_TEST(test_spans_answer_as_lookups)
{
	/* Every 5th byte of 20 KiB of zlib (no DWARF: a name holds over its
	 * function; epilogues whose CFI rows follow a DW_CFA_restore_state) and of
	 * this binary (DWARF: lines differ within a function), in rising, falling
	 * and scattered order, looked up by an unwinder and a symbolizer that
	 * keep what they found for a CFI row or a function, and by ones that
	 * forget before each address: the same unwound stack and the same frames;
	 * in rising order, the CFI read and libdw asked far less often */
	const uint64_t n = 4096;
	const struct cp_map *z;
	bool z_dwarf;
	uint64_t from[2], pcs_w[8], pcs_c[8];
	char a[4096], b[4096];
	struct self cold;

	/* no debug file fetched for zlib (libdw's own lookup would ask these) */
	unsetenv("DEBUGINFOD_URLS");
	rec = calloc(1, sizeof(*rec));
	ck_assert_ptr_nonnull(rec);
	self_open(&cold);
	z = mapping_of(cold.p, "/libz.so");
	ck_assert_ptr_nonnull(z);
	/* (with zlib's debug file installed its names are per address too, as
	 * they are checked to be; only fewer lookups are not to be expected) */
	z_dwarf = has_debug_file((struct cp_map *)z, cold.p);
	ck_assert_uint_ge(z->end - z->start, 5 * n);
	from[0] = z->start;
	from[1] = (uint64_t)(uintptr_t)check_unwinds & ~0xfffull;
	/* a stack of words that point nowhere: what each rule reads shows */
	for (size_t i = 0; i < 4096 / 8; i++) {
		uint64_t w = 0x10000 + 8 * i;

		memcpy(rec->ustack + 8 * i, &w, 8);
	}
	rec->ustack_len = 4096;
	rec->flags = CP_SAMPLE_USER;
	rec->regs[CP_REG_SP] = 0x7ff000000000ull;
	rec->regs[CP_REG_BP] = 0x7ff000000100ull;
	rec->regs[CP_REG_BX] = 0x7ff000000200ull;
	for (int order = 0; order < 3; order++) {
		struct cp_unwind_counts uw, uc0, uc;
		struct self warm;

		self_open(&warm);
		cp_unwind_counts(cold.u, &uc0);
		for (int r = 0; r < 2; r++) {
			struct cp_symbolize_counts sw0, sc0, sw, sc;

			cp_symbolize_counts(warm.s, &sw0);
			cp_symbolize_counts(cold.s, &sc0);
			for (uint64_t k = 0; k < n; k++) {
				uint64_t pc = step_pc(from[r], k, n, order);
				int nw, nc;

				rec->regs[CP_REG_IP] = pc;
				nw = cp_unwind(warm.u, warm.p, rec, pcs_w, 8);
				cp_unwind_forget_rules(cold.u);
				nc = cp_unwind(cold.u, cold.p, rec, pcs_c, 8);
				ck_assert_int_eq(nw, nc);
				ck_assert_msg(!memcmp(pcs_w, pcs_c, (size_t)nw * sizeof(*pcs_w)),
					      "unwound differently at %#llx (order %d)", (unsigned long long)pc, order);
				frames_of(warm.s, warm.p, pc, a, sizeof(a));
				cp_symbolize_forget(cold.s);
				frames_of(cold.s, cold.p, pc, b, sizeof(b));
				ck_assert_str_eq(a, b);
			}
			cp_symbolize_counts(warm.s, &sw);
			cp_symbolize_counts(cold.s, &sc);
			if (r == 0 && order != 1 && !z_dwarf) /* zlib's functions: many found in a span */
				ck_assert_uint_lt((sw.misses - sw0.misses) * 4, (sc.misses - sc0.misses) * 3);
		}
		cp_unwind_counts(warm.u, &uw);
		cp_unwind_counts(cold.u, &uc);
		if (order == 0)
			ck_assert_uint_lt(uw.rules * 4, uc.rules - uc0.rules);
		self_close(&warm);
	}
	self_close(&cold);
	free(rec);
}
END_TEST

/* Code without DWARF in this binary (built with it): a function with a
 * symbol and a size, then bytes no symbol names, in a section of their own
 * that no compilation unit's ranges cover, as code built without -g lies
 * beside code built with it (node's V8 beside its C libraries). */
__asm__(".pushsection .text.cp_nodwarf,\"ax\",@progbits\n"
	".globl cp_nodwarf_fn\n"
	".type cp_nodwarf_fn,@function\n"
	"cp_nodwarf_fn:\n"
	".fill 255,1,0x90\n"
	"ret\n"
	".size cp_nodwarf_fn,.-cp_nodwarf_fn\n"
	".fill 512,1,0xcc\n"
	".popsection\n");
void cp_nodwarf_fn(void);

START_TEST(test_no_unit_spans)
{
	/* In a function no unit covers, its name holds over its symbol; past
	 * it, no name over the gap to the next symbol: one lookup each.  Every
	 * byte from 1 KiB before to 1 KiB after (units with DWARF around them)
	 * answers as a symbolizer that forgets before each address does. */
	uint64_t fn = (uint64_t)(uintptr_t)cp_nodwarf_fn, gap = fn + 256;
	struct cp_symbolize_counts c0, c1;
	struct self warm, cold;
	char a[4096], b[4096];

	self_open(&warm);
	self_open(&cold);
	cp_symbolize_counts(warm.s, &c0);
	sym_of(warm.s, warm.p, fn + 3, a, sizeof(a));
	ck_assert_str_eq(a, "cp_nodwarf_fn");
	sym_of(warm.s, warm.p, fn + 200, a, sizeof(a));
	ck_assert_str_eq(a, "cp_nodwarf_fn");
	cp_symbolize_counts(warm.s, &c1);
	ck_assert_uint_eq(c1.misses - c0.misses, 1);
	frames_of(warm.s, warm.p, gap + 10, a, sizeof(a));
	frames_of(warm.s, warm.p, gap + 400, b, sizeof(b));
	ck_assert_ptr_null(strstr(a, "cp_nodwarf_fn"));
	ck_assert_ptr_null(strstr(b, "cp_nodwarf_fn"));
	ck_assert_str_ne(a, b); /* (each its own address) */
	cp_symbolize_counts(warm.s, &c0);
	ck_assert_uint_eq(c0.misses - c1.misses, 1);
	for (uint64_t pc = fn - 1024; pc < gap + 512 + 1024; pc++) {
		frames_of(warm.s, warm.p, pc, a, sizeof(a));
		cp_symbolize_forget(cold.s);
		frames_of(cold.s, cold.p, pc, b, sizeof(b));
		ck_assert_msg(!strcmp(a, b), "at %+lld from cp_nodwarf_fn: %s, not %s", (long long)(pc - fn), a, b);
	}
	self_close(&warm);
	self_close(&cold);
}
END_TEST

START_TEST(test_mod_units)
{
	/* cp_nodwarf_fn lies in a gap between this binary's units: where
	 * libdw has no answer, cut to that gap (whose ends are units' code, or
	 * its segment's); check_unwinds lies in a unit */
	struct cp_modcache *mc = cp_modcache_new(8, NULL, false, -1);
	uint64_t fn = (uint64_t)(uintptr_t)cp_nodwarf_fn, own = (uint64_t)(uintptr_t)check_unwinds;
	uint64_t a, lo = 0, hi = UINT64_MAX, l2, h2, s = 0, e = 0;
	const struct cp_map *m;
	struct cp_mod *sm;
	struct self x;

	self_open(&x);
	ck_assert_ptr_nonnull(mc);
	m = cp_proc_find_map(x.p, fn);
	ck_assert_ptr_nonnull(m);
	sm = cp_modcache_get_fd(mc, "self", "/proc/self/exe", open("/proc/self/exe", O_RDONLY | O_CLOEXEC));
	ck_assert_ptr_nonnull(sm);
	a = cp_mod_addr(sm, fn - m->start + m->pgoff);
	ck_assert_uint_ne(a, 0);
	for (int i = 0; i < sm->nseg; i++)
		if (sm->seg[i].vaddr + sm->bias <= a && a - sm->seg[i].vaddr - sm->bias < sm->seg[i].filesz)
			s = sm->seg[i].vaddr + sm->bias, e = s + sm->seg[i].filesz;
	ck_assert_uint_ne(e, 0);
	ck_assert(!cp_mod_in_unit(sm, a, &lo, &hi));
	ck_assert(lo <= a && a < hi);
	ck_assert(s <= lo && hi <= e);
	/* each end: a unit's, or the segment's, and one of them a unit's */
	l2 = 0, h2 = UINT64_MAX;
	ck_assert(lo == s || cp_mod_in_unit(sm, lo - 1, &l2, &h2));
	ck_assert(hi == e || cp_mod_in_unit(sm, hi, &l2, &h2));
	ck_assert(lo > s || hi < e);
	/* in a unit (check_unwinds): nothing is cut */
	l2 = 5, h2 = 6;
	ck_assert(cp_mod_in_unit(sm, cp_mod_addr(sm, own - m->start + m->pgoff), &l2, &h2));
	ck_assert_uint_eq(l2, 5);
	ck_assert_uint_eq(h2, 6);
	cp_modcache_free(mc);
	self_close(&x);
}
END_TEST

/* A call inlined into a function of this unit (at -O0 too) */
static volatile int inl_sink;
static inline __attribute__((always_inline)) void inl_inner(int x)
{
	inl_sink = inl_sink * 7 + x;
	inl_sink = inl_sink ^ (x << 3);
}
__attribute__((noinline, used)) void inl_outer(int x)
{
	inl_inner(x);
	inl_sink = inl_sink + 1;
}

/* Some address of inl_outer where inl_inner's frame is found (0: none). */
static uint64_t inlined_pc(struct self *x)
{
	uint64_t fn = (uint64_t)(uintptr_t)inl_outer;
	char a[4096];

	for (uint64_t pc = fn; pc < fn + 256; pc++) {
		frames_of(x->s, x->p, pc, a, sizeof(a));
		if (!strncmp(a, "inl_inner@", 10))
			return strstr(a, ";inl_outer@") ? pc : 0;
	}
	return 0;
}

START_TEST(test_units_indexed)
{
	/* addresses of three units (util.c, spans.c and this one), asked in
	 * two orders: each unit's scopes are read once and found again (an
	 * inlined call's frame among them), the units kept in order */
	const uint64_t pcs[3] = { (uint64_t)(uintptr_t)cp_ranges_merge + 4, (uint64_t)(uintptr_t)cp_spans_add + 4,
				  (uint64_t)(uintptr_t)inl_outer };
	struct self x;
	struct cp_mod *sm;
	const struct cp_map *m;
	char key[64], a[4096];
	uint64_t inl;

	self_open(&x);
	for (int order = 0; order < 2; order++)
		for (int k = 0; k < 3; k++) {
			frames_of(x.s, x.p, pcs[order ? 2 - k : k], a, sizeof(a));
			ck_assert_ptr_nonnull(strchr(a, '@'));
		}
	inl = inlined_pc(&x);
	ck_assert_msg(inl != 0, "no frame of inl_inner in inl_outer: the test binary needs its DWARF (-g)");
	m = cp_proc_find_map(x.p, pcs[2]);
	ck_assert_ptr_nonnull(m);
	ck_assert_ptr_nonnull(cp_map_key((struct cp_map *)m, x.p, key, sizeof(key)));
	sm = cp_modcache_get_fd(cp_unwind_modcache(x.u), key, "/proc/self/exe", open("/proc/self/exe", O_RDONLY | O_CLOEXEC));
	ck_assert_ptr_nonnull(sm);
	ck_assert_uint_eq(sm->ncus, 3);
	for (size_t i = 1; i < sm->ncus; i++)
		ck_assert_uint_lt(sm->cus[i - 1].off, sm->cus[i].off);
	/* forgotten by the symbolizer, found by the binary's session */
	cp_symbolize_forget(x.s);
	ck_assert_uint_eq(inlined_pc(&x), inl);
	ck_assert_uint_eq(sm->ncus, 3);
	self_close(&x);
}
END_TEST

START_TEST(test_modcache_keys)
{
	/* sessions are found by key, also after others were closed (their
	 * places in the cache move) and past the index's first growth */
	struct cp_modcache *c = cp_modcache_new(128, NULL, false, -1);
	struct cp_mod *m[100];
	char key[32];

	ck_assert_ptr_nonnull(c);
	for (int i = 0; i < 100; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		m[i] = cp_modcache_get_fd(c, key, "/proc/self/exe", open("/proc/self/exe", O_RDONLY | O_CLOEXEC));
		ck_assert_ptr_nonnull(m[i]);
		ck_assert_str_eq(m[i]->key, key);
	}
	ck_assert_uint_eq(cp_modcache_count(c), 100);
	for (int i = 0; i < 100; i++) { /* the same sessions, none opened again */
		snprintf(key, sizeof(key), "k%d", i);
		ck_assert_ptr_eq(cp_modcache_get_fd(c, key, "/proc/self/exe", open("/proc/self/exe", O_RDONLY)), m[i]);
	}
	ck_assert_uint_eq(cp_modcache_count(c), 100);
	/* the 40 least recently used go (k0..k39, used in that order): the
	 * others are found where they moved, the closed ones opened anew */
	cp_modcache_evict(c, 60);
	ck_assert_uint_eq(cp_modcache_count(c), 60);
	for (int i = 0; i < 40; i++) { /* new ones take the places left */
		snprintf(key, sizeof(key), "n%d", i);
		ck_assert_ptr_nonnull(cp_modcache_get_fd(c, key, "/proc/self/exe", open("/proc/self/exe", O_RDONLY)));
	}
	ck_assert_uint_eq(cp_modcache_count(c), 100);
	for (int i = 99; i >= 40; i--) {
		snprintf(key, sizeof(key), "k%d", i);
		ck_assert_ptr_eq(cp_modcache_get_fd(c, key, "/proc/self/exe", open("/proc/self/exe", O_RDONLY)), m[i]);
	}
	ck_assert_uint_eq(cp_modcache_count(c), 100);
	cp_modcache_evict(c, 99); /* the least recently used: n0 */
	m[7] = cp_modcache_get_fd(c, "k7", "/proc/self/exe", open("/proc/self/exe", O_RDONLY));
	ck_assert_ptr_nonnull(m[7]);
	ck_assert_str_eq(m[7]->key, "k7");
	ck_assert_uint_eq(cp_modcache_count(c), 100);
	ck_assert_ptr_eq(cp_modcache_get_fd(c, "k7", "/proc/self/exe", open("/proc/self/exe", O_RDONLY)), m[7]);
	ck_assert_ptr_eq(cp_modcache_get_fd(c, "k99", "/proc/self/exe", open("/proc/self/exe", O_RDONLY)), m[99]);
	ck_assert_uint_eq(cp_modcache_count(c), 100);
	cp_modcache_free(c);
}
END_TEST

START_TEST(test_budget_evicts_and_reads_again)
{
	/* a budget far below what the process uses: every cache is cut, and
	 * what was looked up before is found again the same */
	struct self x;
	struct cp_budget b;
	size_t nmods;
	uint64_t ev;
	char before[256], libc_before[256], after[256], libc_after[256];
	uint64_t fn = (uint64_t)(uintptr_t)jit_callee, lc = (uint64_t)(uintptr_t)getpid;

	self_open(&x);
	ck_assert_uint_gt(cp_rss_bytes(), 1u << 20);
	sym_of(x.s, x.p, fn, before, sizeof(before));
	sym_of(x.s, x.p, lc, libc_before, sizeof(libc_before));
	ck_assert_str_eq(before, "jit_callee");
	ck_assert_uint_ge(cp_modcache_count(cp_unwind_modcache(x.u)), 2);
	cp_budget_init(&b, 1u << 20, x.u, x.s, "test");
	/* what was just used is the working set: it stays, said once, but for
	 * the binaries whose DWARF was read (this test's, built with -g): their
	 * sessions hold the line tables libdw decoded */
	nmods = cp_modcache_count(cp_unwind_modcache(x.u));
	cp_budget_keep(&b);
	ck_assert_uint_lt(cp_modcache_count(cp_unwind_modcache(x.u)), nmods);
	ck_assert_uint_gt(b.floor, 1u << 20);
	ck_assert(b.warned);
	/* read again, they stay for 10 s */
	sym_of(x.s, x.p, fn, after, sizeof(after));
	ck_assert_str_eq(after, before);
	nmods = cp_modcache_count(cp_unwind_modcache(x.u));
	b.released_ns = 0;
	b.floor = 0;
	cp_budget_keep(&b);
	ck_assert_uint_eq(cp_modcache_count(cp_unwind_modcache(x.u)), nmods);
	/* once idle, it goes (and then the rules and addresses) */
	b.working_set_ns = 0;
	b.released_ns = 0;
	b.floor = 0;
	ev = b.evictions;
	cp_budget_keep(&b);
	ck_assert_uint_gt(b.evictions, ev);
	ck_assert_uint_le(cp_modcache_count(cp_unwind_modcache(x.u)), 2);
	cp_modcache_evict(cp_unwind_modcache(x.u), 0);
	ck_assert_uint_eq(cp_modcache_count(cp_unwind_modcache(x.u)), 0);
	sym_of(x.s, x.p, fn, after, sizeof(after));
	sym_of(x.s, x.p, lc, libc_after, sizeof(libc_after));
	ck_assert_str_eq(after, before);
	ck_assert_str_eq(libc_after, libc_before);
	self_close(&x);
}
END_TEST

START_TEST(test_budget_lets_pages_go_first)
{
	/* close under the limit, the budget gives back file pages (once a
	 * second) and evicts nothing; far under it, does nothing */
	struct self x;
	struct cp_budget b;
	char buf[256];
	size_t nmods;
	uint64_t rss;

	self_open(&x);
	sym_of(x.s, x.p, (uint64_t)(uintptr_t)jit_callee, buf, sizeof(buf));
	sym_of(x.s, x.p, (uint64_t)(uintptr_t)getpid, buf, sizeof(buf));
	nmods = cp_modcache_count(cp_unwind_modcache(x.u));
	rss = cp_rss_bytes();
	cp_budget_init(&b, rss * 2, x.u, x.s, "test");
	cp_budget_keep(&b);
	ck_assert_int_eq(b.paged_ns, INT64_MIN / 2);
	cp_budget_init(&b, rss + rss / 20, x.u, x.s, "test");
	cp_budget_keep(&b);
	ck_assert_int_ne(b.paged_ns, INT64_MIN / 2);
	ck_assert_uint_eq(b.evictions, 0);
	ck_assert_uint_eq(cp_modcache_count(cp_unwind_modcache(x.u)), nmods);
	/* and not again within the second */
	b.released_ns = 0;
	{
		int64_t paged = b.paged_ns;

		cp_budget_keep(&b);
		ck_assert_int_eq(b.paged_ns, paged);
	}
	self_close(&x);
}
END_TEST

static Suite *unwind_suite(void)
{
	Suite *s = suite_create("unwind");
	TCase *tc = tcase_create("self");

	tcase_add_test(tc, test_unwind_cfi);
	tcase_add_test(tc, test_unwind_cfa_rbx);
	tcase_add_test(tc, test_unwind_signal);
	tcase_add_test(tc, test_unwind_jit);
	tcase_add_test(tc, test_long_names);
	tcase_add_test(tc, test_symbol_ties);
	tcase_add_test(tc, test_symbolize_memo);
	tcase_add_test(tc, test_budget_lets_pages_go_first);
	tcase_add_test(tc, test_unwind_no_stack);
	tcase_add_test(tc, test_budget_evicts_and_reads_again);
	tcase_add_test(tc, test_modcache_keys);
	tcase_add_test(tc, test_no_unit_spans);
	tcase_add_test(tc, test_mod_units);
	tcase_add_test(tc, test_units_indexed);
	tcase_add_test(tc, test_symbol_names_once);
	tcase_add_test(tc, test_spans_answer_as_lookups);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(unwind_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

#else
int main(void)
{
	return 77; /* x86-64 only, as the sampler */
}
#endif

/* SPDX-License-Identifier: MIT */
#include "unwind.h"

#include <dwarf.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../error.h"
#include "../index.h"
#include "modcache.h"
#include "spans.h"
#include "../strtab.h"
#include "../util.h"

/* The unwind rule at one address, from the CFI (x86-64), cached by (file,
 * offset) from there to the end of its CFI row (spans.h): how to find the
 * CFA, the return address and the caller's rbp.
 * Every frame is unwound from such a rule with a few reads of the copied
 * stack; no per-process state is needed.  Where the CFI has no rule this
 * understands (no CFI at all, as in JIT code and V8's builtins, or an
 * expression other than the PLT's), the frame pointer is followed, as
 * libdw and perf do. */
enum {
	RULE_CFA = 1, /* CFA = rsp|rbp|rbx + cfa_off; ra, rbp and rbx at CFA + offsets */
	RULE_PLT,     /* a PLT entry: CFA = rsp + cfa_off, + 8 when (rip & 15) >= plt_k */
	RULE_SIGNAL,  /* the signal trampoline: the interrupted registers are in the ucontext at rsp */
	RULE_END,     /* the outermost frame (the return address is undefined) */
	RULE_FP,      /* no usable rule: follow the frame pointer */
};
enum { BP_SAME, BP_AT, BP_UNDEF };
struct rule {
	uint8_t state, cfa_reg, bp_how, plt_k;
	int32_t cfa_off, ra_off, bp_off, bx_off;
	uint8_t bx_how; /* rbx: a CFA register too (glibc's _dl_runtime_resolve realigns rsp) */
};

struct cp_unwinder {
	struct cp_modcache *mc; /* binaries, for their CFI */
	struct cp_strtab keys;
	struct rule *rules; /* at the ids of their spans */
	size_t rcap;
	struct cp_spans spans;
	char *debuginfo_path;
	int vdso_fd;
	struct cp_unwind_counts counts;
};

/* The vDSO is the same for every process of this kernel: ours, copied into
 * a memfd, stands in for theirs (it has CFI for its own functions). */
static int copy_vdso(void)
{
	uintptr_t base = (uintptr_t)getauxval(AT_SYSINFO_EHDR);
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)base;
	size_t size;
	int fd;

	if (!base || memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0)
		return -1;
	/* the section headers are at the end of the image */
	size = eh->e_shoff + (size_t)eh->e_shnum * eh->e_shentsize;
	if (size > (1u << 20))
		return -1;
	fd = memfd_create("cprof-vdso", MFD_CLOEXEC);
	if (fd < 0)
		return -1;
	if (write(fd, (const void *)base, size) != (ssize_t)size) {
		close(fd);
		return -1;
	}
	return fd;
}

struct cp_unwinder *cp_unwinder_new(const char *debuginfo_path)
{
	struct cp_unwinder *u = calloc(1, sizeof(*u));

	if (!u)
		return NULL;
	u->debuginfo_path = debuginfo_path ? strdup(debuginfo_path) : NULL;
	u->vdso_fd = copy_vdso();
	/* shared with the symbolizer, which reads separate debug files */
	u->mc = cp_modcache_new(256, u->debuginfo_path ? &u->debuginfo_path : NULL, true, u->vdso_fd);
	if ((debuginfo_path && !u->debuginfo_path) || !u->mc || cp_strtab_init(&u->keys)) {
		cp_unwinder_free(u);
		errno = ENOMEM;
		return NULL;
	}
	return u;
}

void cp_unwinder_free(struct cp_unwinder *u)
{
	if (!u)
		return;
	free(u->debuginfo_path);
	cp_modcache_free(u->mc);
	cp_strtab_release(&u->keys);
	free(u->rules);
	cp_spans_release(&u->spans);
	if (u->vdso_fd >= 0)
		close(u->vdso_fd);
	free(u);
}

/* How register regno of the caller is found: same, undefined, or at CFA + off. */
static int reg_rule(Dwarf_Frame *f, int regno, uint8_t *how, int32_t *off)
{
	Dwarf_Op mem[3], *ops = NULL;
	size_t n = 0;

	if (dwarf_frame_register(f, regno, mem, &ops, &n) != 0)
		return -1;
	*off = 0;
	if (n == 0) {
		*how = ops ? BP_UNDEF : BP_SAME;
		return 0;
	}
	if (ops[0].atom != DW_OP_call_frame_cfa)
		return -1;
	if (n == 1) {
		*how = BP_AT;
		return 0;
	}
	if (n == 2 && ops[1].atom == DW_OP_plus_uconst && (int64_t)ops[1].number == (int32_t)ops[1].number) {
		*how = BP_AT;
		*off = (int32_t)ops[1].number;
		return 0;
	}
	return -1;
}

/* The PLT's CFA expression (binutils, x86-64): rsp + N, + 8 once the entry's
 * push has run: breg7 N; breg16 0; lit15; and; litK; ge; lit3; shl; plus. */
static bool plt_cfa(const Dwarf_Op *ops, size_t n, struct rule *r)
{
	static const uint8_t want[] = { DW_OP_breg7, DW_OP_breg16, DW_OP_lit15, DW_OP_and, 0,
					DW_OP_ge,    DW_OP_lit3,   DW_OP_shl,   DW_OP_plus };

	if (n != sizeof(want))
		return false;
	for (size_t i = 0; i < n; i++)
		if (i != 4 && ops[i].atom != want[i])
			return false;
	if (ops[4].atom < DW_OP_lit0 || ops[4].atom > DW_OP_lit15 || ops[1].number != 0 ||
	    (int64_t)ops[0].number != (int32_t)ops[0].number)
		return false;
	r->cfa_reg = 7;
	r->cfa_off = (int32_t)ops[0].number;
	r->plt_k = (uint8_t)(ops[4].atom - DW_OP_lit0);
	return true;
}

/* The rule for file offset off of the binary mod (its CFI, offline); RULE_FP
 * when there is none this can follow.  [off, *hi): the file offsets it holds
 * for (to the end of its CFI row), else [off, off + 1). */
static void compute_rule(struct cp_mod *mod, uint64_t off, struct rule *r, uint64_t *hi)
{
	uint64_t addr = mod ? cp_mod_addr(mod, off) : 0;
	Dwarf_Addr bias;
	Dwarf_CFI *cfi = NULL;
	Dwarf_Frame *f = NULL;
	Dwarf_Op *ops;
	size_t n;
	Dwarf_Addr start, end;
	bool signal = false, plt = false;
	uint8_t ra_how;

	r->state = RULE_FP;
	*hi = off + 1;
	if (!addr)
		return;
	cfi = dwfl_module_eh_cfi(mod->mod, &bias);
	if (!cfi || dwarf_cfi_addrframe(cfi, addr - bias, &f) != 0) {
		free(f);
		f = NULL;
		mod->dwarf_read = true;
		cfi = dwfl_module_dwarf_cfi(mod->mod, &bias);
		if (!cfi || dwarf_cfi_addrframe(cfi, addr - bias, &f) != 0)
			goto out;
	}
	if (dwarf_frame_info(f, &start, &end, &signal) != 16)
		goto out;
	/* the row's rules hold from here to its end (what follows reads them
	 * only); not from its start as libdw gives it: after a
	 * DW_CFA_restore_state, that is the remembered row's (libz's epilogues:
	 * 0x4aa0 is said to start at 0x4a93, where the pops begin) */
	if (start <= addr - bias && addr - bias < end)
		*hi = off + (end - (addr - bias));
	if (signal) {
		r->state = RULE_SIGNAL;
		goto out;
	}
	if (dwarf_frame_cfa(f, &ops, &n) != 0)
		goto out;
	if (n == 1 && ops[0].atom == DW_OP_bregx) {
		r->cfa_reg = (uint8_t)ops[0].number;
		if ((int64_t)ops[0].number2 != (int32_t)ops[0].number2)
			goto out;
		r->cfa_off = (int32_t)ops[0].number2;
	} else if (n == 1 && ops[0].atom >= DW_OP_breg0 && ops[0].atom <= DW_OP_breg31) {
		r->cfa_reg = (uint8_t)(ops[0].atom - DW_OP_breg0);
		if ((int64_t)ops[0].number != (int32_t)ops[0].number)
			goto out;
		r->cfa_off = (int32_t)ops[0].number;
	} else if (!(plt = plt_cfa(ops, n, r))) {
		goto out;
	}
	if (r->cfa_reg != 3 && r->cfa_reg != 6 && r->cfa_reg != 7) /* rbx, rbp or rsp */
		goto out;
	if (reg_rule(f, 16, &ra_how, &r->ra_off) != 0 || reg_rule(f, 6, &r->bp_how, &r->bp_off) != 0)
		goto out;
	/* rbx is callee-saved: without a rule (which libdw reports as undefined)
	 * a function left it alone; a rule this does not follow: not known */
	if (reg_rule(f, 3, &r->bx_how, &r->bx_off) != 0)
		r->bx_how = BP_UNDEF;
	else if (r->bx_how == BP_UNDEF)
		r->bx_how = BP_SAME;
	if (ra_how == BP_UNDEF)
		r->state = RULE_END; /* the outermost frame (_start, thread start) */
	else if (ra_how == BP_AT)
		r->state = plt ? RULE_PLT : RULE_CFA;
out:
	free(f);
}

static const struct rule *get_rule(struct cp_unwinder *u, struct cp_proc *p, uint64_t addr)
{
	struct cp_map *m = (struct cp_map *)cp_proc_find_map(p, addr);
	char buf[41];
	const char *key;
	int64_t mod, id;
	uint64_t off, hi;
	uint32_t found;
	struct rule r;

	if (!m || cp_map_no_file(m->path))
		return NULL; /* no CFI: the frame pointer (a JIT's "//anon" was opened as a file, per process) */
	key = NULL;
	if (!m->ukey1) {
		key = cp_map_key(m, p, buf, sizeof(buf));
		mod = cp_strtab_intern(&u->keys, key, strlen(key));
		if (mod < 0)
			return NULL;
		m->ukey1 = (uint32_t)mod + 1;
	}
	off = addr - m->start + m->pgoff;
	found = cp_spans_find(&u->spans, m->ukey1 - 1, off);
	if (found != UINT32_MAX)
		return &u->rules[found];
	if (u->spans.n >= (1u << 20)) /* bounded: start over */
		cp_spans_reset(&u->spans);
	memset(&r, 0, sizeof(r));
	if (!key)
		key = cp_strtab_get(&u->keys, m->ukey1 - 1);
	compute_rule(cp_modcache_get(u->mc, key, p, m), off, &r, &hi);
	u->counts.rules++;
	if (cp_grow((void **)&u->rules, &u->rcap, u->spans.n + 1, sizeof(*u->rules)) ||
	    (id = cp_spans_add(&u->spans, m->ukey1 - 1, off, off, hi)) < 0)
		return NULL;
	u->rules[id] = r;
	return &u->rules[id];
}

bool cp_unwind_stack_word(const struct cp_sample_rec *r, uint64_t addr, uint64_t *out)
{
	uint64_t sp = r->regs[CP_REG_SP];

	if (addr < sp || addr - sp + 8 > r->ustack_len)
		return false;
	memcpy(out, r->ustack + (addr - sp), 8);
	return true;
}

/* Where the x86-64 kernel's signal frame keeps the interrupted rbp, rsp and
 * rip: the ucontext at the trampoline's rsp, its gregs at offset 40
 * (r8..r15, rdi, rsi, rbp, rbx, rdx, rax, rcx, rsp, rip). */
#define SIG_BP (40 + 10 * 8)
#define SIG_BX (40 + 11 * 8)
#define SIG_SP (40 + 15 * 8)
#define SIG_IP (40 + 16 * 8)

/* The caller's value of a register the rule says is kept (how, off), *val
 * the callee's on entry: unchanged, or read at CFA + off (below sp: an
 * epilogue already popped it, the register holds it).  false: not known. */
static bool caller_reg(const struct cp_sample_rec *r, uint8_t how, int32_t off, uint64_t cfa, uint64_t sp,
		       uint64_t *val)
{
	uint64_t at = cfa + (uint64_t)(int64_t)off;

	if (how == BP_UNDEF)
		return false;
	return how != BP_AT || at < sp || cp_unwind_stack_word(r, at, val);
}

int cp_unwind(struct cp_unwinder *u, struct cp_proc *p, const struct cp_sample_rec *r, uint64_t *pcs, int max)
{
	return cp_unwind_fp(u, p, r, pcs, NULL, max, NULL);
}

int cp_unwind_fp(struct cp_unwinder *u, struct cp_proc *p, const struct cp_sample_rec *r, uint64_t *pcs,
		 uint64_t *fps, int max, const struct cp_unwind_hook *hook)
{
	uint64_t pc, sp, bp, bx;
	bool exact = true; /* pc is where the thread is, not a return address */
	bool bx_known = true; /* rbx is followed as far as the rules say where it is */
	int n = 0;

	if (!(r->flags & CP_SAMPLE_USER) || max <= 0)
		return 0;
	u->counts.unwinds++;
	pc = r->regs[CP_REG_IP];
	sp = r->regs[CP_REG_SP];
	bp = r->regs[CP_REG_BP];
	bx = r->regs[CP_REG_BX];
	while (n < max) {
		const struct rule *ru;
		uint64_t cfa, ra, nbp = bp, nbx = bx, size;
		bool saved;
		int state;

		pcs[n++] = pc;
		if (fps)
			fps[n - 1] = 0;
		if (r->ustack_len == 0)
			break;
		ru = get_rule(u, p, exact ? pc : pc - 1);
		state = ru ? ru->state : RULE_FP;
		if (state == RULE_FP && hook && hook->rule(hook->ctx, pc, exact, &size, &saved) > 0) {
			exact = false;
			cfa = sp + size;
			if (size < 8 || !cp_unwind_stack_word(r, cfa - 8, &ra))
				break;
			if (saved && !cp_unwind_stack_word(r, cfa - 16, &nbp))
				nbp = 0;
			bx_known = false;
			u->counts.hooked++;
			goto next;
		}
		if (fps && state == RULE_FP)
			fps[n - 1] = bp;
		exact = false;
		if (state == RULE_END)
			break;
		if (state == RULE_SIGNAL) {
			if (!cp_unwind_stack_word(r, sp + SIG_IP, &ra) || !cp_unwind_stack_word(r, sp + SIG_SP, &cfa) ||
			    !cp_unwind_stack_word(r, sp + SIG_BP, &nbp))
				break;
			bx_known = cp_unwind_stack_word(r, sp + SIG_BX, &nbx);
			exact = true;
			u->counts.signal++;
		} else if (state == RULE_FP) {
			/* the caller's rbp at rbp, the return address above it */
			if (bp < sp || !cp_unwind_stack_word(r, bp, &nbp) || !cp_unwind_stack_word(r, bp + 8, &ra))
				break;
			cfa = bp + 16;
			u->counts.fp++;
			bx_known = false; /* saved or not, nothing says */
		} else {
			if (ru->cfa_reg == 3 && !bx_known)
				break;
			cfa = (ru->cfa_reg == 7 ? sp : ru->cfa_reg == 6 ? bp : bx) + (uint64_t)(int64_t)ru->cfa_off;
			if (state == RULE_PLT && (pc & 15) >= ru->plt_k)
				cfa += 8;
			if (!cp_unwind_stack_word(r, cfa + (uint64_t)(int64_t)ru->ra_off, &ra))
				break; /* beyond the copied stack: as far as it goes */
			if (!caller_reg(r, ru->bp_how, ru->bp_off, cfa, sp, &nbp))
				nbp = 0;
			if (!caller_reg(r, ru->bx_how, ru->bx_off, cfa, sp, &nbx))
				bx_known = false;
		}
next:
		if (ra == 0 || cfa <= sp)
			break;
		pc = ra;
		sp = cfa;
		bp = nbp;
		bx = nbx;
	}
	u->counts.frames += (uint64_t)n;
	return n;
}

void cp_unwind_counts(const struct cp_unwinder *u, struct cp_unwind_counts *c)
{
	*c = u->counts;
}

int cp_unwind_vdso_fd(const struct cp_unwinder *u)
{
	return u->vdso_fd;
}

struct cp_modcache *cp_unwind_modcache(struct cp_unwinder *u)
{
	return u->mc;
}

void cp_unwind_forget_rules(struct cp_unwinder *u)
{
	free(u->rules);
	u->rules = NULL;
	u->rcap = 0;
	cp_spans_release(&u->spans);
}

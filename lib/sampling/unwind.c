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
#include "../strtab.h"
#include "../util.h"

struct session {
	Dwfl *dwfl;
	struct cp_proc *proc;
	const struct cp_sample_rec *cur;
	uint32_t gen;
	bool attached;
	uint64_t used;
};

/* The unwind rule at one address, from the CFI (x86-64): how to find the
 * CFA, the return address and the caller's rbp.  Most code needs no more,
 * so such frames are unwound from this cache with two memory reads; the
 * rest goes through libdw's full unwinder. */
enum { RULE_OK = 1, RULE_END, RULE_NONE };
enum { BP_SAME, BP_AT, BP_UNDEF };
struct rule {
	uint32_t mod;  /* module key id (build id or path) */
	uint64_t off;  /* file offset of the address looked up */
	uint8_t state, cfa_reg, bp_how;
	int32_t cfa_off, ra_off, bp_off;
};

struct cp_unwinder {
	Dwfl_Callbacks cb;
	struct cp_modcache *mc; /* binaries, for their CFI */
	struct cp_strtab keys;
	struct rule *rules;
	size_t nrules, rcap;
	struct cp_index ridx;
	char *debuginfo_path;
	struct session **live;
	size_t nlive, max;
	uint64_t clock;
	int vdso_fd;
	bool libdw_only; /* CPROF_UNWIND=libdw: no cached rules (for comparison) */
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

struct cp_unwinder *cp_unwinder_new(const char *debuginfo_path, size_t max_sessions)
{
	struct cp_unwinder *u = calloc(1, sizeof(*u));

	if (!u)
		return NULL;
	u->max = max_sessions ? max_sessions : 64;
	u->live = calloc(u->max, sizeof(*u->live));
	u->debuginfo_path = debuginfo_path ? strdup(debuginfo_path) : NULL;
	if (!u->live || (debuginfo_path && !u->debuginfo_path)) {
		cp_unwinder_free(u);
		errno = ENOMEM;
		return NULL;
	}
	u->cb.find_elf = dwfl_linux_proc_find_elf;
	/* unwinding reads .eh_frame (and a binary's own .debug_frame): separate
	 * debug files are for the symbolizer, which loads each once */
	u->cb.find_debuginfo = cp_no_debuginfo;
	u->cb.section_address = dwfl_offline_section_address;
	u->cb.debuginfo_path = u->debuginfo_path ? &u->debuginfo_path : NULL;
	u->vdso_fd = copy_vdso();
	u->libdw_only = getenv("CPROF_UNWIND") && !strcmp(getenv("CPROF_UNWIND"), "libdw");
	u->mc = cp_modcache_new(16, NULL, false, u->vdso_fd);
	if (!u->mc || cp_strtab_init(&u->keys)) {
		cp_unwinder_free(u);
		errno = ENOMEM;
		return NULL;
	}
	return u;
}

static void session_free(struct session *s)
{
	if (!s)
		return;
	if (s->dwfl)
		dwfl_end(s->dwfl);
	if (s->proc)
		s->proc->dwfl = NULL;
	free(s);
}

void cp_unwinder_free(struct cp_unwinder *u)
{
	if (!u)
		return;
	for (size_t i = 0; i < u->nlive; i++)
		session_free(u->live[i]);
	free(u->live);
	free(u->debuginfo_path);
	cp_modcache_free(u->mc);
	cp_strtab_release(&u->keys);
	free(u->rules);
	cp_index_release(&u->ridx);
	if (u->vdso_fd >= 0)
		close(u->vdso_fd);
	free(u);
}

void cp_unwind_forget(struct cp_unwinder *u, struct cp_proc *p)
{
	for (size_t i = 0; i < u->nlive; i++) {
		if (u->live[i]->proc == p) {
			session_free(u->live[i]);
			u->live[i] = u->live[--u->nlive];
			return;
		}
	}
	p->dwfl = NULL;
}

/* libdw callbacks: one thread, the sample's; memory is the copied stack */
static pid_t next_thread(Dwfl *dwfl, void *arg, void **thread_argp)
{
	(void)dwfl;
	(void)arg;
	(void)thread_argp;
	return 0;
}

static bool get_thread(Dwfl *dwfl, pid_t tid, void *arg, void **thread_argp)
{
	(void)dwfl;
	(void)tid;
	*thread_argp = arg;
	return true;
}

static bool memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *arg)
{
	struct session *s = arg;
	const struct cp_sample_rec *r = s->cur;
	uint64_t sp = r->regs[CP_REG_SP];

	(void)dwfl;
	if (addr < sp || addr - sp + sizeof(*result) > r->ustack_len)
		return false;
	memcpy(result, r->ustack + (addr - sp), sizeof(*result));
	return true;
}

static bool set_initial_registers(Dwfl_Thread *thread, void *arg)
{
	struct session *s = arg;
	const __u64 *g = s->cur->regs;
	/* DWARF x86-64 numbering: 3 rbx, 6 rbp, 7 rsp, 12..15 r12..r15 */
	Dwarf_Word bx = g[CP_REG_BX], bpsp[2] = { g[CP_REG_BP], g[CP_REG_SP] },
		   r12[4] = { g[CP_REG_R12], g[CP_REG_R13], g[CP_REG_R14], g[CP_REG_R15] };

	if (!dwfl_thread_state_registers(thread, 3, 1, &bx) || !dwfl_thread_state_registers(thread, 6, 2, bpsp) ||
	    !dwfl_thread_state_registers(thread, 12, 4, r12))
		return false;
	dwfl_thread_state_register_pc(thread, g[CP_REG_IP]);
	return true;
}

static const Dwfl_Thread_Callbacks thread_cb = {
	.next_thread = next_thread,
	.get_thread = get_thread,
	.memory_read = memory_read,
	.set_initial_registers = set_initial_registers,
};

/* Load bias of the file mapped at m: address = bias + p_vaddr. */
static int map_bias(int fd, const struct cp_map *m, uint64_t *bias)
{
	Elf *elf;
	size_t nph;
	int ret = -ENOEXEC;
	GElf_Ehdr eh;

	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf)
		return -ENOEXEC;
	if (elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh) || elf_getphdrnum(elf, &nph) != 0)
		goto out;
	if (eh.e_type == ET_EXEC) {
		*bias = 0;
		ret = 0;
		goto out;
	}
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;
		uint64_t pg = 4096;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD || !(ph.p_flags & PF_X))
			continue;
		if ((ph.p_offset & ~(pg - 1)) <= m->pgoff && m->pgoff < ph.p_offset + ph.p_filesz) {
			*bias = m->start + ph.p_offset - ph.p_vaddr - m->pgoff;
			ret = 0;
			break;
		}
	}
out:
	elf_end(elf);
	return ret;
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

static void report_modules(struct cp_unwinder *u, struct session *s)
{
	struct cp_proc *p = s->proc;
	const char *last = NULL;

	dwfl_report_begin(s->dwfl);
	for (size_t i = 0; i < p->nmaps; i++) {
		const struct cp_map *m = &p->maps[i];
		uint64_t bias;
		int fd;

		if (last && strcmp(last, m->path) == 0)
			continue; /* one module per file */
		fd = cp_map_open(p, m, u->vdso_fd);
		if (fd < 0)
			continue;
		if (map_bias(fd, m, &bias) != 0) {
			close(fd);
			continue;
		}
		/* dwfl_report_elf takes fd on success */
		if (!dwfl_report_elf(s->dwfl, base_name(m->path), m->path, fd, bias, true))
			close(fd);
		else
			last = m->path;
	}
	dwfl_report_end(s->dwfl, NULL, NULL);
}

void *cp_unwind_session(struct cp_unwinder *u, struct cp_proc *p)
{
	struct session *s = p->dwfl;

	if (s && s->gen != p->maps_gen) {
		cp_unwind_forget(u, p);
		s = NULL;
	}
	if (!s) {
		if (!p->nmaps)
			return NULL;
		if (u->nlive == u->max) {
			size_t oldest = 0;

			for (size_t i = 1; i < u->nlive; i++)
				if (u->live[i]->used < u->live[oldest]->used)
					oldest = i;
			session_free(u->live[oldest]);
			u->live[oldest] = u->live[--u->nlive];
			u->counts.sessions_evicted++;
		}
		s = calloc(1, sizeof(*s));
		if (!s)
			return NULL;
		s->proc = p;
		s->gen = p->maps_gen;
		s->dwfl = dwfl_begin(&u->cb);
		if (!s->dwfl) {
			free(s);
			return NULL;
		}
		report_modules(u, s);
		s->attached = dwfl_attach_state(s->dwfl, NULL, (pid_t)p->pid, &thread_cb, s);
		p->dwfl = s;
		u->live[u->nlive++] = s;
		u->counts.sessions_built++;
	}
	s->used = ++u->clock;
	return s->dwfl;
}

struct frames {
	uint64_t *pcs;
	int n, max;
};

static int on_frame(Dwfl_Frame *state, void *arg)
{
	struct frames *f = arg;
	Dwarf_Addr pc;
	bool activation;

	if (!dwfl_frame_pc(state, &pc, &activation) || pc == 0)
		return DWARF_CB_ABORT;
	f->pcs[f->n++] = pc;
	return f->n < f->max ? DWARF_CB_OK : DWARF_CB_ABORT;
}

struct rkey {
	uint32_t mod;
	uint64_t off;
};

static int rule_eq(const void *ctx, uint32_t id, const void *k)
{
	const struct cp_unwinder *u = ctx;
	const struct rkey *key = k;

	return u->rules[id].mod == key->mod && u->rules[id].off == key->off;
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

/* The rule for file offset off of the binary mod (its CFI, offline). */
static void compute_rule(struct cp_mod *mod, uint64_t off, struct rule *r)
{
	uint64_t addr = mod ? cp_mod_addr(mod, off) : 0;
	Dwarf_Addr bias;
	Dwarf_CFI *cfi = NULL;
	Dwarf_Frame *f = NULL;
	Dwarf_Op *ops;
	size_t n;
	bool signal = false;
	uint8_t ra_how;

	r->state = RULE_NONE;
	if (!addr)
		return;
	cfi = dwfl_module_eh_cfi(mod->mod, &bias);
	if (!cfi || dwarf_cfi_addrframe(cfi, addr - bias, &f) != 0) {
		free(f);
		f = NULL;
		cfi = dwfl_module_dwarf_cfi(mod->mod, &bias);
		if (!cfi || dwarf_cfi_addrframe(cfi, addr - bias, &f) != 0)
			goto out;
	}
	if (dwarf_frame_info(f, NULL, NULL, &signal) != 16 || signal)
		goto out;
	if (dwarf_frame_cfa(f, &ops, &n) != 0 || n != 1)
		goto out;
	if (ops[0].atom == DW_OP_bregx) {
		r->cfa_reg = (uint8_t)ops[0].number;
		if ((int64_t)ops[0].number2 != (int32_t)ops[0].number2)
			goto out;
		r->cfa_off = (int32_t)ops[0].number2;
	} else if (ops[0].atom >= DW_OP_breg0 && ops[0].atom <= DW_OP_breg31) {
		r->cfa_reg = (uint8_t)(ops[0].atom - DW_OP_breg0);
		if ((int64_t)ops[0].number != (int32_t)ops[0].number)
			goto out;
		r->cfa_off = (int32_t)ops[0].number;
	} else {
		goto out;
	}
	if (r->cfa_reg != 6 && r->cfa_reg != 7) /* rbp or rsp */
		goto out;
	if (reg_rule(f, 16, &ra_how, &r->ra_off) != 0 || reg_rule(f, 6, &r->bp_how, &r->bp_off) != 0)
		goto out;
	if (ra_how == BP_UNDEF)
		r->state = RULE_END; /* the outermost frame (_start, thread start) */
	else if (ra_how == BP_AT)
		r->state = RULE_OK;
out:
	free(f);
}

static const struct rule *get_rule(struct cp_unwinder *u, struct cp_proc *p, uint64_t addr)
{
	struct cp_map *m = (struct cp_map *)cp_proc_find_map(p, addr);
	char buf[41];
	const char *key;
	int64_t mod;
	struct rkey k;
	uint32_t id, h;
	struct rule r;

	if (!m || !m->path[0])
		return NULL;
	key = NULL;
	if (!m->ukey1) {
		key = cp_map_key(m, p, buf, sizeof(buf));
		mod = cp_strtab_intern(&u->keys, key, strlen(key));
		if (mod < 0)
			return NULL;
		m->ukey1 = (uint32_t)mod + 1;
	}
	k.mod = m->ukey1 - 1;
	k.off = addr - m->start + m->pgoff;
	h = (uint32_t)cp_hash_u64(k.off, k.mod);
	id = cp_index_find(&u->ridx, h, rule_eq, u, &k);
	if (id != UINT32_MAX)
		return &u->rules[id];
	if (u->nrules >= (1u << 20)) { /* bounded: start over */
		u->nrules = 0;
		cp_index_release(&u->ridx);
		memset(&u->ridx, 0, sizeof(u->ridx));
	}
	memset(&r, 0, sizeof(r));
	r.mod = k.mod;
	r.off = k.off;
	if (!key)
		key = cp_strtab_get(&u->keys, k.mod);
	compute_rule(cp_modcache_get(u->mc, key, p, m), k.off, &r);
	if (cp_grow((void **)&u->rules, &u->rcap, u->nrules + 1, sizeof(*u->rules)) ||
	    cp_index_add(&u->ridx, h, (uint32_t)u->nrules))
		return NULL;
	u->rules[u->nrules] = r;
	return &u->rules[u->nrules++];
}

static bool stack_word(const struct cp_sample_rec *r, uint64_t addr, uint64_t *out)
{
	uint64_t sp = r->regs[CP_REG_SP];

	if (addr < sp || addr - sp + 8 > r->ustack_len)
		return false;
	memcpy(out, r->ustack + (addr - sp), 8);
	return true;
}

/* The cached-rule unwinder: -1 when some frame needs libdw's. */
static int fast_unwind(struct cp_unwinder *u, struct cp_proc *p, const struct cp_sample_rec *r, uint64_t *pcs,
		       int max)
{
	uint64_t pc = r->regs[CP_REG_IP], sp = r->regs[CP_REG_SP], bp = r->regs[CP_REG_BP];
	int n = 0;

	while (n < max) {
		const struct rule *ru;
		uint64_t cfa, ra, nbp = bp;

		pcs[n++] = pc;
		ru = get_rule(u, p, n == 1 ? pc : pc - 1);
		if (!ru || ru->state == RULE_NONE)
			return -1;
		if (ru->state == RULE_END)
			break;
		cfa = (ru->cfa_reg == 7 ? sp : bp) + (uint64_t)(int64_t)ru->cfa_off;
		if (!stack_word(r, cfa + (uint64_t)(int64_t)ru->ra_off, &ra))
			break; /* beyond the copied stack: as far as it goes */
		if (ru->bp_how == BP_AT) {
			uint64_t at = cfa + (uint64_t)(int64_t)ru->bp_off;

			/* below sp: an epilogue already popped it, rbp holds it */
			if (at < sp)
				nbp = bp;
			else if (!stack_word(r, at, &nbp))
				nbp = 0;
		}
		if (ru->bp_how == BP_UNDEF)
			nbp = 0;
		if (ra == 0 || cfa <= sp)
			break;
		pc = ra;
		sp = cfa;
		bp = nbp;
	}
	return n;
}

int cp_unwind(struct cp_unwinder *u, struct cp_proc *p, const struct cp_sample_rec *r, uint64_t *pcs, int max)
{
	struct frames f = { pcs, 0, max };
	struct session *s;
	int n;

	if (!(r->flags & CP_SAMPLE_USER) || max <= 0)
		return 0;
	u->counts.unwinds++;
	/* most samples: cached CFI rules, no per-process session */
	if (r->ustack_len && !u->libdw_only && (n = fast_unwind(u, p, r, pcs, max)) > 0) {
		u->counts.frames += (uint64_t)n;
		return n;
	}
	if (!cp_unwind_session(u, p) || !(s = p->dwfl) || !s->attached || r->ustack_len == 0) {
		pcs[0] = r->regs[CP_REG_IP];
		u->counts.frames++;
		return 1;
	}
	u->counts.slow++;
	s->cur = r;
	dwfl_getthread_frames(s->dwfl, (pid_t)r->tid, on_frame, &f);
	s->cur = NULL;
	if (f.n == 0)
		pcs[f.n++] = r->regs[CP_REG_IP];
	u->counts.frames += (uint64_t)f.n;
	return f.n;
}

void cp_unwind_counts(const struct cp_unwinder *u, struct cp_unwind_counts *c)
{
	*c = u->counts;
}

int cp_unwind_vdso_fd(const struct cp_unwinder *u)
{
	return u->vdso_fd;
}

char **cp_unwind_debuginfo_path(struct cp_unwinder *u)
{
	return u->debuginfo_path ? &u->debuginfo_path : NULL;
}

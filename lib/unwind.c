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

#include "error.h"

struct session {
	Dwfl *dwfl;
	struct cp_proc *proc;
	struct cp_unwinder *u;
	const struct cp_sample_rec *cur;
	uint32_t gen;
	bool attached;
	uint64_t used;
};

struct cp_unwinder {
	Dwfl_Callbacks cb;
	char *debuginfo_path;
	struct session **live;
	size_t nlive, max;
	uint64_t clock;
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

static int no_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
			const char *file_name, const char *debuglink_file, GElf_Word debuglink_crc,
			char **debuginfo_file_name)
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
	u->cb.find_debuginfo = no_debuginfo;
	u->cb.section_address = dwfl_offline_section_address;
	u->cb.debuginfo_path = u->debuginfo_path ? &u->debuginfo_path : NULL;
	u->vdso_fd = copy_vdso();
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
		s->u = u;
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
	p->dwfl_used = s->used;
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

int cp_unwind(struct cp_unwinder *u, struct cp_proc *p, const struct cp_sample_rec *r, uint64_t *pcs, int max)
{
	struct frames f = { pcs, 0, max };
	struct session *s;

	if (!(r->flags & CP_SAMPLE_USER) || max <= 0)
		return 0;
	u->counts.unwinds++;
	if (!cp_unwind_session(u, p) || !(s = p->dwfl) || !s->attached || r->ustack_len == 0) {
		pcs[0] = r->regs[CP_REG_IP];
		u->counts.frames++;
		return 1;
	}
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

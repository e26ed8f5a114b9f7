/* SPDX-License-Identifier: MIT */
/* Ruby frames: detection and naming (see ruby.h). */
#include "ruby.h"

#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../../../bpf/runtimes.h"
#include "../../../error.h"
#include "../../../log.h"
#include "../../../util.h"

/* What is known of one version's structures (x86-64): the BPF program's
 * part, and the iseq's, strings' and arrays' fields read here.  The offsets
 * are those of CRuby's own headers (vm_core.h, iseq.h, internal/string.h),
 * checked by tests/cli/test-ruby.sh against the installed MJIT header
 * (rb_mjit_min_header-VERSION.h, which ruby-dev ships). */
struct layout {
	unsigned major, minor;
	struct cp_rb_proc bpf; /* vm_ptr filled per process */
	uint16_t iseq_body;    /* rb_iseq_t.body */
	/* rb_iseq_constant_body: */
	uint16_t b_iseq_size, b_encoded, b_path, b_label, b_base_label, b_first_lineno;
	uint16_t b_info_body, b_info_positions, b_info_size, b_info_succ, b_read;
	uint16_t info_entry, info_line; /* struct iseq_insn_info_entry: size, line_no */
	uint16_t str_len, str_ptr, str_embed, ary_len, ary_ptr, ary_embed;
	uint32_t str_noembed, str_len_mask, ary_embed_flag, ary_len_mask; /* flags' bits; a mask's low bit is its shift */
	uint8_t str_len_shift, ary_len_shift;
};

static const struct layout layouts[] = {
	{ 3, 1,
	  { .vm_main_ractor = 32, .ractor_threads = 304, .ractor_running_ec = 520, .thread_node = 0, .thread_ec = 40,
	    .thread_tid = 88, .ec_thread = 48, .ec_stack = 0, .ec_stack_size = 8, .ec_cfp = 16, .cfp_size = 64,
	    .cfp_pc = 0, .cfp_iseq = 16, .cfp_ep = 32 },
	  16, 4, 8, 64, 80, 72, 88, 120, 128, 136, 144, 152, 12, 0, 16, 24, 16, 16, 32, 16,
	  0x2000, 0x7c000, 0x2000, 0x18000, 14, 15 },
};
#define NLAYOUTS (sizeof(layouts) / sizeof(*layouts))

#define T_MASK 0x1f
#define T_STRING 0x05
#define T_ARRAY 0x07
#define T_IMEMO 0x1a
#define IMEMO_ISEQ 7 /* an imemo's type: (flags >> FL_USHIFT) & IMEMO_MASK */
#define FL_USHIFT 12
#define IMEMO_MASK 0x0f
#define QNIL 0x08
#define IMM_SIZE 54 /* the succinct index's immediate part: positions 0..53 */
#define STR_MAX 4096
#define LINES_MAX (1u << 20) /* insn_info entries read of an iseq */

#define ISEQ_BUCKETS 4096
#define ISEQ_MAX 65536 /* iseqs kept; past it the cache starts over */

struct iseq {
	struct cp_rt_entry e; /* pid, address */
	char *label, *name, *sysname, *file;
	int64_t first_line;
	uint64_t encoded; /* the first instruction */
	uint32_t size;    /* in words */
	uint32_t nlines;
	int32_t *lines;     /* of each insn_info entry */
	uint32_t *positions; /* each entry's first position (NULL: succ instead) */
	uint8_t *succ;       /* the succinct index table, nsucc bytes */
	size_t nsucc;
	bool bad;    /* could not be read */
	bool not_iseq; /* read, and not an iseq (a frame being pushed, or freed memory) */
	bool reread; /* read again for a pc out of it, and that pc still was */
};

/* a binary looked at: is it a CRuby, where are its symbols */
struct bin {
	char *key; /* (cp_rt_bins') */
	const struct layout *lay; /* NULL: not a known CRuby */
	uint64_t vm_ptr, exec_lo, exec_hi, core_lo, core_hi; /* file addresses (core: 0, 0 when not found) */
	struct cp_rt_loads loads;
};

struct cp_ruby {
	const char *verb;
	struct cp_rt_cache iseqs;
	struct cp_rt_bins bins;
};

static void iseq_free(struct cp_rt_entry *e)
{
	struct iseq *q = (struct iseq *)e;

	free(q->label);
	free(q->name);
	free(q->sysname);
	free(q->file);
	free(q->lines);
	free(q->positions);
	free(q->succ);
	free(q);
}

struct cp_ruby *cp_ruby_new(const char *verb)
{
	struct cp_ruby *rb = calloc(1, sizeof(struct cp_ruby));

	if (!rb)
		return NULL;
	rb->verb = verb;
	rb->bins.size = sizeof(struct bin);
	if (cp_rt_cache_init(&rb->iseqs, ISEQ_BUCKETS, ISEQ_MAX, iseq_free)) {
		free(rb);
		return NULL;
	}
	return rb;
}

void cp_ruby_free(struct cp_ruby *rb)
{
	if (!rb)
		return;
	cp_rt_cache_fini(&rb->iseqs);
	cp_rt_bins_fini(&rb->bins);
	free(rb);
}

/* ---- detection ---- */

bool cp_ruby_named(const char *path)
{
	const char *b = strrchr(path, '/');

	b = b ? b + 1 : path;
	return !strncmp(b, "ruby", 4) || !strncmp(b, "libruby", 7);
}

struct rbsyms {
	Elf *e;
	int fd;
	struct bin *b;
	char version[16];
	GElf_Sym exec; /* rb_vm_exec's */
	uint64_t core, core_size; /* vm_exec_core's, from .symtab */
};

static bool rb_sym(void *ctx, const char *n, const GElf_Sym *s)
{
	struct rbsyms *rs = ctx;

	if (!strcmp(n, "ruby_current_vm_ptr"))
		rs->b->vm_ptr = s->st_value;
	else if (!strcmp(n, "ruby_version") && s->st_size < sizeof(rs->version))
		(void)cp_runtime_sym_read(rs->e, rs->fd, s, rs->version, s->st_size);
	else if (!strcmp(n, "rb_vm_exec") && GELF_ST_TYPE(s->st_info) == STT_FUNC)
		rs->exec = *s;
	else if (!strcmp(n, "vm_exec_core") && GELF_ST_TYPE(s->st_info) == STT_FUNC) {
		rs->core = s->st_value;
		rs->core_size = s->st_size;
	}
	return true;
}

/* The functions' starts in .eh_frame_hdr's table (sorted), *n of them
 * (NULL: none, or an encoding this does not read) */
static int32_t *fde_starts(Elf *e, uint64_t *hdr_addr, size_t *n)
{
	size_t shstr;
	Elf_Scn *scn = NULL;

	*n = 0;
	if (elf_getshdrstrndx(e, &shstr) != 0)
		return NULL;
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		const char *name;
		Elf_Data *d;
		const uint8_t *p;
		uint32_t count;
		int32_t *out;

		if (!gelf_getshdr(scn, &sh) || !(name = elf_strptr(e, shstr, sh.sh_name)) ||
		    strcmp(name, ".eh_frame_hdr"))
			continue;
		if (!(d = elf_getdata(scn, NULL)) || !d->d_buf || d->d_size < 12)
			return NULL;
		p = d->d_buf;
		/* version 1; the table's pointer, count and entries: pcrel sdata4,
		 * udata4, datarel sdata4 */
		if (p[0] != 1 || p[2] != 0x03 || p[3] != 0x3b || (p[1] & 0x0f) != 0x0b)
			return NULL;
		memcpy(&count, p + 8, 4);
		if ((uint64_t)count * 8 > d->d_size - 12 || !(out = malloc((count ? count : 1) * sizeof(int32_t))))
			return NULL;
		for (uint32_t i = 0; i < count; i++)
			memcpy(&out[i], p + 12 + (size_t)i * 8, 4);
		*hdr_addr = sh.sh_addr;
		*n = count;
		return out;
	}
	return NULL;
}

/* vm_exec_core, when the binary has no symbol for it: the largest function
 * rb_vm_exec calls (a direct call's target that starts a function of
 * .eh_frame_hdr's table; its extent runs to the next one's start) */
static bool find_core(Elf *e, int fd, const GElf_Sym *exec, uint64_t *lo, uint64_t *hi)
{
	uint8_t *code;
	uint64_t hdr = 0, best = 0, best_size = 0;
	size_t n;
	int32_t *starts;

	if (!exec->st_size || exec->st_size > (1u << 16) || !(code = malloc(exec->st_size)))
		return false;
	if (!cp_runtime_sym_read(e, fd, exec, code, exec->st_size) || !(starts = fde_starts(e, &hdr, &n))) {
		free(code);
		return false;
	}
	for (size_t i = 0; i + 5 <= exec->st_size; i++) {
		int32_t rel;
		uint64_t to;
		size_t a = 0, b = n;

		if (code[i] != 0xe8)
			continue;
		memcpy(&rel, code + i + 1, 4);
		to = exec->st_value + i + 5 + (uint64_t)(int64_t)rel;
		while (a < b) { /* the first start >= to */
			size_t m = a + (b - a) / 2;

			if (hdr + (uint64_t)(int64_t)starts[m] < to)
				a = m + 1;
			else
				b = m;
		}
		if (a + 1 < n && hdr + (uint64_t)(int64_t)starts[a] == to) {
			uint64_t size = (uint64_t)((int64_t)starts[a + 1] - starts[a]);

			if (size > best_size) {
				best = to;
				best_size = size;
			}
		}
	}
	free(starts);
	free(code);
	if (best_size < 4096) /* not an interpreter's loop */
		return false;
	*lo = best;
	*hi = best + best_size;
	return true;
}

/* Looks at the binary open on fd: b filled (b->lay NULL when not a known CRuby). */
static void inspect(const struct cp_ruby *rb, struct bin *b, int fd, const char *path)
{
	struct rbsyms rs = { NULL, fd, b, { 0 }, { 0 }, 0, 0 };
	unsigned major = 0, minor = 0;
	Elf *e;

	elf_version(EV_CURRENT);
	if (!(e = elf_begin(fd, ELF_C_READ_MMAP, NULL)))
		return;
	rs.e = e;
	(void)cp_runtime_syms(e, true, "", rb_sym, &rs);
	cp_runtime_loads(e, &b->loads);
	if (!b->vm_ptr || !rs.exec.st_value || sscanf(rs.version, "%u.%u", &major, &minor) != 2) {
		elf_end(e);
		return;
	}
	for (size_t i = 0; i < NLAYOUTS; i++)
		if (layouts[i].major == major && layouts[i].minor == minor)
			b->lay = &layouts[i];
	if (!b->lay) {
		cp_log(rb->verb, CP_LOG_INFO,
		       "%s is Ruby %u.%u, whose frames cprof does not know: its processes' stacks stay native", path,
		       major, minor);
	} else {
		b->exec_lo = rs.exec.st_value;
		b->exec_hi = rs.exec.st_value + rs.exec.st_size;
		if (rs.core && rs.core_size) {
			b->core_lo = rs.core;
			b->core_hi = rs.core + rs.core_size;
		} else if (!find_core(e, fd, &rs.exec, &b->core_lo, &b->core_hi)) {
			b->core_lo = b->core_hi = 0;
		}
	}
	elf_end(e);
}

/* cp_rt_bin's look: a new binary (none when it cannot be opened) */
static void look(void *rb, void *b, int fd, const char *path)
{
	if (fd >= 0)
		inspect(rb, b, fd, path);
}

int cp_ruby_detect(struct cp_ruby *rb, struct cp_proc *p, struct cp_rb_proc *out, struct cp_rt_found *f)
{
	for (size_t i = 0; i < p->nmaps; i++) {
		struct cp_map *m = &p->maps[i];
		struct bin *b;
		uint64_t bias;

		if (!m->path || m->path[0] != '/' || !cp_ruby_named(m->path))
			continue;
		if (!(b = cp_rt_bin(&rb->bins, p, m, look, rb))) {
			if (errno == ENOMEM)
				return cp_error(ENOMEM, "out of memory looking at %s", m->path);
			continue;
		}
		if (!b->lay || !cp_runtime_bias(&b->loads, m, &bias))
			continue;
		*out = b->lay->bpf;
		out->vm_ptr = b->vm_ptr + bias;
		f->entry_lo = b->exec_lo + bias;
		f->entry_hi = b->exec_hi + bias;
		f->entries_skipped = true;
		if (b->core_hi) {
			f->loop_lo = b->core_lo + bias;
			f->loop_hi = b->core_hi + bias;
		}
		f->layout = (unsigned)(b->lay - layouts);
		return 1;
	}
	return 0;
}

long cp_ruby_offset(unsigned major, unsigned minor, const char *field)
{
	for (size_t i = 0; i < NLAYOUTS; i++) {
		const struct layout *l = &layouts[i];
		const struct { const char *name; long v; } f[] = {
			{ "vm.ractor.main_ractor", l->bpf.vm_main_ractor },
			{ "ractor.threads.set", l->bpf.ractor_threads },
			{ "ractor.threads.running_ec", l->bpf.ractor_running_ec },
			{ "thread.lt_node", l->bpf.thread_node },
			{ "thread.ec", l->bpf.thread_ec },
			{ "thread.tid", l->bpf.thread_tid },
			{ "ec.thread_ptr", l->bpf.ec_thread },
			{ "ec.vm_stack", l->bpf.ec_stack },
			{ "ec.vm_stack_size", l->bpf.ec_stack_size },
			{ "ec.cfp", l->bpf.ec_cfp },
			{ "cfp.size", l->bpf.cfp_size },
			{ "cfp.pc", l->bpf.cfp_pc },
			{ "cfp.iseq", l->bpf.cfp_iseq },
			{ "cfp.ep", l->bpf.cfp_ep },
			{ "iseq.body", l->iseq_body },
			{ "body.iseq_size", l->b_iseq_size },
			{ "body.iseq_encoded", l->b_encoded },
			{ "body.location.pathobj", l->b_path },
			{ "body.location.label", l->b_label },
			{ "body.location.base_label", l->b_base_label },
			{ "body.location.first_lineno", l->b_first_lineno },
			{ "body.insns_info.body", l->b_info_body },
			{ "body.insns_info.positions", l->b_info_positions },
			{ "body.insns_info.size", l->b_info_size },
			{ "body.insns_info.succ_index_table", l->b_info_succ },
			{ "insn_info.size", l->info_entry },
			{ "insn_info.line_no", l->info_line },
			{ "string.as.heap.len", l->str_len },
			{ "string.as.heap.ptr", l->str_ptr },
			{ "string.as.embed.ary", l->str_embed },
			{ "array.as.heap.len", l->ary_len },
			{ "array.as.heap.ptr", l->ary_ptr },
			{ "array.as.ary", l->ary_embed },
			{ "RSTRING_NOEMBED", l->str_noembed },
			{ "RSTRING_EMBED_LEN_MASK", l->str_len_mask },
			{ "RSTRING_EMBED_LEN_SHIFT", l->str_len_shift },
			{ "RARRAY_EMBED_FLAG", l->ary_embed_flag },
			{ "RARRAY_EMBED_LEN_MASK", l->ary_len_mask },
			{ "RARRAY_EMBED_LEN_SHIFT", l->ary_len_shift },
			/* the same in every version cprof knows */
			{ "VM_FRAME_MAGIC_MASK", (long)CP_RB_FRAME_MAGIC_MASK },
			{ "VM_FRAME_MAGIC_CFUNC", (long)CP_RB_FRAME_MAGIC_CFUNC },
			{ "VM_FRAME_MAGIC_IFUNC", (long)CP_RB_FRAME_MAGIC_IFUNC },
			{ "VM_FRAME_MAGIC_DUMMY", (long)CP_RB_FRAME_MAGIC_DUMMY },
			{ "VM_FRAME_FLAG_FINISH", (long)CP_RB_FRAME_FLAG_FINISH },
			{ "VM_FRAME_FLAG_CFRAME", (long)CP_RB_FRAME_FLAG_CFRAME },
			{ "VM_ENV_DATA_INDEX_FLAGS", 0 }, /* ep[0] */
			{ "RUBY_T_STRING", T_STRING },
			{ "RUBY_T_ARRAY", T_ARRAY },
			{ "RUBY_T_MASK", T_MASK },
			{ "RUBY_Qnil", QNIL },
			{ "RUBY_T_IMEMO", T_IMEMO },
			{ "imemo_iseq", IMEMO_ISEQ },
			{ "RUBY_FL_USHIFT", FL_USHIFT },
			{ "IMEMO_MASK", IMEMO_MASK },
		};

		if (l->major != major || l->minor != minor)
			continue;
		for (size_t k = 0; k < sizeof(f) / sizeof(*f); k++)
			if (!strcmp(f[k].name, field))
				return f[k].v;
	}
	return -1;
}

/* ---- naming ---- */

static uint64_t u64_at(const uint8_t *b, size_t off)
{
	uint64_t v;

	memcpy(&v, b + off, 8);
	return v;
}

/* A String's bytes, as a C string (NULL when it cannot be read, is not a
 * String, or is longer than STR_MAX) */
static char *read_str(uint32_t pid, uint64_t addr, const struct layout *l)
{
	uint8_t h[48];
	uint64_t flags, len, at;
	char *out;

	if ((addr & 7) || !cp_runtime_peek(pid, addr, h, sizeof(h)))
		return NULL;
	flags = u64_at(h, 0);
	if ((flags & T_MASK) != T_STRING)
		return NULL;
	if (flags & l->str_noembed) {
		len = u64_at(h, l->str_len);
		at = u64_at(h, l->str_ptr);
	} else {
		len = (flags & l->str_len_mask) >> l->str_len_shift;
		at = addr + l->str_embed;
	}
	if (len > STR_MAX || !(out = malloc(len + 1)))
		return NULL;
	if (len && !cp_runtime_peek(pid, at, out, len)) {
		free(out);
		return NULL;
	}
	out[len] = 0;
	if (strlen(out) != len) { /* a NUL inside: not a name */
		free(out);
		return NULL;
	}
	return out;
}

/* Element i of an Array (0 when it cannot be read, is not an Array or has
 * no element i) */
static uint64_t ary_at(uint32_t pid, uint64_t addr, const struct layout *l, unsigned i)
{
	uint8_t h[48];
	uint64_t flags, len, at, v;

	if ((addr & 7) || !cp_runtime_peek(pid, addr, h, sizeof(h)))
		return 0;
	flags = u64_at(h, 0);
	if ((flags & T_MASK) != T_ARRAY)
		return 0;
	if (flags & l->ary_embed_flag) {
		len = (flags & l->ary_len_mask) >> l->ary_len_shift;
		at = addr + l->ary_embed;
	} else {
		len = u64_at(h, l->ary_len);
		at = u64_at(h, l->ary_ptr);
	}
	if (i >= len || !cp_runtime_peek(pid, at + 8ull * i, &v, 8))
		return 0;
	return v;
}

/* An iseq, read: q->bad when it cannot be. */
static void read_iseq(struct iseq *q, const struct layout *l)
{
	uint8_t b[256];
	uint64_t iseq[3], body, path, real = 0, fl, info, succ, pos;
	uint32_t size, n;
	const char *base;

	q->bad = true;
	/* an imemo of the iseq type (flags), else not an iseq: left unnamed */
	if (l->b_read > sizeof(b) || l->iseq_body > 16 || !cp_runtime_peek(q->e.pid, q->e.addr, iseq, sizeof(iseq)))
		return;
	if ((iseq[0] & T_MASK) != T_IMEMO || ((iseq[0] >> FL_USHIFT) & IMEMO_MASK) != IMEMO_ISEQ) {
		q->not_iseq = true;
		return;
	}
	body = iseq[l->iseq_body / 8];
	if (!cp_runtime_peek(q->e.pid, body, b, l->b_read))
		return;
	q->name = read_str(q->e.pid, u64_at(b, l->b_label), l);
	q->sysname = read_str(q->e.pid, u64_at(b, l->b_base_label), l);
	path = u64_at(b, l->b_path);
	if (!(q->file = read_str(q->e.pid, path, l))) { /* [path, realpath] */
		real = ary_at(q->e.pid, path, l, 1);
		path = ary_at(q->e.pid, path, l, 0);
		if (!real || real == QNIL || !(q->file = read_str(q->e.pid, real, l)))
			q->file = read_str(q->e.pid, path, l);
	}
	if (!q->name || !q->file)
		return;
	fl = u64_at(b, l->b_first_lineno);
	q->first_line = fl & 1 ? (int64_t)fl >> 1 : 0;
	memcpy(&size, b + l->b_iseq_size, 4);
	memcpy(&n, b + l->b_info_size, 4);
	q->size = size;
	q->encoded = u64_at(b, l->b_encoded);
	info = u64_at(b, l->b_info_body);
	pos = u64_at(b, l->b_info_positions);
	succ = u64_at(b, l->b_info_succ);
	/* the line table (none read: every pc gets the first line) */
	if (n && n <= LINES_MAX && n <= size + 1 && info) {
		uint8_t *raw = malloc((size_t)n * l->info_entry);

		if (raw && (q->lines = malloc(n * sizeof(int32_t))) &&
		    cp_runtime_peek(q->e.pid, info, raw, (size_t)n * l->info_entry)) {
			for (uint32_t i = 0; i < n; i++)
				memcpy(&q->lines[i], raw + (size_t)i * l->info_entry + l->info_line, 4);
			q->nlines = n;
		}
		free(raw);
		if (q->nlines > 1 && pos) {
			if (!(q->positions = malloc(n * sizeof(uint32_t))) ||
			    !cp_runtime_peek(q->e.pid, pos, q->positions, n * sizeof(uint32_t))) {
				free(q->positions);
				q->positions = NULL;
				q->nlines = 0;
			}
		} else if (q->nlines > 1 && succ) {
			size_t imm = (size < IMM_SIZE ? size + 8 : IMM_SIZE) / 9;
			size_t blocks = (size < IMM_SIZE ? 0 : size - IMM_SIZE + 511) / 512;

			q->nsucc = blocks ? IMM_SIZE / 9 * 8 + blocks * 80 : imm * 8;
			if (!(q->succ = malloc(q->nsucc)) || !cp_runtime_peek(q->e.pid, succ, q->succ, q->nsucc)) {
				free(q->succ);
				q->succ = NULL;
				q->nsucc = 0;
				q->nlines = 0;
			}
		} else if (q->nlines > 1) {
			q->nlines = 0;
		}
	}
	base = strrchr(q->file, '/');
	/* (a script's <main> starts at line 0) */
	if ((q->first_line > 0 ? asprintf(&q->label, "%s (%s:%lld)", q->name, base ? base + 1 : q->file,
					  (long long)q->first_line)
			       : asprintf(&q->label, "%s (%s)", q->name, base ? base + 1 : q->file)) < 0) {
		q->label = NULL;
		return;
	}
	q->bad = false;
}

/* The insn_info entry of position pos (CRuby's succ_index_lookup, less one),
 * or -1 */
static int64_t succ_entry(const struct iseq *q, uint64_t pos)
{
	uint64_t v, rank = 0, bits;

	if (pos < IMM_SIZE) {
		if ((pos / 9 + 1) * 8 > q->nsucc)
			return -1;
		v = u64_at(q->succ, pos / 9 * 8);
		rank = (v >> (pos % 9 * 7)) & 0x7f;
	} else {
		uint64_t block = (pos - IMM_SIZE) / 512, bit = (pos - IMM_SIZE) % 512, small = bit / 64;
		size_t at = IMM_SIZE / 9 * 8 + block * 80;
		uint32_t r;

		if (at + 80 > q->nsucc)
			return -1;
		memcpy(&r, q->succ + at, 4);
		v = u64_at(q->succ, at + 8);
		bits = u64_at(q->succ, at + 16 + small * 8);
		rank = (uint64_t)r + (small ? (v >> ((small - 1) * 9)) & 0x1ff : 0) +
		       (uint64_t)__builtin_popcountll(bits << (63 - bit % 64));
	}
	return (int64_t)rank - 1;
}

/* The line of the instruction before pc (the one running: a frame's pc is
 * the next one's), as rb_vm_get_sourceline gives it; -1 when unknown */
static int64_t iseq_line(const struct iseq *q, uint64_t pc)
{
	uint64_t pos;
	int64_t i = -1;

	if (pc < q->encoded || (pc - q->encoded) / 8 > q->size)
		return -1;
	pos = (pc - q->encoded) / 8;
	if (pos)
		pos--;
	if (q->nlines == 1) {
		i = 0;
	} else if (q->positions) { /* the last entry at or before pos */
		uint32_t a = 0, b = q->nlines;

		while (a < b) {
			uint32_t m = a + (b - a) / 2;

			if (q->positions[m] <= pos)
				a = m + 1;
			else
				b = m;
		}
		i = (int64_t)a - 1;
	} else if (q->succ) {
		i = succ_entry(q, pos);
	}
	if (i < 0 || i >= (int64_t)q->nlines || q->lines[i] <= 0)
		return -1;
	return q->lines[i];
}

int cp_ruby_frame(struct cp_ruby *rb, uint32_t pid, unsigned layout, uint64_t addr, uint64_t pc,
		  struct cp_rt_name *out)
{
	struct iseq *q = (struct iseq *)cp_rt_cache_find(&rb->iseqs, pid, addr);
	bool reread = false;

	/* an iseq the GC freed, its memory another's now: the pc is not among
	 * the instructions read (read again, once: a pc not yet set stays out) */
	if (q && (pc < q->encoded || pc > q->encoded + 8ull * q->size)) {
		if (!q->reread) {
			cp_rt_cache_drop(&rb->iseqs, &q->e);
			q = NULL;
			reread = true;
		}
	} else if (q) {
		q->reread = false;
	}
	if (!q) {
		if (!(q = calloc(1, sizeof(*q))))
			return -1;
		q->e.pid = pid;
		q->e.addr = addr;
		q->reread = reread;
		read_iseq(q, &layouts[layout < NLAYOUTS ? layout : 0]);
		if (q->bad) { /* not kept: the memory may hold an iseq later */
			int r = q->not_iseq ? 1 : -1;

			iseq_free(&q->e);
			return r;
		}
		if (cp_rt_cache_put(&rb->iseqs, &q->e))
			return -1;
	}
	memset(out, 0, sizeof(*out));
	out->label = q->label;
	out->name = q->name;
	out->sysname = q->sysname ? q->sysname : q->name;
	out->file = q->file;
	out->first_line = q->first_line;
	out->line = iseq_line(q, pc);
	return 0;
}

void cp_ruby_forget(struct cp_ruby *rb, uint32_t pid)
{
	cp_rt_cache_forget(&rb->iseqs, pid);
}

/* ---- the runtime's row (lib/sampling/runtime.h) ---- */

static void *rt_new(const char *verb)
{
	return cp_ruby_new(verb);
}

static void rt_free(void *st)
{
	cp_ruby_free(st);
}

static int rt_detect(void *st, struct cp_proc *p, void *data, struct cp_rt_found *f)
{
	struct cp_rb_proc rp;
	int yes = cp_ruby_detect(st, p, &rp, f);

	if (yes > 0)
		memcpy(data, &rp, sizeof(rp));
	return yes;
}

static int rt_frame(void *st, uint32_t pid, unsigned layout, const struct cp_rt_frame *fr, struct cp_rt_name *out)
{
	return cp_ruby_frame(st, pid, layout, fr->addr & ~7ull, fr->data, out);
}

static void rt_forget(void *st, uint32_t pid)
{
	cp_ruby_forget(st, pid);
}

const struct cp_runtime cp_runtime_ruby = {
	.name = "ruby",
	.id = CP_RT_ID_ruby,
	.new = rt_new,
	.free = rt_free,
	.named = cp_ruby_named,
	.detect = rt_detect,
	.frame = rt_frame,
	.forget = rt_forget,
};

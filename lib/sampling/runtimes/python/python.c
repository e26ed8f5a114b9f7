/* SPDX-License-Identifier: MIT */
/* CPython frames: detection and naming (see python.h). */
#include "python.h"

#include <errno.h>
#include <fcntl.h>
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
 * part, and the code object's and strings' fields read here.  The offsets
 * are those of CPython's own headers (Include/internal/pycore_frame.h,
 * pycore_runtime.h, pycore_interp.h, cpython/code.h, cpython/unicodeobject.h),
 * checked by tests/cli/test-python.sh against the installed headers. */
#define NONE 0xffff /* a field this version does not have */

struct layout {
	unsigned major, minor;
	struct cp_py_proc bpf; /* runtime filled per process */
	uint16_t co_name, co_qualname, co_filename, co_firstlineno, co_linetable, co_firsttraceable,
		co_code_adaptive, co_read; /* co_read: bytes read of a code object */
	uint16_t str_length, str_state, str_ascii_data, str_compact_data;
	uint16_t bytes_size, bytes_data;
};

static const struct layout layouts[] = {
	{ 3, 11,
	  { .runtime_interp_head = 40, .interp_threads_head = 16, .tstate_next = 8, .tstate_native_tid = 160,
	    .tstate_cframe = 56, .cframe_current_frame = 8, .tstate_current_frame = 0, .frame_code = 32,
	    .frame_previous = 48, .frame_instr = 56, .frame_is_entry = 68, .frame_owner = 69, .frame_len = 72,
	    .owner_generator = 1, .owner_cstack = NONE },
	  120, 128, 112, 72, 136, 168, 184, 192, 16, 32, 48, 72, 16, 32 },
	/* 3.12: no is_entry; an evaluation loop's frames are followed by its entry frame, owned by
	 * the C stack (3); strings lost wstr */
	{ 3, 12,
	  { .runtime_interp_head = 40, .interp_threads_head = 72, .tstate_next = 8, .tstate_native_tid = 144,
	    .tstate_cframe = 56, .cframe_current_frame = 0, .tstate_current_frame = 0, .frame_code = 0,
	    .frame_previous = 8, .frame_instr = 56, .frame_is_entry = NONE, .frame_owner = 70, .frame_len = 72,
	    .owner_generator = 1, .owner_cstack = 3 },
	  120, 128, 112, 68, 136, 176, 192, 200, 16, 32, 40, 56, 16, 32 },
	/* 3.13: no cframe (the thread state has the current frame); f_executable, instr_ptr */
	{ 3, 13,
	  { .runtime_interp_head = 632, .interp_threads_head = 7344, .tstate_next = 8, .tstate_native_tid = 160,
	    .tstate_cframe = 0, .cframe_current_frame = 0, .tstate_current_frame = 72, .frame_code = 0,
	    .frame_previous = 8, .frame_instr = 56, .frame_is_entry = NONE, .frame_owner = 70, .frame_len = 72,
	    .owner_generator = 1, .owner_cstack = 3 },
	  120, 128, 112, 68, 136, 184, 200, 208, 16, 32, 40, 56, 16, 32 },
};

#define CODE_BUCKETS 4096
#define CODE_MAX 65536 /* code objects kept; past it the cache starts over */

struct code {
	struct cp_rt_entry e; /* pid, address */
	struct cp_py_code c;
	char *label, *name, *sysname, *file;
	uint8_t *table;
	size_t ntable;
	uint64_t code_start; /* the first instruction */
	int64_t first_traceable;
	bool bad; /* could not be read */
};

/* a binary looked at: is it a CPython, where are its symbols */
struct bin {
	char *key; /* (cp_rt_bins') */
	const struct layout *lay; /* NULL: not a known CPython */
	uint64_t runtime, eval, eval_size; /* symbol values */
	struct cp_rt_loads loads;
};

struct cp_python {
	const char *verb; /* of the log line */
	struct cp_rt_cache codes;
	struct cp_rt_bins bins;
};

static void code_free(struct cp_rt_entry *e)
{
	struct code *c = (struct code *)e;

	free(c->label);
	free(c->name);
	free(c->sysname);
	free(c->file);
	free(c->table);
	free(c);
}

struct cp_python *cp_python_new(const char *verb)
{
	struct cp_python *py = calloc(1, sizeof(struct cp_python));

	if (!py)
		return NULL;
	py->verb = verb;
	py->bins.size = sizeof(struct bin);
	if (cp_rt_cache_init(&py->codes, CODE_BUCKETS, CODE_MAX, code_free)) {
		free(py);
		return NULL;
	}
	return py;
}

void cp_python_free(struct cp_python *py)
{
	if (!py)
		return;
	cp_rt_cache_fini(&py->codes);
	cp_rt_bins_fini(&py->bins);
	free(py);
}

/* ---- detection ---- */

bool cp_python_named(const char *path)
{
	const char *b = strrchr(path, '/');

	b = b ? b + 1 : path;
	return !strncmp(b, "python", 6) || !strncmp(b, "libpython", 9);
}

/* Looks at the binary open on fd: b filled (b->lay NULL when not a known CPython). */
/* what the symbols of a binary say (cp_runtime_syms) */
struct pysyms {
	Elf *e;
	int fd;
	struct bin *b;
	uint64_t version;
	bool runtime;
};

static bool py_sym(void *ctx, const char *n, const GElf_Sym *s)
{
	struct pysyms *ps = ctx;

	if (!strcmp(n, "_PyRuntime")) {
		ps->b->runtime = s->st_value;
		ps->runtime = true;
	} else if (!strcmp(n, "Py_Version")) {
		uint32_t v;

		ps->version = cp_runtime_sym_read(ps->e, ps->fd, s, &v, 4) ? v : 0; /* 0xMMmmPPxx */
	} else if (!strcmp(n, "_PyEval_EvalFrameDefault")) {
		ps->b->eval = s->st_value;
		ps->b->eval_size = s->st_size;
	}
	return true;
}

static void inspect(const struct cp_python *py, struct bin *b, int fd, const char *path)
{
	struct pysyms ps = { NULL, fd, b, 0, false };
	Elf *e;
	uint64_t version;
	bool runtime;

	elf_version(EV_CURRENT);
	if (!(e = elf_begin(fd, ELF_C_READ_MMAP, NULL)))
		return;
	ps.e = e;
	(void)cp_runtime_syms(e, false, "", py_sym, &ps);
	version = ps.version;
	runtime = ps.runtime;
	cp_runtime_loads(e, &b->loads);
	elf_end(e);
	if (!runtime || !b->eval || !b->eval_size)
		return;
	for (size_t i = 0; i < sizeof(layouts) / sizeof(*layouts); i++)
		if ((version >> 24) == layouts[i].major && ((version >> 16) & 0xff) == layouts[i].minor)
			b->lay = &layouts[i];
	if (!b->lay)
		cp_log(py->verb, CP_LOG_INFO,
		       "%s is CPython %u.%u, whose frames cprof does not know: its processes' stacks stay native", path,
		       (unsigned)(version >> 24), (unsigned)((version >> 16) & 0xff));
}

/* cp_rt_bin's look: a new binary (none when it cannot be opened) */
static void look(void *py, void *b, int fd, const char *path)
{
	if (fd >= 0)
		inspect(py, b, fd, path);
}

int cp_python_detect(struct cp_python *py, struct cp_proc *p, struct cp_py_proc *out, uint64_t *eval_lo,
		     uint64_t *eval_hi, unsigned *layout)
{
	for (size_t i = 0; i < p->nmaps; i++) {
		struct cp_map *m = &p->maps[i];
		struct bin *b;
		uint64_t bias;

		if (!m->path || m->path[0] != '/' || !cp_python_named(m->path))
			continue;
		if (!(b = cp_rt_bin(&py->bins, p, m, look, py))) {
			if (errno == ENOMEM)
				return cp_error(ENOMEM, "out of memory looking at %s", m->path);
			continue;
		}
		if (!b->lay || !cp_runtime_bias(&b->loads, m, &bias))
			continue;
		*out = b->lay->bpf;
		out->runtime = b->runtime + bias;
		*eval_lo = b->eval + bias;
		*eval_hi = *eval_lo + b->eval_size;
		*layout = (unsigned)(b->lay - layouts);
		return 1;
	}
	return 0;
}

long cp_python_offset(unsigned major, unsigned minor, const char *field)
{
	for (size_t i = 0; i < sizeof(layouts) / sizeof(*layouts); i++) {
		const struct layout *l = &layouts[i];
		const struct { const char *name; long v; } f[] = {
			{ "runtime.interpreters.head", l->bpf.runtime_interp_head },
			{ "interp.threads.head", l->bpf.interp_threads_head },
			{ "tstate.next", l->bpf.tstate_next },
			{ "tstate.native_thread_id", l->bpf.tstate_native_tid },
			{ "tstate.cframe", l->bpf.tstate_cframe },
			{ "cframe.current_frame", l->bpf.cframe_current_frame },
			{ "frame.f_code", l->bpf.frame_code },
			{ "frame.previous", l->bpf.frame_previous },
			{ "frame.prev_instr", l->bpf.frame_instr },
			{ "frame.is_entry", l->bpf.frame_is_entry },
			{ "frame.owner", l->bpf.frame_owner },
			{ "frame.size", l->bpf.frame_len },
			{ "owner.generator", l->bpf.owner_generator },
			{ "owner.cstack", l->bpf.owner_cstack },
			{ "tstate.current_frame", l->bpf.tstate_current_frame },
			{ "code.co_name", l->co_name },
			{ "code.co_qualname", l->co_qualname },
			{ "code.co_filename", l->co_filename },
			{ "code.co_firstlineno", l->co_firstlineno },
			{ "code.co_linetable", l->co_linetable },
			{ "code._co_firsttraceable", l->co_firsttraceable },
			{ "code.co_code_adaptive", l->co_code_adaptive },
			{ "str.length", l->str_length },
			{ "str.state", l->str_state },
			{ "str.ascii_data", l->str_ascii_data },
			{ "str.compact_data", l->str_compact_data },
			{ "bytes.ob_size", l->bytes_size },
			{ "bytes.ob_sval", l->bytes_data },
		};

		if (l->major != major || l->minor != minor)
			continue;
		for (size_t k = 0; k < sizeof(f) / sizeof(*f); k++)
			if (!strcmp(f[k].name, field))
				return f[k].v == NONE ? -1 : f[k].v;
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

/* A str object's text, as UTF-8 (NULL when it cannot be read or is not compact). */
static char *read_str(uint32_t pid, uint64_t addr, const struct layout *l)
{
	uint8_t h[128];
	uint32_t state;
	uint64_t len;
	unsigned kind;
	uint8_t *raw;
	char *out, *o;

	if (l->str_compact_data > sizeof(h) || !cp_runtime_peek(pid, addr, h, l->str_compact_data))
		return NULL;
	len = u64_at(h, l->str_length);
	memcpy(&state, h + l->str_state, 4);
	kind = (state >> 2) & 7;
	if (len > 4096 || !(state & (1u << 5)) /* compact */ || (kind != 1 && kind != 2 && kind != 4))
		return NULL;
	if (state & (1u << 6)) { /* ascii */
		if (!(out = malloc(len + 1)))
			return NULL;
		if (!cp_runtime_peek(pid, addr + l->str_ascii_data, out, len)) {
			free(out);
			return NULL;
		}
		out[len] = 0;
		return out;
	}
	raw = malloc(len * kind + 1);
	out = malloc(len * 4 + 1);
	if (!raw || !out || !cp_runtime_peek(pid, addr + l->str_compact_data, raw, len * kind)) {
		free(raw);
		free(out);
		return NULL;
	}
	o = out;
	for (uint64_t i = 0; i < len; i++) {
		uint32_t c = kind == 1 ? raw[i] : kind == 2 ? (uint32_t)raw[2 * i] | (uint32_t)raw[2 * i + 1] << 8
							 : (uint32_t)raw[4 * i] | (uint32_t)raw[4 * i + 1] << 8 |
								   (uint32_t)raw[4 * i + 2] << 16 | (uint32_t)raw[4 * i + 3] << 24;

		if (c < 0x80) {
			*o++ = (char)c;
		} else if (c < 0x800) {
			*o++ = (char)(0xc0 | c >> 6);
			*o++ = (char)(0x80 | (c & 0x3f));
		} else if (c < 0x10000) {
			*o++ = (char)(0xe0 | c >> 12);
			*o++ = (char)(0x80 | ((c >> 6) & 0x3f));
			*o++ = (char)(0x80 | (c & 0x3f));
		} else if (c < 0x110000) {
			*o++ = (char)(0xf0 | c >> 18);
			*o++ = (char)(0x80 | ((c >> 12) & 0x3f));
			*o++ = (char)(0x80 | ((c >> 6) & 0x3f));
			*o++ = (char)(0x80 | (c & 0x3f));
		}
	}
	*o = 0;
	free(raw);
	return out;
}

/* A code object, read: c->bad when it cannot be. */
static void read_code(struct code *c, const struct layout *l)
{
	uint8_t h[256], bh[64];
	int32_t first, trace;
	uint64_t tab;

	c->bad = true;
	if (l->co_read > sizeof(h) || !cp_runtime_peek(c->e.pid, c->e.addr, h, l->co_read))
		return;
	memcpy(&first, h + l->co_firstlineno, 4);
	memcpy(&trace, h + l->co_firsttraceable, 4);
	c->name = read_str(c->e.pid, u64_at(h, l->co_qualname), l);
	c->sysname = read_str(c->e.pid, u64_at(h, l->co_name), l);
	c->file = read_str(c->e.pid, u64_at(h, l->co_filename), l);
	if (!c->name || !c->file)
		return;
	tab = u64_at(h, l->co_linetable);
	if (tab && l->bytes_data <= sizeof(bh) && cp_runtime_peek(c->e.pid, tab, bh, l->bytes_data)) {
		uint64_t n = u64_at(bh, l->bytes_size);

		if (n > 0 && n <= (1u << 20) && (c->table = malloc(n)) && cp_runtime_peek(c->e.pid, tab + l->bytes_data, c->table, n))
			c->ntable = n;
	}
	c->first_traceable = trace;
	c->code_start = c->e.addr + l->co_code_adaptive;
	{
		const char *base = strrchr(c->file, '/');

		if (asprintf(&c->label, "%s (%s:%d)", c->name, base ? base + 1 : c->file, (int)first) < 0) {
			c->label = NULL;
			return;
		}
	}
	c->c = (struct cp_py_code){ c->label, c->name, c->sysname ? c->sysname : c->name, c->file, first };
	c->bad = false;
}

const struct cp_py_code *cp_python_code(struct cp_python *py, uint32_t pid, unsigned layout, uint64_t code,
					uint64_t instr, bool generator, int64_t *line, bool *skip)
{
	struct code *c = (struct code *)cp_rt_cache_find(&py->codes, pid, code);
	int64_t at;

	*skip = false;
	*line = -1;
	if (!c) {
		if (!(c = calloc(1, sizeof(*c))))
			return NULL;
		c->e.pid = pid;
		c->e.addr = code;
		read_code(c, &layouts[layout < sizeof(layouts) / sizeof(*layouts) ? layout : 0]);
		if (c->bad) { /* not kept: the memory may hold a code object later */
			code_free(&c->e);
			return NULL;
		}
		if (cp_rt_cache_put(&py->codes, &c->e))
			return NULL;
	}
	/* the instruction last started, in code units (-1: none yet) */
	at = instr >= c->code_start ? (int64_t)((instr - c->code_start) / 2) : -1;
	if (!generator && at < c->first_traceable) {
		*skip = true; /* being set up: not running yet */
		return &c->c;
	}
	*line = cp_python_line(c->table, c->ntable, c->c.first_line, at < 0 ? 0 : at);
	return &c->c;
}

void cp_python_forget(struct cp_python *py, uint32_t pid)
{
	cp_rt_cache_forget(&py->codes, pid);
}

/* ---- the location table (CPython 3.11: Objects/locations.md) ---- */

static bool varint(const uint8_t *t, size_t len, size_t *i, uint64_t *out)
{
	uint64_t v = 0;
	unsigned shift = 0;

	for (;;) {
		if (*i >= len || shift > 60)
			return false;
		v |= (uint64_t)(t[*i] & 63) << shift;
		shift += 6;
		if (!(t[(*i)++] & 64))
			break;
	}
	*out = v;
	return true;
}

static bool svarint(const uint8_t *t, size_t len, size_t *i, int64_t *out)
{
	uint64_t v;

	if (!varint(t, len, i, &v))
		return false;
	*out = v & 1 ? -(int64_t)(v >> 1) : (int64_t)(v >> 1);
	return true;
}

int64_t cp_python_line(const uint8_t *t, size_t len, int64_t first_line, int64_t at)
{
	int64_t line = first_line, addr = 0;
	size_t i = 0;

	while (i < len) {
		uint8_t b = t[i++];
		unsigned code = (b >> 3) & 15, units = (b & 7) + 1;
		int64_t delta = 0, this_line;
		uint64_t skip;

		if (!(b & 128))
			return -1; /* not the start of an entry: a table this does not read */
		if (code == 15) { /* no location */
			this_line = -1;
		} else if (code == 14) { /* long form */
			if (!svarint(t, len, &i, &delta) || !varint(t, len, &i, &skip) || !varint(t, len, &i, &skip) ||
			    !varint(t, len, &i, &skip))
				return -1;
			if (__builtin_add_overflow(line, delta, &line))
				return -1; /* no real table gets there */
			this_line = line;
		} else if (code == 13) { /* no column */
			if (!svarint(t, len, &i, &delta) || __builtin_add_overflow(line, delta, &line))
				return -1;
			this_line = line;
		} else if (code >= 10) { /* one line: the delta is in the code, two column bytes */
			if (__builtin_add_overflow(line, (int64_t)code - 10, &line))
				return -1;
			i += 2;
			this_line = line;
		} else { /* short: the same line, one column byte */
			i += 1;
			this_line = line;
		}
		if (at < addr + units)
			return this_line;
		addr += units;
	}
	return -1;
}

/* ---- the runtime's row (lib/sampling/runtime.h) ---- */

static void *rt_new(const char *verb)
{
	return cp_python_new(verb);
}

static void rt_free(void *st)
{
	cp_python_free(st);
}

static int rt_detect(void *st, struct cp_proc *p, void *data, struct cp_rt_found *f)
{
	struct cp_py_proc pp;
	int yes = cp_python_detect(st, p, &pp, &f->entry_lo, &f->entry_hi, &f->layout);

	if (yes > 0)
		memcpy(data, &pp, sizeof(pp));
	return yes;
}

static int rt_frame(void *st, uint32_t pid, unsigned layout, const struct cp_rt_frame *fr, struct cp_rt_name *out)
{
	const struct cp_py_code *c;
	bool skip;

	c = cp_python_code(st, pid, layout, fr->addr & ~7ull, fr->data, fr->addr & CP_PY_GENERATOR, &out->line, &skip);
	if (skip)
		return 1;
	if (!c)
		return -1;
	out->label = c->label;
	out->name = c->name;
	out->sysname = c->sysname;
	out->file = c->file;
	out->first_line = c->first_line;
	return 0;
}

static void rt_forget(void *st, uint32_t pid)
{
	cp_python_forget(st, pid);
}

const struct cp_runtime cp_runtime_python = {
	.name = "python",
	.id = CP_RT_ID_python,
	.new = rt_new,
	.free = rt_free,
	.named = cp_python_named,
	.detect = rt_detect,
	.frame = rt_frame,
	.forget = rt_forget,
};

/* SPDX-License-Identifier: MIT */
/* V8 frames: detection and naming (see v8.h, docs/internals/v8.md). */
#include "v8.h"

#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "../../../../bpf/runtimes.h"
#include "../../../error.h"
#include "../../../index.h"
#include "../../../log.h"
#include "../../../util.h"
#include "../../unwind.h"

/* ---- the constants a layout is made of ---- */

enum {
	FP_FUNCTION,
	FP_BYTECODE,
	HO_MAP,
	MAP_TYPE,
	JSF_SHARED,
	SFI_NAME,
	SFI_SCRIPT,
	SCRIPT_NAME,
	SCRIPT_SOURCE,
	SCRIPT_LINE_ENDS,
	STR_LENGTH,
	SEQ1_CHARS,
	SEQ2_CHARS,
	CONS_FIRST,
	CONS_SECOND,
	THIN_ACTUAL,
	SLICED_PARENT,
	SLICED_OFFSET,
	FA_LENGTH,
	FA_DATA,
	T_JSFUNCTION,
	T_JSFUNCTION_FIRST,
	T_JSFUNCTION_LAST,
	T_SFI,
	T_SCRIPT,
	T_SCOPEINFO,
	T_FIXEDARRAY,
	FIRST_NONSTRING,
	REPR_MASK,
	ENC_MASK,
	SEQ_TAG,
	CONS_TAG,
	SLICED_TAG,
	THIN_TAG,
	ONEBYTE_TAG,
	SI_FIRST_VARS,
	SI_NCONTEXTLOCALS,
	EXT_TAG,
	EXT_RESOURCE,
	NCONST
};

/* name (a prefix when it ends in "__": the field's type is left out, as it
 * changes between versions; names a version renamed are separated by "|"),
 * and whether a layout needs it */
static const struct {
	const char *name;
	bool need;
} consts[NCONST] = {
	[FP_FUNCTION] = { "off_fp_function", true },
	[FP_BYTECODE] = { "off_fp_bytecode_array", false },
	[HO_MAP] = { "class_HeapObject__map__", true },
	[MAP_TYPE] = { "class_Map__instance_type__", true },
	[JSF_SHARED] = { "class_JSFunction__shared__", true },
	[SFI_NAME] = { "class_SharedFunctionInfo__name_or_scope_info__", true },
	[SFI_SCRIPT] = { "class_SharedFunctionInfo__script_or_debug_info__|class_SharedFunctionInfo__script__", false },
	[SCRIPT_NAME] = { "class_Script__name__", true },
	[SCRIPT_SOURCE] = { "class_Script__source__", false },
	[SCRIPT_LINE_ENDS] = { "class_Script__line_ends__", false },
	[STR_LENGTH] = { "class_String__length__", true },
	[SEQ1_CHARS] = { "class_SeqOneByteString__chars__", true },
	[SEQ2_CHARS] = { "class_SeqTwoByteString__chars__", false },
	[CONS_FIRST] = { "class_ConsString__first__", false },
	[CONS_SECOND] = { "class_ConsString__second__", false },
	[THIN_ACTUAL] = { "class_ThinString__actual__", false },
	[SLICED_PARENT] = { "class_SlicedString__parent__", false },
	[SLICED_OFFSET] = { "class_SlicedString__offset__", false },
	[FA_LENGTH] = { "class_FixedArrayBase__length__", false },
	[FA_DATA] = { "class_FixedArray__data__", false },
	[T_JSFUNCTION] = { "type_JSFunction__JS_FUNCTION_TYPE", true },
	[T_JSFUNCTION_FIRST] = { "FirstJSFunctionType", false },
	[T_JSFUNCTION_LAST] = { "LastJSFunctionType", false },
	[T_SFI] = { "type_SharedFunctionInfo__SHARED_FUNCTION_INFO_TYPE", true },
	[T_SCRIPT] = { "type_Script__SCRIPT_TYPE", true },
	[T_SCOPEINFO] = { "type_ScopeInfo__SCOPE_INFO_TYPE", true },
	[T_FIXEDARRAY] = { "type_FixedArray__FIXED_ARRAY_TYPE", false },
	[FIRST_NONSTRING] = { "FirstNonstringType", true },
	[REPR_MASK] = { "StringRepresentationMask", true },
	[ENC_MASK] = { "StringEncodingMask", true },
	[SEQ_TAG] = { "SeqStringTag", true },
	[CONS_TAG] = { "ConsStringTag", false },
	[SLICED_TAG] = { "SlicedStringTag", false },
	[THIN_TAG] = { "ThinStringTag", false },
	[ONEBYTE_TAG] = { "OneByteStringTag", true },
	[SI_FIRST_VARS] = { "scopeinfo_idx_first_vars", true },
	[SI_NCONTEXTLOCALS] = { "scopeinfo_idx_ncontextlocals", true },
	[EXT_TAG] = { "ExternalStringTag", false },
	[EXT_RESOURCE] = { "class_ExternalString__resource__", false },
};

struct layout {
	int32_t c[NCONST];
	bool have[NCONST];
};

#define LAYOUTS_MAX 16
#define FN_BUCKETS 4096
#define FN_MAX 65536     /* functions kept; past it the cache starts over */
#define MAPS_BITS 12     /* the map -> type cache */
#define SCRIPTS_MAX 64   /* line ends kept */
#define NAME_MAX_LEN 512 /* a name or a file, cut there */
#define SOURCE_MAX (8u << 20) /* code units of a source read for its line ends */
#define SCOPE_SLOTS 64
/* A function named from its SharedFunctionInfo is given again from the
 * JSFunction's pointer to it for this many calls before its fields are read
 * again (reading the function is half the cost of a frame) */
#define CHECK_EVERY 32
#define OBJ_READ 264 /* the most read of an object at a time: a field at <= 256, and its word */
/* A frame's SharedFunctionInfo, known from its JSFunction, its pc and its
 * bytecode array slot (all three the same: the same function; a pc in
 * optimized code is its function's, an interpreted frame's bytecode array
 * is its function's), is given again for CHECK_EVERY calls without reading
 * the JSFunction: a caller's frame, the same sample after sample, costs no
 * read then */
#define FRAMES_BITS 12

/* a binary looked at */
struct bin {
	char *key;  /* (cp_rt_bins') */
	int layout; /* -1: not a V8 this knows */
};

/* a function: what a SharedFunctionInfo names */
struct fn {
	struct fn *next;
	uint32_t pid;
	uint64_t sfi, name_or_scope, script; /* its address, and the fields it was read from */
	char *label, *name, *file;
	int64_t line;
	uint64_t key;     /* its serial number (never 0, never again) */
	uint64_t checked; /* the call (cp_v8.calls) its fields were last read in */
};

/* a script's line ends (code-unit offsets of its line breaks) */
struct script {
	uint32_t pid;
	uint64_t addr, source;
	uint32_t *ends;
	size_t n;
	bool read;
};

struct cp_v8 {
	const char *verb;
	struct layout layouts[LAYOUTS_MAX];
	size_t nlayouts;
	struct cp_rt_bins bins;
	struct fn *buckets[FN_BUCKETS];
	size_t nfn;
	uint64_t serial, calls;
	struct { uint32_t pid; uint16_t type; uint64_t addr; } maps[1u << MAPS_BITS];
	struct { uint32_t pid; uint64_t fun, pc, slot, sfi, checked; } frames[1u << FRAMES_BITS];
	struct script scripts[SCRIPTS_MAX];
	size_t nextscript;
	/* a sample's objects being read (cp_v8_frames): their addresses, frames,
	 * whether read, and what was read */
	uint64_t objs[CP_USER_FRAMES_MAX];
	uint64_t slot[CP_USER_FRAMES_MAX]; /* (the JSFunctions': their frame's bytecode array slot) */
	int idx[CP_USER_FRAMES_MAX];
	bool ok[CP_USER_FRAMES_MAX];
	uint8_t buf[CP_USER_FRAMES_MAX * OBJ_READ];
};

struct cp_v8 *cp_v8_new(const char *verb)
{
	struct cp_v8 *v = calloc(1, sizeof(*v));

	if (v) {
		v->verb = verb;
		v->bins.size = sizeof(struct bin);
	}
	return v;
}

static void fn_free(struct fn *f)
{
	free(f->label);
	free(f->name);
	free(f->file);
	free(f);
}

static void fns_clear(struct cp_v8 *v)
{
	for (size_t i = 0; i < FN_BUCKETS; i++) {
		struct fn *f = v->buckets[i], *n;

		for (; f; f = n) {
			n = f->next;
			fn_free(f);
		}
		v->buckets[i] = NULL;
	}
	v->nfn = 0;
}

void cp_v8_free(struct cp_v8 *v)
{
	if (!v)
		return;
	fns_clear(v);
	cp_rt_bins_fini(&v->bins);
	for (size_t i = 0; i < SCRIPTS_MAX; i++)
		free(v->scripts[i].ends);
	free(v);
}

void cp_v8_forget(struct cp_v8 *v, uint32_t pid)
{
	for (size_t i = 0; i < FN_BUCKETS; i++) {
		struct fn **pp = &v->buckets[i];

		while (*pp) {
			struct fn *f = *pp;

			if (f->pid == pid) {
				*pp = f->next;
				fn_free(f);
				v->nfn--;
			} else {
				pp = &f->next;
			}
		}
	}
	for (size_t i = 0; i < (1u << MAPS_BITS); i++)
		if (v->maps[i].pid == pid)
			v->maps[i].addr = 0;
	for (size_t i = 0; i < (1u << FRAMES_BITS); i++)
		if (v->frames[i].pid == pid)
			v->frames[i].pid = 0;
	for (size_t i = 0; i < SCRIPTS_MAX; i++)
		if (v->scripts[i].pid == pid) {
			free(v->scripts[i].ends);
			memset(&v->scripts[i], 0, sizeof(v->scripts[i]));
		}
}

/* ---- layouts and detection ---- */

/* Is name one of the alternatives of want (see consts)? */
static bool const_named(const char *want, const char *name)
{
	while (*want) {
		const char *bar = strchr(want, '|');
		size_t len = bar ? (size_t)(bar - want) : strlen(want);
		bool prefix = len > 2 && want[len - 2] == '_' && want[len - 1] == '_';

		if (prefix ? !strncmp(name, want, len) : strlen(name) == len && !strncmp(name, want, len))
			return true;
		want += len + (bar != NULL);
	}
	return false;
}

int cp_v8_layout(struct cp_v8 *v, const char *const *names, const int32_t *values, size_t n)
{
	struct layout l;

	memset(&l, 0, sizeof(l));
	for (size_t i = 0; i < n; i++)
		for (size_t k = 0; k < NCONST; k++)
			if (!l.have[k] && const_named(consts[k].name, names[i])) {
				l.c[k] = values[i];
				l.have[k] = true;
			}
	for (size_t k = 0; k < NCONST; k++)
		if (consts[k].need && !l.have[k])
			return -1;
	/* offsets read here stay inside what is read of an object */
	/* an external string's resource is its first field after String's
	 * (where a sequential string's characters start) when not said */
	if (!l.have[EXT_RESOURCE]) {
		l.c[EXT_RESOURCE] = l.c[SEQ1_CHARS];
		l.have[EXT_RESOURCE] = true;
	}
	for (size_t k = HO_MAP; k <= FA_DATA; k++)
		if (l.c[k] < 0 || l.c[k] > 256)
			return -1;
	if (l.c[EXT_RESOURCE] < 0 || l.c[EXT_RESOURCE] > 256)
		return -1;
	if (l.c[FP_FUNCTION] < -256 || l.c[FP_FUNCTION] > 256 || (l.c[FP_FUNCTION] & 7))
		return -1;
	if (l.have[FP_BYTECODE] && (l.c[FP_BYTECODE] < -256 || l.c[FP_BYTECODE] > 256 || (l.c[FP_BYTECODE] & 7)))
		l.have[FP_BYTECODE] = false;
	for (size_t i = 0; i < v->nlayouts; i++)
		if (!memcmp(&v->layouts[i], &l, sizeof(l)))
			return (int)i;
	if (v->nlayouts == LAYOUTS_MAX)
		return -1;
	v->layouts[v->nlayouts] = l;
	return (int)v->nlayouts++;
}

bool cp_v8_named(const char *path)
{
	const char *b = strrchr(path, '/');

	b = b ? b + 1 : path;
	return !strcmp(b, "node") || !strcmp(b, "nodejs") || !strncmp(b, "libnode.so", 10);
}

/* The layout of the binary open on fd (its v8dbg_ symbols, in .dynsym or
 * .symtab), -1 when it has none this can use; -ENOMEM. */
/* the v8dbg_ constants of a binary, as cp_runtime_syms finds them */
struct dbgs {
	Elf *e;
	int fd;
	const char **names;
	int32_t *values;
	size_t n, ncap, vcap;
};

static bool dbg_sym(void *ctx, const char *name, const GElf_Sym *sym)
{
	struct dbgs *d = ctx;
	int32_t val;

	if (!cp_runtime_sym_read(d->e, d->fd, sym, &val, 4))
		return true;
	if (cp_grow((void **)&d->names, &d->ncap, d->n + 1, sizeof(*d->names)) ||
	    cp_grow((void **)&d->values, &d->vcap, d->n + 1, sizeof(*d->values)))
		return false;
	d->names[d->n] = name + 6;
	d->values[d->n++] = val;
	return true;
}

static int inspect(struct cp_v8 *v, int fd, const char *path)
{
	struct dbgs d = { 0 };
	int got = -1;

	elf_version(EV_CURRENT);
	if (!(d.e = elf_begin(fd, ELF_C_READ_MMAP, NULL)))
		return -1;
	d.fd = fd;
	if (!cp_runtime_syms(d.e, true, "v8dbg_", dbg_sym, &d))
		got = -ENOMEM;
	else if (d.n > 0 && (got = cp_v8_layout(v, d.names, d.values, d.n)) == -1)
		cp_log(v->verb, CP_LOG_INFO,
		       "%s is a V8 without the constants cprof reads (v8dbg_*): its processes' JavaScript frames stay native",
		       path);
	elf_end(d.e);
	free(d.names);
	free(d.values);
	return got;
}

/* The layout of mapping m's binary, looked at once per build id and path:
 * -1 when none; -ENOMEM */
/* cp_rt_bin's look: a new binary's layout (-1: none, or it cannot be opened; -ENOMEM) */
static void look(void *v, void *bin, int fd, const char *path)
{
	((struct bin *)bin)->layout = fd >= 0 ? inspect(v, fd, path) : -1;
}

static int bin_layout(struct cp_v8 *v, struct cp_proc *p, struct cp_map *m)
{
	struct bin *b = cp_rt_bin(&v->bins, p, m, look, v);

	if (!b)
		return errno == ENOMEM ? cp_error(ENOMEM, "out of memory looking at %s", m->path) : -1;
	if (b->layout == -ENOMEM) { /* (said by inspect) */
		b->layout = -1;
		return cp_error(ENOMEM, "out of memory looking at %s", m->path);
	}
	return b->layout;
}

int cp_v8_detect(struct cp_v8 *v, struct cp_proc *p, unsigned *layout)
{
	for (size_t i = 0; i < p->nmaps; i++) {
		struct cp_map *m = &p->maps[i];
		int l;

		if (!m->path || m->path[0] != '/' || !cp_v8_named(m->path))
			continue;
		if ((l = bin_layout(v, p, m)) == -ENOMEM)
			return cp_error(ENOMEM, "out of memory looking at %s", m->path);
		if (l >= 0) {
			*layout = (unsigned)l;
			return 1;
		}
	}
	return 0;
}

/* ---- reading the process ---- */

/* n bytes at addr of process pid: how many were read (0 on failure) */
static size_t rd_part(uint32_t pid, uint64_t addr, void *buf, size_t n)
{
	struct iovec local = { buf, n }, remote = { (void *)(uintptr_t)addr, n };
	ssize_t got = process_vm_readv((pid_t)pid, &local, 1, &remote, 1, 0);

	return got > 0 ? (size_t)got : 0;
}

static bool rd(uint32_t pid, uint64_t addr, void *buf, size_t n)
{
	return rd_part(pid, addr, buf, n) == n;
}

static uint64_t word_at(const uint8_t *b, int32_t off)
{
	uint64_t w;

	memcpy(&w, b + off, 8);
	return w;
}

static bool is_heap(uint64_t w)
{
	return (w & 3) == 1 && w > 4096;
}

static bool is_smi(uint64_t w)
{
	return (w & 1) == 0;
}

static int64_t smi(uint64_t w)
{
	return (int64_t)w >> 32;
}

/* the instance type of heap object obj (tagged), from its map: -1 when it
 * cannot be read */
static int map_type(struct cp_v8 *v, uint32_t pid, const struct layout *l, uint64_t map);

static int type_of(struct cp_v8 *v, uint32_t pid, const struct layout *l, uint64_t obj)
{
	uint64_t map;

	if (!is_heap(obj) || !rd(pid, obj - 1 + (uint64_t)l->c[HO_MAP], &map, 8))
		return -1;
	return map_type(v, pid, l, map);
}

/* the instance type a map (tagged) gives its objects, -1 when it cannot be read */
static int map_type(struct cp_v8 *v, uint32_t pid, const struct layout *l, uint64_t map)
{
	uint16_t t;
	size_t h;

	if (!is_heap(map))
		return -1;
	h = (size_t)(cp_hash_u64(map, pid) & ((1u << MAPS_BITS) - 1));
	if (v->maps[h].addr == map && v->maps[h].pid == pid)
		return v->maps[h].type;
	if (!rd(pid, map - 1 + (uint64_t)l->c[MAP_TYPE], &t, 2))
		return -1;
	v->maps[h].pid = pid;
	v->maps[h].addr = map;
	v->maps[h].type = t;
	return t;
}

/* A string's code units, appended to *buf (units of 1 or 2 bytes as read,
 * made UTF-8 for names; max: of the whole), for string s (tagged).  false
 * when it cannot be read or is not a string of a kind this reads. */
struct sbuf {
	uint16_t *u; /* code units */
	size_t n, cap, max;
	unsigned parts; /* strings read into it (a cons string's parts each) */
};

static bool sbuf_put(struct sbuf *b, const void *units, size_t n, bool one_byte)
{
	if (b->n + n > b->max)
		n = b->max - b->n;
	if (cp_grow((void **)&b->u, &b->cap, b->n + n + 1, sizeof(*b->u)))
		return false;
	for (size_t i = 0; i < n; i++) {
		uint16_t c;

		if (one_byte) {
			c = ((const uint8_t *)units)[i];
		} else {
			memcpy(&c, (const uint8_t *)units + 2 * i, 2);
		}
		b->u[b->n++] = c;
	}
	return true;
}

/* len characters (of 1 or 2 bytes) at address at, appended to b */
static bool chars_at(uint32_t pid, uint64_t at, uint64_t len, bool one, struct sbuf *b)
{
	uint8_t chunk[4096];
	size_t unit = one ? 1 : 2;

	if (len > b->max - b->n)
		len = b->max - b->n;
	while (len) {
		size_t k = len * unit > sizeof(chunk) ? sizeof(chunk) / unit : (size_t)len;

		if (!rd(pid, at, chunk, k * unit) || !sbuf_put(b, chunk, k, one))
			return false;
		at += k * unit;
		len -= k;
	}
	return true;
}

static bool read_string(struct cp_v8 *v, uint32_t pid, const struct layout *l, uint64_t s, uint64_t from,
			uint64_t len, struct sbuf *b, int depth)
{
	int t = type_of(v, pid, l, s);
	uint32_t slen;
	unsigned repr;
	bool one;

	if (t < 0 || t >= l->c[FIRST_NONSTRING] || depth > 16 || ++b->parts > 4096)
		return false; /* a string made of too many parts: not read */
	if (!rd(pid, s - 1 + (uint64_t)l->c[STR_LENGTH], &slen, 4) || from > slen)
		return false;
	if (len > slen - from)
		len = slen - from;
	repr = (unsigned)t & (unsigned)l->c[REPR_MASK];
	one = ((unsigned)t & (unsigned)l->c[ENC_MASK]) == (unsigned)l->c[ONEBYTE_TAG];
	if (repr == (unsigned)l->c[SEQ_TAG]) {
		if (!one && !l->have[SEQ2_CHARS])
			return false;
		return chars_at(pid, s - 1 + (uint64_t)(one ? l->c[SEQ1_CHARS] : l->c[SEQ2_CHARS]) + from * (one ? 1 : 2),
				len, one, b);
	}
	if (l->have[CONS_TAG] && l->have[CONS_FIRST] && l->have[CONS_SECOND] && repr == (unsigned)l->c[CONS_TAG]) {
		uint64_t first, second;
		uint32_t flen;

		if (!rd(pid, s - 1 + (uint64_t)l->c[CONS_FIRST], &first, 8) ||
		    !rd(pid, s - 1 + (uint64_t)l->c[CONS_SECOND], &second, 8) ||
		    !rd(pid, first - 1 + (uint64_t)l->c[STR_LENGTH], &flen, 4))
			return false;
		if (from < flen && !read_string(v, pid, l, first, from, len, b, depth + 1))
			return false;
		if (from + len > flen && b->n < b->max)
			return read_string(v, pid, l, second, from > flen ? from - flen : 0,
					   from + len - (from > flen ? from : flen), b, depth + 1);
		return true;
	}
	if (l->have[THIN_TAG] && l->have[THIN_ACTUAL] && repr == (unsigned)l->c[THIN_TAG]) {
		uint64_t actual;

		return rd(pid, s - 1 + (uint64_t)l->c[THIN_ACTUAL], &actual, 8) &&
		       read_string(v, pid, l, actual, from, len, b, depth + 1);
	}
	if (l->have[SLICED_TAG] && l->have[SLICED_PARENT] && l->have[SLICED_OFFSET] &&
	    repr == (unsigned)l->c[SLICED_TAG]) {
		uint64_t parent, off;

		return rd(pid, s - 1 + (uint64_t)l->c[SLICED_PARENT], &parent, 8) &&
		       rd(pid, s - 1 + (uint64_t)l->c[SLICED_OFFSET], &off, 8) && is_smi(off) && smi(off) >= 0 &&
		       read_string(v, pid, l, parent, from + (uint64_t)smi(off), len, b, depth + 1);
	}
	/* an external string's characters are outside the heap: V8 keeps a
	 * pointer to them after the resource, unless the string is of the
	 * uncached kind (kUncachedExternalStringTag, 1 << 4) */
	if (l->have[EXT_TAG] && repr == (unsigned)l->c[EXT_TAG] && !(t & 0x10)) {
		uint64_t data;

		if (!rd(pid, s - 1 + (uint64_t)l->c[EXT_RESOURCE] + 8, &data, 8) || !data)
			return false;
		return chars_at(pid, data + from * (one ? 1 : 2), len, one, b);
	}
	return false; /* others */
}

/* string s as UTF-8 (malloc'ed), cut at NAME_MAX_LEN; NULL when it cannot be read */
static char *string_utf8(struct cp_v8 *v, uint32_t pid, const struct layout *l, uint64_t s)
{
	struct sbuf b = { NULL, 0, 0, NAME_MAX_LEN, 0 };
	char *out, *o;

	if (!read_string(v, pid, l, s, 0, NAME_MAX_LEN, &b, 0)) {
		free(b.u);
		return NULL;
	}
	if (!(out = malloc(b.n * 3 + 1))) {
		free(b.u);
		return NULL;
	}
	o = out;
	for (size_t i = 0; i < b.n; i++) {
		uint16_t c = b.u[i];

		if (c < 0x20 || (c >= 0xd800 && c < 0xe000)) {
			*o++ = '?'; /* control characters, halves of surrogate pairs */
		} else if (c < 0x80) {
			*o++ = (char)c;
		} else if (c < 0x800) {
			*o++ = (char)(0xc0 | (c >> 6));
			*o++ = (char)(0x80 | (c & 0x3f));
		} else {
			*o++ = (char)(0xe0 | (c >> 12));
			*o++ = (char)(0x80 | ((c >> 6) & 0x3f));
			*o++ = (char)(0x80 | (c & 0x3f));
		}
	}
	*o = 0;
	free(b.u);
	return out;
}

/* From a ScopeInfo (tagged): the function's name (malloc'ed, or NULL) and
 * the start of the function in its source (-1: not found).  Its layout has
 * no constants past the context locals; as the OpenTelemetry profiler
 * documents, the first string after them is the name, and the first two Smis
 * in rising order after that are the function's start and end. */
static char *scope_info(struct cp_v8 *v, uint32_t pid, const struct layout *l, uint64_t si, int64_t *start)
{
	uint64_t slots[SCOPE_SLOTS], prev = 1;
	size_t got = rd_part(pid, si - 1 + 8, slots, sizeof(slots)) / 8;
	int64_t nctx;
	char *name = NULL;
	size_t i;

	*start = -1;
	if (got <= (size_t)l->c[SI_NCONTEXTLOCALS] || !is_smi(slots[l->c[SI_NCONTEXTLOCALS]]))
		return NULL;
	nctx = smi(slots[l->c[SI_NCONTEXTLOCALS]]);
	if (nctx < 0 || nctx > SCOPE_SLOTS)
		return NULL;
	for (i = (size_t)l->c[SI_FIRST_VARS] + 2 * (size_t)nctx; i < got; i++) {
		uint64_t w = slots[i];
		int t;

		if ((!name || !*name) && is_heap(w) && (t = type_of(v, pid, l, w)) >= 0 && t < l->c[FIRST_NONSTRING]) {
			/* an empty one (an anonymous function) may be followed by
			 * the name V8 inferred ("Module._load") */
			free(name);
			name = string_utf8(v, pid, l, w);
		} else if (name && is_smi(w) && is_smi(prev) && smi(prev) >= 0 && smi(prev) < smi(w)) {
			*start = smi(prev);
			break;
		}
		prev = w;
	}
	return name;
}

/* the script (tagged) kept for its line ends, read once */
static struct script *script_of(struct cp_v8 *v, uint32_t pid, const struct layout *l, uint64_t addr)
{
	uint64_t source = 0, ends = 0;
	struct script *sc;

	if (l->have[SCRIPT_SOURCE])
		(void)rd(pid, addr - 1 + (uint64_t)l->c[SCRIPT_SOURCE], &source, 8);
	for (size_t i = 0; i < SCRIPTS_MAX; i++)
		if (v->scripts[i].read && v->scripts[i].pid == pid && v->scripts[i].addr == addr &&
		    v->scripts[i].source == source)
			return &v->scripts[i];
	sc = &v->scripts[v->nextscript++ % SCRIPTS_MAX];
	free(sc->ends);
	memset(sc, 0, sizeof(*sc));
	sc->pid = pid;
	sc->addr = addr;
	sc->source = source;
	sc->read = true;
	/* the line ends V8 made (once a stack trace needed them) */
	if (l->have[SCRIPT_LINE_ENDS] && l->have[T_FIXEDARRAY] && l->have[FA_LENGTH] && l->have[FA_DATA] &&
	    rd(pid, addr - 1 + (uint64_t)l->c[SCRIPT_LINE_ENDS], &ends, 8) &&
	    type_of(v, pid, l, ends) == l->c[T_FIXEDARRAY]) {
		uint64_t len;

		if (rd(pid, ends - 1 + (uint64_t)l->c[FA_LENGTH], &len, 8) && is_smi(len) && smi(len) > 0 &&
		    smi(len) < (1 << 22)) {
			size_t n = (size_t)smi(len);
			uint64_t *w = malloc(n * 8);

			if (w && (sc->ends = malloc(n * sizeof(*sc->ends))) &&
			    rd(pid, ends - 1 + (uint64_t)l->c[FA_DATA], w, n * 8)) {
				for (size_t i = 0; i < n; i++)
					sc->ends[i] = is_smi(w[i]) && smi(w[i]) >= 0 ? (uint32_t)smi(w[i]) : 0;
				sc->n = n;
			}
			free(w);
			if (sc->n)
				return sc;
			free(sc->ends);
			sc->ends = NULL;
		}
	}
	/* else from the source */
	if (source) {
		struct sbuf b = { NULL, 0, 0, SOURCE_MAX, 0 };
		size_t cap = 0;

		if (read_string(v, pid, l, source, 0, SOURCE_MAX, &b, 0))
			for (size_t i = 0; i < b.n; i++)
				if (b.u[i] == '\n') {
					if (cp_grow((void **)&sc->ends, &cap, sc->n + 1, sizeof(*sc->ends)))
						break;
					sc->ends[sc->n++] = (uint32_t)i;
				}
		free(b.u);
	}
	return sc;
}

/* the line (1-based) of source position pos, 0 when not known */
static int64_t line_of(const struct script *sc, int64_t pos)
{
	size_t lo = 0, hi;

	if (!sc || !sc->ends || pos < 0)
		return 0;
	hi = sc->n;
	while (lo < hi) { /* the first line end at or after pos */
		size_t mid = lo + (hi - lo) / 2;

		if (sc->ends[mid] < pos)
			lo = mid + 1;
		else
			hi = mid;
	}
	return (int64_t)lo + 1;
}

/* the function last named from SharedFunctionInfo sfi (tagged) of process
 * pid, if its fields were read in the last CHECK_EVERY calls */
static struct fn *function_known(struct cp_v8 *v, uint32_t pid, uint64_t sfi)
{
	for (struct fn *f = v->buckets[cp_hash_u64(sfi, pid) % FN_BUCKETS]; f; f = f->next)
		if (f->pid == pid && f->sfi == sfi) /* the newest first */
			return v->calls - f->checked < CHECK_EVERY ? f : NULL;
	return NULL;
}

/* the function of SharedFunctionInfo sfi (tagged), whose name and script
 * fields hold nos and script: kept, else read */
static struct fn *function_of(struct cp_v8 *v, uint32_t pid, const struct layout *l, uint64_t sfi, uint64_t nos,
			      uint64_t script)
{
	size_t h = (size_t)(cp_hash_u64(sfi, pid) % FN_BUCKETS);
	struct fn *f;
	char *name = NULL, *file = NULL;
	int64_t start = -1;
	int t;
	const char *base;

	for (f = v->buckets[h]; f; f = f->next)
		if (f->pid == pid && f->sfi == sfi && f->name_or_scope == nos && f->script == script) {
			f->checked = v->calls;
			return f;
		}
	t = type_of(v, pid, l, nos);
	if (t == l->c[T_SCOPEINFO])
		name = scope_info(v, pid, l, nos, &start);
	else if (t >= 0 && t < l->c[FIRST_NONSTRING])
		name = string_utf8(v, pid, l, nos);
	if (type_of(v, pid, l, script) == l->c[T_SCRIPT]) {
		uint64_t sname;

		if (rd(pid, script - 1 + (uint64_t)l->c[SCRIPT_NAME], &sname, 8))
			file = string_utf8(v, pid, l, sname);
	} else {
		script = 0;
	}
	if (!(f = calloc(1, sizeof(*f))))
		goto oom;
	f->pid = pid;
	f->sfi = sfi;
	f->key = ++v->serial;
	f->checked = v->calls;
	f->name_or_scope = nos;
	f->script = script;
	f->name = name && *name ? name : strdup("(anonymous)");
	if (name && !*name)
		free(name);
	name = NULL;
	f->file = file ? file : strdup("");
	file = NULL;
	if (!f->name || !f->file)
		goto oom;
	f->line = script && start >= 0 ? line_of(script_of(v, pid, l, script), start) : 0;
	base = strrchr(f->file, '/');
	base = base ? base + 1 : f->file;
	if (asprintf(&f->label, *base ? "%s (%s:%lld)" : "%s", f->name, base, (long long)f->line) < 0) {
		f->label = NULL;
		goto oom;
	}
	f->next = v->buckets[h];
	v->buckets[h] = f;
	v->nfn++;
	return f;
oom:
	free(name);
	free(file);
	if (f)
		fn_free(f);
	return NULL;
}

/* what a frame of function f is called */
static struct cp_rt_name rt_name(const struct fn *f)
{
	return (struct cp_rt_name){ .label = f->label, .name = f->name, .sysname = f->name, .file = f->file,
				    .first_line = f->line, .line = f->line, .key = f->key };
}

/* the frames memo's entry for a frame of JSFunction fun at pc with slot */
static size_t frame_at(uint32_t pid, uint64_t fun, uint64_t pc, uint64_t slot)
{
	return cp_hash_u64(fun ^ pc * 0x9e3779b97f4a7c15ull ^ slot * 0xc2b2ae3d27d4eb4full, pid) &
	       ((1u << FRAMES_BITS) - 1);
}

/* the function of a frame whose JSFunction, pc and bytecode array slot are
 * fun, pc and slot, when such a frame was named in the last CHECK_EVERY
 * calls and its function is still known (function_known), else NULL */
static struct fn *frame_known(struct cp_v8 *v, uint32_t pid, uint64_t fun, uint64_t pc, uint64_t slot)
{
	size_t h = frame_at(pid, fun, pc, slot);

	if (v->frames[h].pid != pid || v->frames[h].fun != fun || v->frames[h].pc != pc ||
	    v->frames[h].slot != slot || v->calls - v->frames[h].checked >= CHECK_EVERY)
		return NULL;
	return function_known(v, pid, v->frames[h].sfi);
}

/* such a frame's SharedFunctionInfo, read from its JSFunction now */
static void frame_keep(struct cp_v8 *v, uint32_t pid, uint64_t fun, uint64_t pc, uint64_t slot, uint64_t sfi)
{
	size_t h = frame_at(pid, fun, pc, slot);

	v->frames[h].pid = pid;
	v->frames[h].fun = fun;
	v->frames[h].pc = pc;
	v->frames[h].slot = slot;
	v->frames[h].sfi = sfi;
	v->frames[h].checked = v->calls;
}

/* Reads the n objects objs[i] (tagged), size bytes of each from its start,
 * into v->buf at i * OBJ_READ, in one call where it can (a sample's frames
 * cost two calls, not two per frame); ok[i] says which were read. */
static void rd_objects(struct cp_v8 *v, uint32_t pid, size_t n, size_t size)
{
	struct iovec local[CP_USER_FRAMES_MAX], remote[CP_USER_FRAMES_MAX];
	size_t start = 0;

	for (size_t i = 0; i < n; i++) {
		local[i] = (struct iovec){ v->buf + i * OBJ_READ, size };
		remote[i] = (struct iovec){ (void *)(uintptr_t)(v->objs[i] - 1), size };
		v->ok[i] = false;
	}
	while (start < n) { /* past one that cannot be read, the rest again */
		ssize_t got = process_vm_readv((pid_t)pid, local + start, n - start, remote + start, n - start, 0);
		size_t whole = got > 0 ? (size_t)got / size : 0;

		for (size_t i = 0; i < whole; i++)
			v->ok[start + i] = true;
		start += whole + 1;
	}
}

int cp_v8_frames(struct cp_v8 *v, uint32_t pid, unsigned layout, const struct cp_sample_rec *s,
		 const uint64_t *pcs, const uint64_t *fps, int n, struct cp_rt_name *out)
{
	const struct layout *l;
	size_t k = 0, m = 0, jsize, ssize;
	int named = 0;

	for (int i = 0; i < n; i++)
		out[i].label = NULL;
	if (layout >= v->nlayouts || n > CP_USER_FRAMES_MAX)
		return 0;
	l = &v->layouts[layout];
	if (v->nfn >= FN_MAX) /* before any name is given out: those given stay valid */
		fns_clear(v);
	v->calls++;
	/* the frames' functions, from the copy of the stack: named at once
	 * where the frame is one named lately */
	for (int i = 0; i < n; i++) {
		uint64_t fun, slot = 0;
		struct fn *f;

		if (!fps[i] || !cp_unwind_stack_word(s, fps[i] + (uint64_t)(int64_t)l->c[FP_FUNCTION], &fun) ||
		    !is_heap(fun))
			continue;
		if (l->have[FP_BYTECODE])
			(void)cp_unwind_stack_word(s, fps[i] + (uint64_t)(int64_t)l->c[FP_BYTECODE], &slot);
		if ((f = frame_known(v, pid, fun, pcs[i], slot))) {
			out[i] = rt_name(f);
			named++;
			continue;
		}
		v->objs[k] = fun;
		v->slot[k] = slot;
		v->idx[k++] = i;
	}
	/* each function (its map and shared field) */
	jsize = (size_t)(l->c[JSF_SHARED] > l->c[HO_MAP] ? l->c[JSF_SHARED] : l->c[HO_MAP]) + 8;
	rd_objects(v, pid, k, jsize);
	for (size_t j = 0; j < k; j++) {
		const uint8_t *o = v->buf + j * OBJ_READ;
		int t = v->ok[j] ? map_type(v, pid, l, word_at(o, l->c[HO_MAP])) : -1;
		uint64_t sfi;
		struct fn *f;

		if (t < 0 || !(t == l->c[T_JSFUNCTION] ||
			       (l->have[T_JSFUNCTION_FIRST] && l->have[T_JSFUNCTION_LAST] &&
				t >= l->c[T_JSFUNCTION_FIRST] && t <= l->c[T_JSFUNCTION_LAST])))
			continue;
		if (!is_heap(sfi = word_at(o, l->c[JSF_SHARED])))
			continue;
		frame_keep(v, pid, v->objs[j], pcs[v->idx[j]], v->slot[j], sfi);
		if ((f = function_known(v, pid, sfi))) {
			out[v->idx[j]] = rt_name(f);
			named++;
			continue;
		}
		v->objs[m] = sfi; /* m <= j: what is still to be read is after it */
		v->idx[m++] = v->idx[j];
	}
	/* each SharedFunctionInfo (its map, name and script fields) */
	ssize = (size_t)(l->c[SFI_NAME] > l->c[HO_MAP] ? l->c[SFI_NAME] : l->c[HO_MAP]) + 8;
	if (l->have[SFI_SCRIPT] && (size_t)l->c[SFI_SCRIPT] + 8 > ssize)
		ssize = (size_t)l->c[SFI_SCRIPT] + 8;
	rd_objects(v, pid, m, ssize);
	for (size_t j = 0; j < m; j++) {
		const uint8_t *o = v->buf + j * OBJ_READ;
		uint64_t nos, script = 0;
		struct fn *f;

		if (!v->ok[j] || map_type(v, pid, l, word_at(o, l->c[HO_MAP])) != l->c[T_SFI])
			continue;
		nos = word_at(o, l->c[SFI_NAME]);
		if (l->have[SFI_SCRIPT])
			script = word_at(o, l->c[SFI_SCRIPT]);
		if (!(f = function_of(v, pid, l, v->objs[j], nos, script)))
			return cp_error(ENOMEM, "out of memory naming JavaScript frames");
		out[v->idx[j]] = rt_name(f);
		named++;
	}
	return named;
}

/* ---- the runtime's row (lib/sampling/runtime.h) ---- */

static void *rt_new(const char *verb)
{
	return cp_v8_new(verb);
}

static void rt_free(void *st)
{
	cp_v8_free(st);
}

static int rt_detect(void *st, struct cp_proc *p, void *data, struct cp_rt_found *f)
{
	(void)data;
	return cp_v8_detect(st, p, &f->layout);
}

static int rt_native(void *st, uint32_t pid, unsigned layout, const struct cp_sample_rec *s, const uint64_t *pcs,
		     const uint64_t *fps, int n, struct cp_rt_name *out)
{
	return cp_v8_frames(st, pid, layout, s, pcs, fps, n, out);
}

static void rt_forget(void *st, uint32_t pid)
{
	cp_v8_forget(st, pid);
}

const struct cp_runtime cp_runtime_v8 = {
	.name = "v8",
	.id = CP_RT_ID_v8,
	.new = rt_new,
	.free = rt_free,
	.named = cp_v8_named,
	.detect = rt_detect,
	.native = rt_native,
	.forget = rt_forget,
};

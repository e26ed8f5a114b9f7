/* SPDX-License-Identifier: MIT */
/* HotSpot frames: detection, unwinding and naming (see hotspot.h,
 * docs/internals/hotspot.md). */
#include "hotspot.h"

#include <errno.h>
#include <fcntl.h>
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

/* ---- what a layout is made of: VMStructs' fields, statics, constants ---- */

enum {
	F_HEAP_MEMORY,
	F_HEAP_SEGMAP,
	F_HEAP_LOG2,
	F_VS_LOW,
	F_VS_HIGH,
	F_GA_LEN,
	F_GA_DATA,
	F_BLOB_FRAME_SIZE,
	F_BLOB_FRAME_COMPLETE,
	F_BLOB_CODE_BEGIN,
	F_BLOB_CODE_END,
	F_BLOB_NAME,
	F_CM_METHOD,
	F_NM_PCS,
	F_NM_DEPS,
	F_NM_META,
	F_CM_SCOPES,
	F_METHOD_CONST,
	F_CONST_CONSTANTS,
	F_CONST_NAME_INDEX,
	F_CONST_FLAGS,
	F_CONST_CODE_SIZE,
	F_CP_HOLDER,
	F_CP_LENGTH,
	F_CP_SOURCE_INDEX,
	F_KLASS_NAME,
	F_SYM_LENGTH,
	F_SYM_BODY,
	F_SQ_BUFFER,
	F_SQ_LIMIT,
	F_PC_OFFSET,
	F_PC_SCOPE,
	F_HB_USED,
	NFIELD
};
static const char *const field_names[NFIELD] = {
	[F_HEAP_MEMORY] = "CodeHeap::_memory",
	[F_HEAP_SEGMAP] = "CodeHeap::_segmap",
	[F_HEAP_LOG2] = "CodeHeap::_log2_segment_size",
	[F_VS_LOW] = "VirtualSpace::_low",
	[F_VS_HIGH] = "VirtualSpace::_high",
	[F_GA_LEN] = "GrowableArrayBase::_len",
	[F_GA_DATA] = "GrowableArray<int>::_data",
	[F_BLOB_FRAME_SIZE] = "CodeBlob::_frame_size",
	[F_BLOB_FRAME_COMPLETE] = "CodeBlob::_frame_complete_offset",
	[F_BLOB_CODE_BEGIN] = "CodeBlob::_code_begin",
	[F_BLOB_CODE_END] = "CodeBlob::_code_end",
	[F_BLOB_NAME] = "CodeBlob::_name",
	[F_CM_METHOD] = "CompiledMethod::_method",
	[F_NM_PCS] = "nmethod::_scopes_pcs_offset",
	[F_NM_DEPS] = "nmethod::_dependencies_offset",
	[F_NM_META] = "nmethod::_metadata_offset",
	[F_CM_SCOPES] = "CompiledMethod::_scopes_data_begin",
	[F_METHOD_CONST] = "Method::_constMethod",
	[F_CONST_CONSTANTS] = "ConstMethod::_constants",
	[F_CONST_NAME_INDEX] = "ConstMethod::_name_index",
	[F_CONST_FLAGS] = "ConstMethod::_flags",
	[F_CONST_CODE_SIZE] = "ConstMethod::_code_size",
	[F_CP_HOLDER] = "ConstantPool::_pool_holder",
	[F_CP_LENGTH] = "ConstantPool::_length",
	[F_CP_SOURCE_INDEX] = "ConstantPool::_source_file_name_index",
	[F_KLASS_NAME] = "Klass::_name",
	[F_SYM_LENGTH] = "Symbol::_length",
	[F_SYM_BODY] = "Symbol::_body",
	[F_SQ_BUFFER] = "StubQueue::_stub_buffer",
	[F_SQ_LIMIT] = "StubQueue::_buffer_limit",
	[F_PC_OFFSET] = "PcDesc::_pc_offset",
	[F_PC_SCOPE] = "PcDesc::_scope_decode_offset",
	[F_HB_USED] = "HeapBlock::Header::_used",
};
enum { S_HEAPS, S_LOW, S_HIGH, S_INTERP, NSTATIC };
static const char *const static_names[NSTATIC] = {
	[S_HEAPS] = "CodeCache::_heaps",
	[S_LOW] = "CodeCache::_low_bound",
	[S_HIGH] = "CodeCache::_high_bound",
	[S_INTERP] = "AbstractInterpreter::_code",
};

struct layout {
	int32_t off[NFIELD];
	uint64_t stat[NSTATIC]; /* address less the load bias */
	int32_t last_sp;        /* frame::interpreter_frame_last_sp_offset, in words */
	uint32_t cp_size, heapblock_size, pcdesc_size;
	uint32_t constmethod_size; /* the bytecodes follow it, then the compressed line table */
	int32_t has_lines;         /* ConstMethod::_has_linenumber_table, a flag */
};

/* Debian 12's OpenJDK 17.0.15, as its VMStructs say (for the fuzz target) */
static const struct layout jdk17 = {
	.off = { [F_HEAP_MEMORY] = 8, [F_HEAP_SEGMAP] = 120, [F_HEAP_LOG2] = 256, [F_VS_LOW] = 16,
		 [F_VS_HIGH] = 24, [F_GA_LEN] = 0, [F_GA_DATA] = 8, [F_BLOB_FRAME_SIZE] = 28,
		 [F_BLOB_FRAME_COMPLETE] = 20, [F_BLOB_CODE_BEGIN] = 32, [F_BLOB_CODE_END] = 40,
		 [F_BLOB_NAME] = 96, [F_CM_METHOD] = 112, [F_NM_PCS] = 268, [F_NM_DEPS] = 272, [F_NM_META] = 260,
		 [F_CM_SCOPES] = 120, [F_PC_OFFSET] = 0, [F_PC_SCOPE] = 4, [F_METHOD_CONST] = 8, [F_CONST_CONSTANTS] = 8,
		 [F_CONST_NAME_INDEX] = 34, [F_CONST_FLAGS] = 28, [F_CONST_CODE_SIZE] = 32, [F_CP_HOLDER] = 24, [F_CP_LENGTH] = 60, [F_CP_SOURCE_INDEX] = 54,
		 [F_KLASS_NAME] = 24, [F_SYM_LENGTH] = 4, [F_SYM_BODY] = 6, [F_SQ_BUFFER] = 8, [F_SQ_LIMIT] = 20,
		 [F_HB_USED] = 8 },
	.last_sp = -2,
	.cp_size = 72,
	.heapblock_size = 16,
	.pcdesc_size = 16,
	.constmethod_size = 48,
	.has_lines = 1,
};

/* the symbols of libjvm.so that say where the tables and their layouts are */
enum {
	G_STRUCTS,
	G_S_STRIDE,
	G_S_TYPE,
	G_S_FIELD,
	G_S_STATIC,
	G_S_OFFSET,
	G_S_ADDRESS,
	G_TYPES,
	G_T_STRIDE,
	G_T_NAME,
	G_T_SIZE,
	G_INTS,
	G_I_STRIDE,
	G_I_NAME,
	G_I_VALUE,
	NSYM
};
static const char *const sym_names[NSYM] = {
	[G_STRUCTS] = "gHotSpotVMStructs",
	[G_S_STRIDE] = "gHotSpotVMStructEntryArrayStride",
	[G_S_TYPE] = "gHotSpotVMStructEntryTypeNameOffset",
	[G_S_FIELD] = "gHotSpotVMStructEntryFieldNameOffset",
	[G_S_STATIC] = "gHotSpotVMStructEntryIsStaticOffset",
	[G_S_OFFSET] = "gHotSpotVMStructEntryOffsetOffset",
	[G_S_ADDRESS] = "gHotSpotVMStructEntryAddressOffset",
	[G_TYPES] = "gHotSpotVMTypes",
	[G_T_STRIDE] = "gHotSpotVMTypeEntryArrayStride",
	[G_T_NAME] = "gHotSpotVMTypeEntryTypeNameOffset",
	[G_T_SIZE] = "gHotSpotVMTypeEntrySizeOffset",
	[G_INTS] = "gHotSpotVMIntConstants",
	[G_I_STRIDE] = "gHotSpotVMIntConstantEntryArrayStride",
	[G_I_NAME] = "gHotSpotVMIntConstantEntryNameOffset",
	[G_I_VALUE] = "gHotSpotVMIntConstantEntryValueOffset",
};

#define BINS_MAX 16
#define HEAPS_MAX 8
#define CODES_MAX 4096 /* code blobs kept for a process; past it they start over */
#define CODE_DATA_MAX (1u << 20) /* an nmethod's debug information read at most */
#define METHODS_BITS 12
#define METHODS_MAX 65536 /* methods kept; past it the cache starts over */
#define CHECK_EVERY 32   /* samples a blob or method is given before it is read again */
#define NAME_MAX_LEN 512
#define ENTRIES_MAX 20000 /* VMStructs entries read at most */
#define INLINE_MAX CP_HOTSPOT_INLINE_MAX /* methods of a compiled frame (the inlined ones and theirs) */
#define INL_NAMES 1024    /* names of inlined methods given in one call */

struct bin {
	char *key;
	uint64_t sym[NSYM]; /* symbol values (0: none) */
	struct cp_rt_loads loads;
	bool jvm;    /* it has the tables */
	bool read;   /* its layout was read from a process */
	bool bad;    /* its tables lack a field this needs (said once) */
	struct layout lay;
};

/* a code blob of a process, found for a pc in it */
struct code {
	uint64_t block;                 /* its HeapBlock */
	uint64_t code_begin, code_end, method, name;
	int32_t frame_size, frame_complete;
	bool nmethod;
	uint64_t checked; /* the call it was last read or checked in */
	/* an nmethod's metadata, scopes and PcDescs: its bytes [meta, deps)
	 * (NULL when they could not be read: no methods inlined then) */
	uint8_t *data;
	int32_t meta, scopes, pcs, deps; /* offsets from the blob */
};

/* a JVM process */
struct proc {
	uint32_t pid;
	unsigned bin;
	uint64_t bias;
	bool ready;        /* its code cache is known */
	uint64_t tried;    /* the call it was last looked at in */
	uint64_t low, high, ilo, ihi; /* the code cache, the interpreter's code */
	struct { uint64_t lo, hi, segmap; int log2; } heaps[HEAPS_MAX];
	unsigned nheaps;
	uint64_t nmethod_name; /* the address of the string "nmethod" (0: not seen yet) */
	struct code *codes;    /* the blobs samples were in, by code_begin */
	size_t ncodes, ccap;
};

/* the methods running at a pc of an nmethod, innermost first (those
 * inlined, then the nmethod's own), from its debug info */
struct chain {
	uint64_t m[INLINE_MAX];
	int32_t bci[INLINE_MAX]; /* where in each */
	unsigned n;
};

/* a method named (by the Method* at, whose ConstMethod is constmethod) */
struct method {
	struct method *next;
	uint32_t pid;
	uint64_t at, constmethod;
	char *label, *name, *file;
	uint64_t key;
	uint64_t checked; /* the call its ConstMethod was last read in */
	/* its line table (read when a line is first wanted): (bci, line) pairs */
	bool lines_read;
	uint32_t *lines;
	size_t nlines;
	uint16_t code_size;
};

struct cp_hotspot {
	const char *verb;
	struct bin bins[BINS_MAX];
	size_t nbins;
	struct proc *procs;
	size_t nprocs, pcap;
	struct method *methods[1u << METHODS_BITS]; /* chains, the newest first */
	size_t nmethods;
	uint64_t calls, serial;
	struct cp_rt_name inl[INL_NAMES]; /* a call's names of inlined methods */
	size_t ninl;
};

struct cp_hotspot *cp_hotspot_new(const char *verb)
{
	struct cp_hotspot *h = calloc(1, sizeof(*h));

	if (h)
		h->verb = verb;
	return h;
}

static void code_free(struct code *c)
{
	free(c->data);
	c->data = NULL;
}

static void codes_clear(struct proc *pr)
{
	for (size_t i = 0; i < pr->ncodes; i++)
		code_free(&pr->codes[i]);
	free(pr->codes);
	pr->codes = NULL;
	pr->ncodes = pr->ccap = 0;
}

static void method_free(struct method *m)
{
	free(m->lines);
	free(m->label);
	free(m->name);
	free(m->file);
	free(m);
}

/* the methods of process pid go (all when pid is 0) */
static void methods_drop(struct cp_hotspot *h, uint32_t pid)
{
	for (size_t i = 0; i < (1u << METHODS_BITS); i++) {
		struct method **pp = &h->methods[i];

		while (*pp) {
			struct method *m = *pp;

			if (!pid || m->pid == pid) {
				*pp = m->next;
				method_free(m);
				h->nmethods--;
			} else {
				pp = &m->next;
			}
		}
	}
}

void cp_hotspot_free(struct cp_hotspot *h)
{
	if (!h)
		return;
	for (size_t i = 0; i < h->nbins; i++)
		free(h->bins[i].key);
	methods_drop(h, 0);
	for (size_t i = 0; i < h->nprocs; i++)
		codes_clear(&h->procs[i]);
	free(h->procs);
	free(h);
}

void cp_hotspot_forget(struct cp_hotspot *h, uint32_t pid)
{
	for (size_t i = 0; i < h->nprocs; i++)
		if (h->procs[i].pid == pid) {
			codes_clear(&h->procs[i]);
			h->procs[i] = h->procs[--h->nprocs];
			break;
		}
	methods_drop(h, pid);
}

/* ---- reading the process ---- */

static bool rd(uint32_t pid, uint64_t addr, void *buf, size_t n)
{
	return cp_runtime_peek(pid, addr, buf, n);
}

static bool rd64(uint32_t pid, uint64_t addr, uint64_t *v)
{
	return rd(pid, addr, v, 8);
}

/* a C string at addr (at most n - 1 bytes) into buf; false when unreadable */
static bool rd_str(uint32_t pid, uint64_t addr, char *buf, size_t n)
{
	struct iovec local = { buf, n - 1 }, remote = { (void *)(uintptr_t)addr, n - 1 };
	ssize_t got = addr ? process_vm_readv((pid_t)pid, &local, 1, &remote, 1, 0) : -1;

	if (got <= 0)
		return false;
	buf[got] = 0;
	return memchr(buf, 0, (size_t)got) != NULL;
}

/* ---- detection ---- */

bool cp_hotspot_named(const char *path)
{
	const char *b = strrchr(path, '/');

	return !strcmp(b ? b + 1 : path, "libjvm.so");
}

static bool hs_sym(void *ctx, const char *name, const GElf_Sym *sym)
{
	struct bin *b = ctx;

	for (size_t k = 0; k < NSYM; k++)
		if (!strcmp(name, sym_names[k]))
			b->sym[k] = sym->st_value;
	return true;
}

static void inspect(struct bin *b, int fd)
{
	Elf *e;

	elf_version(EV_CURRENT);
	if (!(e = elf_begin(fd, ELF_C_READ_MMAP, NULL)))
		return;
	(void)cp_runtime_syms(e, false, "gHotSpotVM", hs_sym, b);
	cp_runtime_loads(e, &b->loads);
	elf_end(e);
	b->jvm = true;
	for (size_t k = 0; k < NSYM; k++)
		b->jvm &= b->sym[k] != 0;
}

int cp_hotspot_detect(struct cp_hotspot *h, struct cp_proc *p, unsigned *layout)
{
	for (size_t i = 0; i < p->nmaps; i++) {
		struct cp_map *m = &p->maps[i];
		char kb[512], key[4096 + 512];
		const char *id;
		struct bin *b = NULL;
		struct proc *pr = NULL;
		uint64_t bias;
		size_t k;

		if (!m->path || m->path[0] != '/' || !cp_hotspot_named(m->path) || !(id = cp_map_key(m, p, kb, sizeof(kb))))
			continue;
		snprintf(key, sizeof(key), "%s %s", id, m->path);
		for (k = 0; k < h->nbins && !b; k++)
			if (!strcmp(h->bins[k].key, key))
				b = &h->bins[k];
		if (!b) {
			int fd;

			if (h->nbins == BINS_MAX)
				continue;
			b = &h->bins[h->nbins];
			memset(b, 0, sizeof(*b));
			if (!(b->key = strdup(key)))
				return cp_error(ENOMEM, "out of memory looking at %s", m->path);
			h->nbins++;
			if ((fd = cp_map_open(p, m, -1)) >= 0) {
				inspect(b, fd);
				close(fd);
			}
		}
		if (!b->jvm || b->bad || !cp_runtime_bias(&b->loads, m, &bias))
			continue;
		for (k = 0; k < h->nprocs && !pr; k++)
			if (h->procs[k].pid == p->pid)
				pr = &h->procs[k];
		if (!pr) {
			if (cp_grow((void **)&h->procs, &h->pcap, h->nprocs + 1, sizeof(*h->procs)))
				return cp_error(ENOMEM, "out of memory looking at %s", m->path);
			pr = &h->procs[h->nprocs++];
			memset(pr, 0, sizeof(*pr));
		}
		codes_clear(pr);
		memset(pr, 0, sizeof(*pr));
		pr->pid = p->pid;
		pr->bin = (unsigned)(b - h->bins);
		pr->bias = bias;
		pr->tried = UINT64_MAX;
		*layout = pr->bin;
		return 1;
	}
	return 0;
}

/* The VMStructs tables are read a chunk of entries at a time, and their
 * names (in libjvm's .rodata) a chunk at a time too, with one
 * process_vm_readv each (a chunk that cannot be read whole is read entry by
 * entry): a few hundred calls for a JVM's ~8,000 entries, not ~40,000. */
#define CHUNK 64
#define ENTRY_MAX 256 /* a table's stride at most */
#define NAME_READ 96  /* bytes read of a name: longer ones are not among those wanted */

struct table_rd {
	uint32_t pid;
	uint64_t at, stride, end;  /* the next entry, the table's stride, ENTRIES_MAX entries' end */
	uint8_t buf[CHUNK * ENTRY_MAX];
	size_t n, i;               /* entries in buf, the next one */
};

static void table_start(struct table_rd *t, uint32_t pid, uint64_t at, uint64_t stride)
{
	t->pid = pid;
	t->at = at;
	t->stride = stride;
	t->end = at + ENTRIES_MAX * stride;
	t->n = t->i = 0;
}

/* the next entry of a table (NULL at its end, or when unreadable) */
static const uint8_t *table_next(struct table_rd *t)
{
	if (t->i == t->n) {
		if (t->at >= t->end)
			return NULL;
		t->n = CHUNK;
		t->i = 0;
		if (!rd(t->pid, t->at, t->buf, CHUNK * t->stride)) { /* at the mapping's end: one at a time */
			t->n = 1;
			if (!rd(t->pid, t->at, t->buf, t->stride))
				return NULL;
		}
		t->at += t->n * t->stride;
	}
	return t->buf + t->i++ * t->stride;
}

/* the names at ptrs[0..n) into names[] (NUL-terminated, "" when unreadable) */
static void read_names(uint32_t pid, const uint64_t *ptrs, size_t n, char (*names)[NAME_READ + 1])
{
	struct iovec lo[CHUNK], re[CHUNK];
	ssize_t got;
	size_t whole;

	for (size_t k = 0; k < n; k++) {
		lo[k] = (struct iovec){ names[k], NAME_READ };
		re[k] = (struct iovec){ (void *)(uintptr_t)ptrs[k], NAME_READ };
		names[k][0] = names[k][NAME_READ] = 0;
	}
	got = n ? process_vm_readv((pid_t)pid, lo, n, re, n, 0) : 0;
	whole = got > 0 ? (size_t)got / NAME_READ : 0;
	for (size_t k = whole; k < n; k++) /* past a fault: each on its own (rd_str stops at the NUL) */
		if (!ptrs[k] || !rd_str(pid, ptrs[k], names[k], sizeof(names[k])))
			names[k][0] = 0;
}

/* Reads binary b's layout from process pid (its JVM started): false when
 * the tables are not filled yet, or (b->bad) lack what this needs. */
static bool read_layout(struct cp_hotspot *h, struct bin *b, uint32_t pid, uint64_t bias)
{
	uint64_t g[NSYM];
	bool have[NFIELD] = { false }, shave[NSTATIC] = { false }, last_sp = false, cps = false, hbs = false,
	     pcs = false, cms = false, lines = false, end = false;
	struct layout *l = &b->lay;
	struct table_rd *t;
	char(*names)[NAME_READ + 1];
	uint64_t ptrs[2 * CHUNK], vals[CHUNK][2];
	char full[2 * NAME_READ + 4];

	for (size_t k = 0; k < NSYM; k++)
		if (!rd64(pid, b->sym[k] + bias, &g[k]))
			return false;
	if (!g[G_STRUCTS] || !g[G_TYPES] || !g[G_INTS] || !g[G_S_STRIDE] || !g[G_T_STRIDE] || !g[G_I_STRIDE] ||
	    g[G_S_STRIDE] > ENTRY_MAX || g[G_T_STRIDE] > ENTRY_MAX || g[G_I_STRIDE] > ENTRY_MAX)
		return false; /* not filled yet (or not a table this reads) */
	t = malloc(sizeof(*t));
	names = malloc(2 * CHUNK * sizeof(*names));
	if (!t || !names) {
		free(t);
		free(names);
		return false;
	}
	memset(l, 0, sizeof(*l));
	/* the fields: a chunk of entries, then their type and field names */
	table_start(t, pid, g[G_STRUCTS], g[G_S_STRIDE]);
	while (!end) {
		size_t n = 0;
		int32_t stat[CHUNK];
		const uint8_t *e;

		while (n < CHUNK && (e = table_next(t))) {
			uint64_t tp, fp;

			memcpy(&tp, e + (g[G_S_TYPE] % ENTRY_MAX), 8);
			if (!tp) {
				end = true;
				break;
			}
			memcpy(&fp, e + (g[G_S_FIELD] % ENTRY_MAX), 8);
			memcpy(&stat[n], e + (g[G_S_STATIC] % ENTRY_MAX), 4);
			memcpy(&vals[n][0], e + (g[G_S_OFFSET] % ENTRY_MAX), 8);
			memcpy(&vals[n][1], e + (g[G_S_ADDRESS] % ENTRY_MAX), 8);
			ptrs[2 * n] = tp;
			ptrs[2 * n + 1] = fp;
			n++;
		}
		if (n < CHUNK && !end)
			end = true; /* unreadable: what was read counts */
		read_names(pid, ptrs, n, names);
		read_names(pid, ptrs + n, n, names + n);
		for (size_t i = 0; i < n; i++) {
			snprintf(full, sizeof(full), "%s::%s", names[2 * i], names[2 * i + 1]); /* (as ptrs) */
			for (size_t k = 0; k < NFIELD; k++)
				if (!stat[i] && !have[k] && !strcmp(full, field_names[k]) && vals[i][0] < 4096) {
					l->off[k] = (int32_t)vals[i][0];
					have[k] = true;
				}
			for (size_t k = 0; k < NSTATIC; k++)
				if (stat[i] && !shave[k] && !strcmp(full, static_names[k])) {
					l->stat[k] = vals[i][1] - bias;
					shave[k] = true;
				}
		}
	}
	/* the types' sizes */
	table_start(t, pid, g[G_TYPES], g[G_T_STRIDE]);
	for (end = false; !end;) {
		size_t n = 0;
		const uint8_t *e;

		while (n < CHUNK && (e = table_next(t))) {
			memcpy(&ptrs[n], e + (g[G_T_NAME] % ENTRY_MAX), 8);
			if (!ptrs[n]) {
				end = true;
				break;
			}
			memcpy(&vals[n][0], e + (g[G_T_SIZE] % ENTRY_MAX), 8);
			n++;
		}
		if (n < CHUNK && !end)
			end = true;
		read_names(pid, ptrs, n, names);
		for (size_t i = 0; i < n; i++) {
			uint64_t size = vals[i][0];

			if (size > 4096)
				continue;
			if (!strcmp(names[i], "ConstantPool"))
				l->cp_size = (uint32_t)size, cps = true;
			else if (!strcmp(names[i], "HeapBlock"))
				l->heapblock_size = (uint32_t)size, hbs = true;
			else if (!strcmp(names[i], "PcDesc"))
				l->pcdesc_size = (uint32_t)size, pcs = true;
			else if (!strcmp(names[i], "ConstMethod"))
				l->constmethod_size = (uint32_t)size, cms = true;
		}
	}
	/* the int constants */
	table_start(t, pid, g[G_INTS], g[G_I_STRIDE]);
	for (end = false; !end;) {
		size_t n = 0;
		const uint8_t *e;

		while (n < CHUNK && (e = table_next(t))) {
			int32_t v;

			memcpy(&ptrs[n], e + (g[G_I_NAME] % ENTRY_MAX), 8);
			if (!ptrs[n]) {
				end = true;
				break;
			}
			memcpy(&v, e + (g[G_I_VALUE] % ENTRY_MAX), 4);
			vals[n][0] = (uint64_t)(int64_t)v;
			n++;
		}
		if (n < CHUNK && !end)
			end = true;
		read_names(pid, ptrs, n, names);
		for (size_t i = 0; i < n; i++) {
			if (!strcmp(names[i], "frame::interpreter_frame_last_sp_offset"))
				l->last_sp = (int32_t)vals[i][0], last_sp = true;
			else if (!strcmp(names[i], "ConstMethod::_has_linenumber_table"))
				l->has_lines = (int32_t)vals[i][0], lines = true;
		}
	}
	free(t);
	free(names);
	if (!have[F_HB_USED]) { /* (a check this can do without: where every JDK has it, after _length) */
		l->off[F_HB_USED] = 8;
		have[F_HB_USED] = true;
	}
	b->bad = !last_sp || !cps || !hbs || !pcs || !cms || !lines || l->off[F_PC_OFFSET] + 4 > (int32_t)l->pcdesc_size ||
		 l->off[F_PC_SCOPE] + 4 > (int32_t)l->pcdesc_size;
	for (size_t k = 0; k < NFIELD; k++)
		b->bad |= !have[k];
	for (size_t k = 0; k < NSTATIC; k++)
		b->bad |= !shave[k];
	if (b->bad)
		cp_log(h->verb, CP_LOG_INFO,
		       "%s is a JVM whose VMStructs lack what cprof reads: its processes' Java frames stay native",
		       strchr(b->key, ' ') ? strchr(b->key, ' ') + 1 : b->key);
	b->read = !b->bad;
	return b->read;
}

/* process pid's state, its code cache read once its JVM has started (NULL
 * while not) */
static struct proc *proc_ready(struct cp_hotspot *h, uint32_t pid, unsigned layout)
{
	struct proc *pr = NULL;
	struct bin *b;
	const struct layout *l;
	uint64_t ga, data, q, heaps[HEAPS_MAX];
	int32_t len, limit;

	for (size_t k = 0; k < h->nprocs && !pr; k++)
		if (h->procs[k].pid == pid)
			pr = &h->procs[k];
	if (!pr || pr->bin != layout || layout >= h->nbins)
		return NULL;
	if (pr->ready)
		return pr;
	if (pr->tried != UINT64_MAX && h->calls - pr->tried < 64)
		return NULL; /* not yet: looked at again in a while */
	pr->tried = h->calls;
	b = &h->bins[layout];
	if (b->bad || (!b->read && !read_layout(h, b, pid, pr->bias)))
		return NULL;
	l = &b->lay;
	if (!rd64(pid, l->stat[S_LOW] + pr->bias, &pr->low) || !rd64(pid, l->stat[S_HIGH] + pr->bias, &pr->high) ||
	    !rd64(pid, l->stat[S_HEAPS] + pr->bias, &ga) || !ga || !rd(pid, ga + (uint64_t)l->off[F_GA_LEN], &len, 4) ||
	    len <= 0 || !rd64(pid, ga + (uint64_t)l->off[F_GA_DATA], &data) ||
	    !rd(pid, data, heaps, 8 * (size_t)(len < HEAPS_MAX ? len : HEAPS_MAX)) ||
	    !rd64(pid, l->stat[S_INTERP] + pr->bias, &q) || !q ||
	    !rd64(pid, q + (uint64_t)l->off[F_SQ_BUFFER], &pr->ilo) ||
	    !rd(pid, q + (uint64_t)l->off[F_SQ_LIMIT], &limit, 4) || limit <= 0)
		return NULL;
	pr->ihi = pr->ilo + (uint64_t)limit;
	pr->nheaps = 0;
	for (int i = 0; i < len && i < HEAPS_MAX; i++) {
		uint64_t hp = heaps[i];
		int32_t log2;

		if (!rd64(pid, hp + (uint64_t)(l->off[F_HEAP_MEMORY] + l->off[F_VS_LOW]), &pr->heaps[pr->nheaps].lo) ||
		    !rd64(pid, hp + (uint64_t)(l->off[F_HEAP_MEMORY] + l->off[F_VS_HIGH]), &pr->heaps[pr->nheaps].hi) ||
		    !rd64(pid, hp + (uint64_t)(l->off[F_HEAP_SEGMAP] + l->off[F_VS_LOW]), &pr->heaps[pr->nheaps].segmap) ||
		    !rd(pid, hp + (uint64_t)l->off[F_HEAP_LOG2], &log2, 4) || log2 < 4 || log2 > 16)
			return NULL;
		pr->heaps[pr->nheaps++].log2 = log2;
	}
	pr->ready = pr->low < pr->high && pr->nheaps > 0;
	return pr->ready ? pr : NULL;
}

/* ---- code blobs ---- */

/* The start of the block that holds pc in a code heap (its segment map:
 * 0 at a block's first segment, else how many segments to step back; 0xff
 * free), 0 when none */
static uint64_t block_of(uint32_t pid, const struct proc *pr, uint64_t pc)
{
	for (unsigned i = 0; i < pr->nheaps; i++) {
		uint64_t lo = pr->heaps[i].lo, seg;
		uint8_t chunk[256];

		if (pc < lo || pc >= pr->heaps[i].hi)
			continue;
		seg = (pc - lo) >> pr->heaps[i].log2;
		for (int chunks = 0; chunks < 4096; chunks++) {
			uint64_t from = seg >= sizeof(chunk) - 1 ? seg - (sizeof(chunk) - 1) : 0;

			if (!rd(pid, pr->heaps[i].segmap + from, chunk, (size_t)(seg - from + 1)))
				return 0;
			for (;;) {
				uint8_t v = chunk[seg - from];

				if (v == 0xff || seg < v)
					return 0; /* free, or a map that does not look right */
				if (v == 0)
					return lo + (seg << pr->heaps[i].log2);
				seg -= v;
				if (seg < from)
					break; /* in the chunk before */
			}
		}
		return 0;
	}
	return 0;
}

/* An int of HotSpot's compressed streams (UNSIGNED5: a byte below 192 ends
 * it; each of up to 5 bytes adds its value << 6 * its place) at *i of
 * b[0, n); false past the end */
static bool read_u5(const uint8_t *b, size_t n, size_t *i, uint32_t *out)
{
	uint32_t sum = 0;

	for (unsigned k = 0, shift = 0; k < 5; k++, shift += 6) {
		uint8_t v;

		if (*i >= n)
			return false;
		v = b[(*i)++];
		sum += (uint32_t)v << shift;
		if (v < 192 || k == 4)
			break;
	}
	*out = sum;
	return true;
}

/* The methods running at pc of nmethod c, from its debug info read with it:
 * its PcDesc for pc (the first whose offset is past pc's: a call's is its
 * return address) and the chain of scopes from it (sender offset, method
 * index into the nmethod's metadata, bci), innermost first.  None when it
 * cannot be read or does not end at the nmethod's own method. */
static void chain_at(const struct layout *l, const struct code *c, uint64_t pc, struct chain *ch)
{
	const uint8_t *d = c->data;
	uint64_t rel = pc - c->code_begin;
	size_t n, lo = 0, hi;
	int32_t decode = 0;

	ch->n = 0;
	if (!d || pc < c->code_begin)
		return;
	/* the PcDescs, sorted by offset: the first past rel */
	n = (size_t)(c->deps - c->pcs) / l->pcdesc_size;
	hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int32_t off;

		memcpy(&off, d + (c->pcs - c->meta) + mid * l->pcdesc_size + l->off[F_PC_OFFSET], 4);
		if (off >= 0 && (uint64_t)off > rel)
			hi = mid;
		else
			lo = mid + 1;
	}
	if (lo < n)
		memcpy(&decode, d + (c->pcs - c->meta) + lo * l->pcdesc_size + l->off[F_PC_SCOPE], 4);
	/* each scope (in [scopes, pcs)): its sender's offset (0: none), its
	 * method's index into the metadata ([meta, scopes)), its bci */
	while (decode > 0 && decode < c->pcs - c->scopes && ch->n < INLINE_MAX) {
		size_t i = (size_t)(c->scopes - c->meta) + (size_t)decode, end = (size_t)(c->pcs - c->meta);
		uint32_t sender, index, bci;
		uint64_t m;

		if (!read_u5(d, end, &i, &sender) || !read_u5(d, end, &i, &index) || !read_u5(d, end, &i, &bci) ||
		    index == 0 || index > (uint32_t)(c->scopes - c->meta) / 8)
			break;
		memcpy(&m, d + 8 * (size_t)(index - 1), 8);
		if (!m)
			break;
		ch->bci[ch->n] = (int32_t)bci - 1; /* InvocationEntryBci is -1 */
		ch->m[ch->n++] = m;
		if ((int32_t)sender >= decode)
			break; /* senders come before: not a chain this reads */
		decode = (int32_t)sender;
	}
	/* the outermost must be the nmethod's own method, else none of it */
	if (ch->n && ch->m[ch->n - 1] != c->method)
		ch->n = 0;
}

/* the bytes of the blob header read (the fields used, from the HeapBlock on) */
static size_t header_need(const struct layout *l)
{
	size_t need = (size_t)l->off[F_HB_USED] + 1;

	for (size_t k = F_BLOB_FRAME_SIZE; k <= F_CM_SCOPES; k++)
		if (l->heapblock_size + (size_t)l->off[k] + 8 > need)
			need = l->heapblock_size + (size_t)l->off[k] + 8;
	return need;
}

/* Blob block's header (hdr: header_need bytes from the HeapBlock) into c:
 * false when it is not in use or is not the code of pc */
static bool code_parse(const struct layout *l, const uint8_t *hdr, uint64_t block, uint64_t pc, struct code *c)
{
	const uint8_t *b = hdr + l->heapblock_size;

	memset(c, 0, sizeof(*c));
	c->block = block;
	memcpy(&c->code_begin, b + l->off[F_BLOB_CODE_BEGIN], 8);
	memcpy(&c->code_end, b + l->off[F_BLOB_CODE_END], 8);
	memcpy(&c->frame_size, b + l->off[F_BLOB_FRAME_SIZE], 4);
	memcpy(&c->frame_complete, b + l->off[F_BLOB_FRAME_COMPLETE], 4);
	memcpy(&c->name, b + l->off[F_BLOB_NAME], 8);
	memcpy(&c->method, b + l->off[F_CM_METHOD], 8);
	memcpy(&c->meta, b + l->off[F_NM_META], 4);
	memcpy(&c->pcs, b + l->off[F_NM_PCS], 4);
	memcpy(&c->deps, b + l->off[F_NM_DEPS], 4);
	return hdr[l->off[F_HB_USED]] != 0 && pc >= c->code_begin && pc < c->code_end && c->frame_size >= 0 &&
	       c->frame_size <= 65536;
}

/* Is code c still the blob it was (its block in use, the same code and
 * method)?  One read of its header. */
static bool code_same(uint32_t pid, const struct layout *l, const struct code *c)
{
	uint8_t hdr[600];
	struct code now;

	return header_need(l) <= sizeof(hdr) && rd(pid, c->block, hdr, header_need(l)) &&
	       code_parse(l, hdr, c->block, c->code_begin, &now) && now.code_end == c->code_end &&
	       now.frame_size == c->frame_size && now.frame_complete == c->frame_complete && now.name == c->name &&
	       (!c->nmethod || now.method == c->method);
}

/* Reads the blob at pc of process pr into c (its debug info too for an
 * nmethod); false when there is none there */
static bool code_read(struct proc *pr, const struct layout *l, uint64_t pc, struct code *c)
{
	uint8_t hdr[600];
	uint64_t block, scopes, at;
	char nm[8];

	if (header_need(l) > sizeof(hdr) || !(block = block_of(pr->pid, pr, pc)) ||
	    !rd(pr->pid, block, hdr, header_need(l)) ||
	    !code_parse(l, hdr, block, pc, c))
		return false;
	at = block + l->heapblock_size;
	if (c->name && c->name == pr->nmethod_name) {
		c->nmethod = true;
	} else if (c->name && !pr->nmethod_name && rd(pr->pid, c->name, nm, 8) && !memcmp(nm, "nmethod", 8)) {
		pr->nmethod_name = c->name;
		c->nmethod = true;
	}
	memcpy(&scopes, hdr + l->heapblock_size + l->off[F_CM_SCOPES], 8);
	c->scopes = scopes > at && scopes - at < INT32_MAX ? (int32_t)(scopes - at) : 0;
	/* its debug info: [meta, scopes) the metadata, [scopes, pcs) the
	 * scopes, [pcs, deps) the PcDescs */
	if (c->nmethod && c->meta > 0 && c->meta <= c->scopes && c->scopes < c->pcs && c->pcs < c->deps &&
	    (size_t)(c->deps - c->meta) <= CODE_DATA_MAX && (c->data = malloc((size_t)(c->deps - c->meta))) &&
	    !rd(pr->pid, at + (uint64_t)c->meta, c->data, (size_t)(c->deps - c->meta)))
		code_free(c);
	return true;
}

/* the blob at pc of process pr: kept (checked every CHECK_EVERY calls),
 * else read; NULL when none */
static const struct code *code_of(struct cp_hotspot *h, struct proc *pr, const struct layout *l, uint64_t pc)
{
	size_t lo = 0, hi = pr->ncodes;
	struct code c;

	while (lo < hi) { /* the first that begins past pc */
		size_t mid = lo + (hi - lo) / 2;

		if (pr->codes[mid].code_begin <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo > 0 && pc < pr->codes[lo - 1].code_end) {
		struct code *k = &pr->codes[lo - 1];

		if (h->calls - k->checked < CHECK_EVERY)
			return k;
		if (code_same(pr->pid, l, k)) {
			k->checked = h->calls;
			return k;
		}
		code_free(k); /* gone: another blob may be there now */
		memmove(k, k + 1, (pr->ncodes - lo) * sizeof(*k));
		pr->ncodes--;
		lo--;
	}
	if (!code_read(pr, l, pc, &c))
		return NULL;
	c.checked = h->calls;
	if (pr->ncodes >= CODES_MAX)
		codes_clear(pr), lo = 0;
	if (cp_grow((void **)&pr->codes, &pr->ccap, pr->ncodes + 1, sizeof(c))) {
		code_free(&c);
		return NULL;
	}
	/* where it goes; those it overlaps (blobs freed since) go */
	while (lo > 0 && pr->codes[lo - 1].code_end > c.code_begin)
		lo--;
	hi = lo;
	while (hi < pr->ncodes && pr->codes[hi].code_begin < c.code_end)
		code_free(&pr->codes[hi++]);
	memmove(pr->codes + lo + 1, pr->codes + hi, (pr->ncodes - hi) * sizeof(c));
	pr->ncodes = pr->ncodes - (hi - lo) + 1;
	pr->codes[lo] = c;
	return &pr->codes[lo];
}

int cp_hotspot_unwind(struct cp_hotspot *h, uint32_t pid, unsigned layout, uint64_t pc, bool exact,
		      uint64_t *cfa_sp, bool *bp_saved)
{
	struct proc *pr = proc_ready(h, pid, layout);
	const struct code *bl;

	if (!pr || pc < pr->low || pc >= pr->high || (pc >= pr->ilo && pc < pr->ihi))
		return 0; /* not compiled code: the interpreter's keeps rbp */
	if (!(bl = code_of(h, pr, &h->bins[layout].lay, exact ? pc : pc - 1)) || !bl->nmethod)
		return 0;
	if ((exact ? pc : pc - 1) - bl->code_begin < (uint64_t)(bl->frame_complete > 0 ? bl->frame_complete : 0)) {
		*cfa_sp = 8; /* in the prologue: the return address on top (rbp not saved yet) */
		*bp_saved = false;
	} else {
		*cfa_sp = 8 * (uint64_t)bl->frame_size;
		*bp_saved = true;
	}
	return 1;
}

/* ---- methods ---- */

/* Symbol sym as a string (malloc'ed; '/' made '.' when dots), NULL when unreadable */
static char *symbol(uint32_t pid, const struct layout *l, uint64_t sym, bool dots)
{
	uint16_t len;
	char *s;

	if (!sym || !rd(pid, sym + (uint64_t)l->off[F_SYM_LENGTH], &len, 2) || len == 0 || len > NAME_MAX_LEN)
		return NULL;
	if (!(s = malloc((size_t)len + 1)))
		return NULL;
	if (!rd(pid, sym + (uint64_t)l->off[F_SYM_BODY], s, len)) {
		free(s);
		return NULL;
	}
	s[len] = 0;
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)s[i] < 0x20 || !s[i])
			s[i] = '?';
		else if (dots && s[i] == '/')
			s[i] = '.';
	return s;
}

/* the method at Method* m of process pid (kept while its ConstMethod is the
 * same, else read): NULL when it cannot be read, or does not look like one */
static struct method *method_of(struct cp_hotspot *h, uint32_t pid, const struct layout *l, uint64_t m)
{
	size_t hb = cp_hash_u64(m, pid) & ((1u << METHODS_BITS) - 1);
	struct method *me;
	uint64_t cm, cp, holder, namesym = 0, klass_sym, srcsym = 0;
	uint16_t name_index, src_index;
	int32_t cp_len;
	char *cls = NULL, *name = NULL, *src = NULL;

	/* the newest kept for m: given as it is while checked lately */
	for (me = h->methods[hb]; me; me = me->next)
		if (me->pid == pid && me->at == m)
			break;
	if (me && h->calls - me->checked < CHECK_EVERY)
		return me;
	if (!m || !rd64(pid, m + (uint64_t)l->off[F_METHOD_CONST], &cm) || !cm)
		return NULL;
	for (struct method **pp = &h->methods[hb]; *pp; pp = &(*pp)->next)
		if ((*pp)->pid == pid && (*pp)->at == m && (*pp)->constmethod == cm) {
			me = *pp; /* made the newest */
			*pp = me->next;
			me->next = h->methods[hb];
			h->methods[hb] = me;
			me->checked = h->calls;
			return me;
		}
	if (!rd64(pid, cm + (uint64_t)l->off[F_CONST_CONSTANTS], &cp) || !cp ||
	    !rd(pid, cm + (uint64_t)l->off[F_CONST_NAME_INDEX], &name_index, 2) ||
	    !rd64(pid, cp + (uint64_t)l->off[F_CP_HOLDER], &holder) || !holder ||
	    !rd(pid, cp + (uint64_t)l->off[F_CP_LENGTH], &cp_len, 4) || name_index == 0 || name_index >= cp_len ||
	    !rd64(pid, cp + l->cp_size + 8 * (uint64_t)name_index, &namesym) ||
	    !rd64(pid, holder + (uint64_t)l->off[F_KLASS_NAME], &klass_sym))
		return NULL;
	if (!(name = symbol(pid, l, namesym, false)) || !(cls = symbol(pid, l, klass_sym, true)))
		goto out;
	if (rd(pid, cp + (uint64_t)l->off[F_CP_SOURCE_INDEX], &src_index, 2) && src_index && src_index < cp_len &&
	    rd64(pid, cp + l->cp_size + 8 * (uint64_t)src_index, &srcsym))
		src = symbol(pid, l, srcsym, false);
	if (!(me = calloc(1, sizeof(*me))))
		goto out;
	me->pid = pid;
	me->at = m;
	me->constmethod = cm;
	me->key = ++h->serial;
	me->checked = h->calls;
	if (asprintf(&me->name, "%s.%s", cls, name) < 0)
		me->name = NULL;
	/* the file: the class's package as a directory, and its source file */
	if (src) {
		const char *dot = strrchr(cls, '.');

		if (asprintf(&me->file, "%.*s%s%s", dot ? (int)(dot - cls) : 0, cls, dot ? "/" : "", src) < 0)
			me->file = NULL;
		else
			for (char *c = me->file; dot && c < me->file + (dot - cls); c++)
				if (*c == '.')
					*c = '/';
	} else {
		me->file = strdup("");
	}
	if (!me->name || !me->file || asprintf(&me->label, src ? "%s (%s)" : "%s", me->name, src) < 0) {
		me->label = NULL;
		method_free(me);
		me = NULL;
		goto out;
	}
	me->next = h->methods[hb];
	h->methods[hb] = me;
	h->nmethods++;
out:
	free(cls);
	free(name);
	free(src);
	return me;
}

/* A signed int of HotSpot's compressed streams (UNSIGNED5, zigzag) */
static bool read_s5(const uint8_t *b, size_t n, size_t *i, int32_t *out)
{
	uint32_t v;

	if (!read_u5(b, n, i, &v))
		return false;
	*out = (int32_t)(v >> 1) ^ -(int32_t)(v & 1);
	return true;
}

/* The line of bci in method me (0: not known): its compressed line table,
 * after its bytecodes, read once: pairs of a byte (bci delta << 3 | line
 * delta), or 0xff and two signed ints, until a 0 */
static int64_t java_line(uint32_t pid, const struct layout *l, struct method *me, int32_t bci)
{
	int64_t best = 0;
	int32_t best_bci = -1;

	if (!me->lines_read) {
		uint16_t flags;
		uint8_t t[4096];
		size_t n, i = 0, cap = 0;
		int32_t b = 0, line = 0;
		struct iovec lo = { t, sizeof(t) }, re;
		ssize_t got;

		me->lines_read = true;
		if (!rd(pid, me->constmethod + (uint64_t)l->off[F_CONST_FLAGS], &flags, 2) ||
		    !(flags & (uint16_t)l->has_lines) ||
		    !rd(pid, me->constmethod + (uint64_t)l->off[F_CONST_CODE_SIZE], &me->code_size, 2))
			return 0;
		re = (struct iovec){ (void *)(uintptr_t)(me->constmethod + l->constmethod_size + me->code_size), sizeof(t) };
		if ((got = process_vm_readv((pid_t)pid, &lo, 1, &re, 1, 0)) <= 0)
			return 0;
		n = (size_t)got;
		while (i < n && t[i] != 0) {
			int32_t db, dl;

			if (t[i] == 0xff) {
				i++;
				if (!read_s5(t, n, &i, &db) || !read_s5(t, n, &i, &dl))
					break;
			} else {
				db = t[i] >> 3;
				dl = t[i] & 7;
				i++;
			}
			if (__builtin_add_overflow(b, db, &b) || __builtin_add_overflow(line, dl, &line))
				break; /* no real table gets there */
			if (cp_grow((void **)&me->lines, &cap, 2 * me->nlines + 2, sizeof(*me->lines)))
				break;
			me->lines[2 * me->nlines] = (uint32_t)b;
			me->lines[2 * me->nlines + 1] = (uint32_t)line;
			me->nlines++;
		}
	}
	/* the entry at bci, else the last one before it (as Method::line_number_from_bci) */
	for (size_t k = 0; k < me->nlines; k++) {
		int32_t eb = (int32_t)me->lines[2 * k];

		if (eb == bci)
			return (int64_t)me->lines[2 * k + 1];
		if (eb < bci && eb >= best_bci) {
			best_bci = eb;
			best = (int64_t)me->lines[2 * k + 1];
		}
	}
	return best;
}

/* what a frame of method m at line is called (key: for the caller's memo, 0: none; made the
 * line's) */
static struct cp_rt_name rt_name(const struct method *m, int64_t line, uint64_t key)
{
	return (struct cp_rt_name){ .label = m->label, .name = m->name, .sysname = m->name, .file = m->file,
				    .line = line, .key = key ? key << 20 | (uint64_t)(line & 0xfffff) : 0 };
}

/* The methods of the compiled frame at pc of process pr, those inlined first
 * (from its nmethod's debug info), and where in each (bci, -1: not known):
 * how many into me[] and bci[] (INLINE_MAX at most); 0 when pc is not an
 * nmethod's code or its method cannot be read.  An inlined method that
 * cannot be read is left out. */
static unsigned compiled(struct cp_hotspot *h, struct proc *pr, const struct layout *l, uint64_t pc,
			 struct method **me, int32_t *bci)
{
	const struct code *c = code_of(h, pr, l, pc);
	struct chain ch;
	unsigned n = 1;

	if (!c || !c->nmethod)
		return 0;
	chain_at(l, c, pc, &ch);
	if (!(me[0] = method_of(h, pr->pid, l, ch.n ? ch.m[0] : c->method)))
		return 0;
	bci[0] = ch.n ? ch.bci[0] : -1;
	for (unsigned k = 1; k < ch.n; k++)
		if ((me[n] = method_of(h, pr->pid, l, ch.m[k])))
			bci[n++] = ch.bci[k];
	return n;
}

int cp_hotspot_frames(struct cp_hotspot *h, uint32_t pid, unsigned layout, const struct cp_sample_rec *s,
		      const uint64_t *pcs, const uint64_t *fps, int n, struct cp_rt_name *out)
{
	struct proc *pr;
	const struct layout *l;
	int named = 0;

	h->calls++;
	h->ninl = 0;
	if (h->nmethods >= METHODS_MAX) /* before any name is given out: those given stay valid */
		methods_drop(h, 0);
	for (int i = 0; i < n; i++)
		out[i].label = NULL;
	if (!(pr = proc_ready(h, pid, layout)))
		return 0;
	l = &h->bins[layout].lay;
	for (int i = 0; i < n; i++) {
		uint64_t pc = i ? pcs[i] - 1 : pcs[i], m = 0, bcp;
		struct method *me;
		int32_t bci = -1;

		if (pc < pr->low || pc >= pr->high)
			continue;
		if (pc >= pr->ilo && pc < pr->ihi) {
			/* interpreted: the Method* in its frame, and its bcp (saved
			 * there at each call: a leaf's may be its last call's) */
			if (!fps[i] || !cp_unwind_stack_word(s, fps[i] + 8 * (uint64_t)(int64_t)(l->last_sp - 1), &m) ||
			    !(me = method_of(h, pid, l, m)))
				continue;
			if (cp_unwind_stack_word(s, fps[i] + 8 * (uint64_t)(int64_t)(l->last_sp - 6), &bcp) &&
			    bcp >= me->constmethod + l->constmethod_size)
				bci = (int32_t)(bcp - me->constmethod - l->constmethod_size);
		} else {
			struct method *ms[INLINE_MAX];
			int32_t bcis[INLINE_MAX];
			unsigned k = compiled(h, pr, l, pc, ms, bcis);

			if (!k)
				continue;
			me = ms[0];
			bci = bcis[0];
			if (k > 1) {
				/* methods inlined: the innermost, and those it is in */
				unsigned got = 0;
				struct cp_rt_name *inl = h->inl + h->ninl;

				for (unsigned j = 1; j < k && h->ninl + got < INL_NAMES; j++, got++)
					inl[got] = rt_name(ms[j], java_line(pid, l, ms[j], bcis[j]), 0);
				h->ninl += got;
				out[i] = rt_name(me, java_line(pid, l, me, bci), 0);
				out[i].inl = inl;
				out[i].ninl = got;
				named++;
				continue;
			}
		}
		out[i] = rt_name(me, bci >= 0 ? java_line(pid, l, me, bci) : 0, me->key);
		named++;
	}
	return named;
}

const char *cp_hotspot_method17(struct cp_hotspot *h, uint32_t pid, uint64_t m, int32_t bci, int64_t *line)
{
	struct method *me;

	h->calls++;
	if (h->nmethods >= METHODS_MAX)
		methods_drop(h, 0);
	me = method_of(h, pid, &jdk17, m);
	*line = me ? java_line(pid, &jdk17, me, bci) : 0;
	return me ? me->label : NULL;
}

unsigned cp_hotspot_compiled17(struct cp_hotspot *h, uint32_t pid, uint64_t lo, uint64_t hi, uint64_t segmap,
			       int log2, uint64_t pc, const char **names, int64_t *lines)
{
	struct proc pr = { .pid = pid, .ready = true, .low = lo, .high = hi, .nheaps = 1 };
	struct method *ms[INLINE_MAX];
	int32_t bcis[INLINE_MAX];
	unsigned n;

	pr.heaps[0].lo = lo;
	pr.heaps[0].hi = hi;
	pr.heaps[0].segmap = segmap;
	pr.heaps[0].log2 = log2;
	h->calls++;
	if (h->nmethods >= METHODS_MAX)
		methods_drop(h, 0);
	n = compiled(h, &pr, &jdk17, pc, ms, bcis);
	for (unsigned k = 0; k < n; k++) {
		names[k] = ms[k]->label;
		lines[k] = java_line(pid, &jdk17, ms[k], bcis[k]);
	}
	codes_clear(&pr);
	return n;
}

/* ---- the runtime's row (lib/sampling/runtime.h) ---- */

static void *rt_new(const char *verb)
{
	return cp_hotspot_new(verb);
}

static void rt_free(void *st)
{
	cp_hotspot_free(st);
}

static int rt_detect(void *st, struct cp_proc *p, void *data, struct cp_rt_found *f)
{
	(void)data;
	return cp_hotspot_detect(st, p, &f->layout);
}

static int rt_native(void *st, uint32_t pid, unsigned layout, const struct cp_sample_rec *s, const uint64_t *pcs,
		     const uint64_t *fps, int n, struct cp_rt_name *out)
{
	return cp_hotspot_frames(st, pid, layout, s, pcs, fps, n, out);
}

static int rt_unwind(void *st, uint32_t pid, unsigned layout, uint64_t pc, bool exact, uint64_t *cfa_sp,
		     bool *bp_saved)
{
	return cp_hotspot_unwind(st, pid, layout, pc, exact, cfa_sp, bp_saved);
}

static void rt_forget(void *st, uint32_t pid)
{
	cp_hotspot_forget(st, pid);
}

const struct cp_runtime cp_runtime_hotspot = {
	.name = "java",
	.id = CP_RT_ID_hotspot,
	.new = rt_new,
	.free = rt_free,
	.named = cp_hotspot_named,
	.detect = rt_detect,
	.native = rt_native,
	.unwind = rt_unwind,
	.forget = rt_forget,
};

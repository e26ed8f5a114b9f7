/* SPDX-License-Identifier: MIT */
/* The JFR reader (jfr.h).  A chunk is: a 68-byte header (magic, version,
 * chunk size, constant pool offset, metadata offset, start nanos, duration
 * nanos, start ticks, ticks per second, features), then events, each
 * "size type fields...", size and type compressed integers.  Event type 0 is
 * the metadata (a string table and an element tree: root > metadata > class >
 * field), type 1 a checkpoint (constant pools: "type count (key value)..."),
 * the newest at the header's offset, each naming the one before by a
 * negative delta.  A value is read field by field as its class says: a
 * constant-pool field is a key, an array a count and its elements, a
 * primitive a compressed integer (byte and boolean a byte, float and double
 * big-endian), a string "encoding [length] bytes", any other class its own
 * fields in turn. */
#include "jfr.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "decode_limits.h"
#include "error.h"
#include "util.h"

#define CHUNK_HEADER 68
#define MAX_DEPTH 32
#define DEFAULT_PERIOD 10000000 /* 10 ms: async-profiler's interval, settings=profile's period */

const char *const cp_jfr_types[CP_JFR_NTYPES][2] = {
	{ "cpu", "nanoseconds" },
	{ "wall", "nanoseconds" },
	{ "alloc_in_new_tlab_objects", "count" },
	{ "alloc_in_new_tlab_bytes", "bytes" },
	{ "alloc_outside_tlab_objects", "count" },
	{ "alloc_outside_tlab_bytes", "bytes" },
	{ "alloc_sample_objects", "count" },
	{ "alloc_sample_bytes", "bytes" },
	{ "mutex_contentions", "count" },
	{ "mutex_delay", "nanoseconds" },
	{ "block_contentions", "count" },
	{ "block_delay", "nanoseconds" },
};

/* per kind: its first column in cp_jfr_types, how many, Pyroscope's names */
static const struct kind_info {
	int col, ncols;
	const char *name, *event;
	const char *types[2][2];
	const char *period[2];
} kinds[CP_JFR_NKINDS] = {
	[CP_JFR_CPU] = { 0, 1, "process_cpu", "jdk.ExecutionSample", { { "cpu", "nanoseconds" } }, { "cpu", "nanoseconds" } },
	[CP_JFR_WALL] = { 1, 1, "wall", "profiler.WallClockSample", { { "wall", "nanoseconds" } }, { "wall", "nanoseconds" } },
	[CP_JFR_ALLOC_TLAB] = { 2, 2, "memory", "jdk.ObjectAllocationInNewTLAB",
				{ { "alloc_in_new_tlab_objects", "count" }, { "alloc_in_new_tlab_bytes", "bytes" } },
				{ "space", "bytes" } },
	[CP_JFR_ALLOC_OUTSIDE] = { 4, 2, "memory", "jdk.ObjectAllocationOutsideTLAB",
				   { { "alloc_outside_tlab_objects", "count" }, { "alloc_outside_tlab_bytes", "bytes" } },
				   { "space", "bytes" } },
	[CP_JFR_ALLOC_SAMPLE] = { 6, 2, "memory", "jdk.ObjectAllocationSample",
				  { { "alloc_sample_objects", "count" }, { "alloc_sample_bytes", "bytes" } },
				  { "space", "bytes" } },
	[CP_JFR_LOCK] = { 8, 2, "mutex", "jdk.JavaMonitorEnter", { { "contentions", "count" }, { "delay", "nanoseconds" } },
			  { "mutex", "count" } },
	[CP_JFR_PARK] = { 10, 2, "block", "jdk.ThreadPark", { { "contentions", "count" }, { "delay", "nanoseconds" } },
			  { "block", "count" } },
};

size_t cp_jfr_varint(const uint8_t *p, const uint8_t *end, uint64_t *v)
{
	uint64_t r = 0;
	size_t n;

	for (n = 0; n < 9 && p + n < end; n++) {
		uint8_t b = p[n];

		if (n == 8) {
			*v = r | (uint64_t)b << 56;
			return 9;
		}
		r |= (uint64_t)(b & 0x7f) << (7 * n);
		if (!(b & 0x80)) {
			*v = r;
			return n + 1;
		}
	}
	return 0;
}

/* ---- the decoder's state ---- */

enum prim { P_OBJ, P_BOOL, P_BYTE, P_CHAR, P_SHORT, P_INT, P_LONG, P_FLOAT, P_DOUBLE, P_STRING };

/* a string as it is in the file: encoding 0 null, 1 empty, 2 a key in the
 * java.lang.String pool, 3 UTF-8, 4 UTF-16 chars (compressed integers),
 * 5 Latin-1 */
struct jstr {
	const uint8_t *p;
	uint32_t len;
	uint8_t enc;
	uint64_t ref;
};

struct jfield {
	const char *name;
	int64_t type;
	int32_t cls; /* index into classes, -1 when not found */
	bool cpool, array;
};

struct jclass {
	int64_t id;
	const char *name;
	struct jfield *fields;
	uint32_t nfields;
	size_t fcap;
	enum prim prim;
	uint8_t width; /* 0 unknown, 1 being worked out, 2 takes no bytes, 3 takes some */
};

/* a value read for a wanted field */
struct val {
	uint64_t num;
	struct jstr s;
	bool set;
};

struct pent {
	uint64_t key;
	uint64_t a, b; /* class: name symbol; method: class, name; stack trace: first frame, count */
	struct jstr s; /* symbol, string, thread state */
	int64_t memo;  /* stack trace: the profile's stack (-1 not yet); method: function */
};

struct pool {
	struct pent *e;
	size_t n, cap;
};

struct jframe {
	uint64_t method;
	int64_t line;
};

enum { POOL_SYMBOL, POOL_CLASS, POOL_METHOD, POOL_STACK, POOL_STATE, POOL_STRING, NPOOLS };

struct jfr {
	const uint8_t *buf, *chunk, *cend;
	size_t len;
	uint64_t tps; /* ticks per second */
	size_t mem, maxmem;
	/* metadata of the chunk */
	char **strs;
	size_t nstrs;
	struct jclass *classes;
	size_t nclasses, ccap;
	struct pool pools[NPOOLS];
	struct jframe *frames;
	size_t nframes, frcap;
	/* classes wanted (indices, -1 none) */
	int c_pool[NPOOLS], c_frame, c_setting, c_ev[CP_JFR_NKINDS], c_exec;
	/* recording settings */
	int64_t period;
	bool period_set, wall_mode;
	/* output */
	struct cp_profile *p;
	uint64_t events[CP_JFR_NKINDS];
	uint32_t *locs;
	size_t locap;
	char *name;
	size_t namecap;
};

struct rd {
	const uint8_t *p, *end;
};

static int bad(struct jfr *j, const uint8_t *at, const char *what)
{
	return cp_error(EINVAL, "not a valid JFR file: %s at offset %zu", what, (size_t)(at - j->buf));
}

static int nomem(void)
{
	return cp_error(ENOMEM, "out of memory reading a JFR file");
}

static int get_u(struct jfr *j, struct rd *r, uint64_t *v, const char *what)
{
	size_t n = cp_jfr_varint(r->p, r->end, v);

	if (!n)
		return bad(j, r->p, what);
	r->p += n;
	return 0;
}

/* a count of things that take at least one byte each: at most the bytes left */
static int get_count(struct jfr *j, struct rd *r, uint64_t *v, const char *what)
{
	const uint8_t *at = r->p;
	int err = get_u(j, r, v, what);

	if (!err && *v > (uint64_t)(r->end - r->p))
		return cp_error(EINVAL, "not a valid JFR file: %s %" PRIu64 " is past the end of its event at offset %zu",
				what, *v, (size_t)(at - j->buf));
	return err;
}

static int take_mem(struct jfr *j, size_t bytes)
{
	j->mem += bytes;
	if (j->mem > j->maxmem)
		return cp_decode_too_large(j->maxmem);
	return 0;
}

static int read_str(struct jfr *j, struct rd *r, struct jstr *s)
{
	uint64_t n;
	int err;

	memset(s, 0, sizeof(*s));
	if (r->p >= r->end)
		return bad(j, r->p, "a string past the end");
	s->enc = *r->p++;
	switch (s->enc) {
	case 0:
	case 1:
		return 0;
	case 2:
		return get_u(j, r, &s->ref, "a string reference");
	case 3:
	case 5:
		if ((err = get_count(j, r, &n, "string length")))
			return err;
		s->p = r->p;
		s->len = (uint32_t)n;
		r->p += n;
		return 0;
	case 4:
		if ((err = get_count(j, r, &n, "string length")))
			return err;
		s->p = r->p;
		s->len = (uint32_t)n;
		for (uint64_t i = 0; i < n; i++) {
			uint64_t c;

			if ((err = get_u(j, r, &c, "a string's character")))
				return err;
		}
		return 0;
	default:
		return bad(j, r->p - 1, "an unknown string encoding");
	}
}

static size_t put_utf8(char *out, uint32_t c)
{
	if (c < 0x80) {
		out[0] = (char)c;
		return 1;
	}
	if (c < 0x800) {
		out[0] = (char)(0xc0 | c >> 6);
		out[1] = (char)(0x80 | (c & 0x3f));
		return 2;
	}
	if (c > 0xffff)
		c = 0xfffd;
	out[0] = (char)(0xe0 | c >> 12);
	out[1] = (char)(0x80 | ((c >> 6) & 0x3f));
	out[2] = (char)(0x80 | (c & 0x3f));
	return 3;
}

static struct pent *pool_find(struct pool *pl, uint64_t key)
{
	size_t lo = 0, hi = pl->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (pl->e[mid].key < key)
			lo = mid + 1;
		else if (pl->e[mid].key > key)
			hi = mid;
		else
			return &pl->e[mid];
	}
	return NULL;
}

/* The text of s (a reference resolved once: a string pool entry that is a
 * reference again reads as empty), appended to *buf from *len, NUL-ended.
 * 0 or -ENOMEM. */
static int str_text(struct jfr *j, const struct jstr *s, char **buf, size_t *cap, size_t *len)
{
	size_t need = *len + (s->enc == 4 ? (size_t)s->len * 3 : s->enc == 5 ? (size_t)s->len * 2 : s->len) + 1;
	struct rd r = { s->p, s->p ? j->cend : NULL };
	char *o;

	if (s->enc == 2) {
		struct pent *e = pool_find(&j->pools[POOL_STRING], s->ref);

		if (!e || e->s.enc == 2)
			return str_text(j, &(struct jstr){ .enc = 1 }, buf, cap, len);
		return str_text(j, &e->s, buf, cap, len);
	}
	if (cp_grow((void **)buf, cap, need, 1))
		return nomem();
	o = *buf + *len;
	if (s->enc == 3) {
		memcpy(o, s->p, s->len);
		o += s->len;
	} else if (s->enc == 5) {
		for (uint32_t i = 0; i < s->len; i++)
			o += put_utf8(o, s->p[i]);
	} else if (s->enc == 4) {
		for (uint32_t i = 0; i < s->len; i++) {
			uint64_t c = 0;
			size_t n = cp_jfr_varint(r.p, r.end, &c);

			r.p += n;
			o += put_utf8(o, c > 0x10ffff ? 0xfffd : (uint32_t)c);
		}
	}
	*o = 0;
	*len = (size_t)(o - *buf);
	return 0;
}

/* ---- values ---- */

static int read_value(struct jfr *j, struct rd *r, const struct jfield *f, int depth, struct val *out);

static int read_one(struct jfr *j, struct rd *r, const struct jfield *f, int depth, struct val *out)
{
	const struct jclass *c;
	uint64_t v = 0;
	int err;

	if (f->cpool)
		return get_u(j, r, out ? &out->num : &v, "a constant pool key");
	if (f->cls < 0)
		return cp_error(EINVAL, "not a valid JFR file: field %s has type %" PRId64 ", which the metadata does not describe",
				f->name, f->type);
	c = &j->classes[f->cls];
	switch (c->prim) {
	case P_BOOL:
	case P_BYTE:
		if (r->p >= r->end)
			return bad(j, r->p, "a byte past the end");
		v = *r->p++;
		break;
	case P_CHAR:
	case P_SHORT:
	case P_INT:
	case P_LONG:
		if ((err = get_u(j, r, &v, "an integer")))
			return err;
		if (c->prim != P_LONG)
			v = (uint64_t)(int64_t)(int32_t)(uint32_t)v;
		break;
	case P_FLOAT:
	case P_DOUBLE: {
		size_t n = c->prim == P_FLOAT ? 4 : 8;

		if ((size_t)(r->end - r->p) < n)
			return bad(j, r->p, "a number past the end");
		r->p += n;
		break;
	}
	case P_STRING:
		if (out)
			return read_str(j, r, &out->s);
		{
			struct jstr s;

			return read_str(j, r, &s);
		}
	case P_OBJ:
		if (depth >= MAX_DEPTH)
			return bad(j, r->p, "values nested too deep");
		for (uint32_t i = 0; i < c->nfields; i++)
			if ((err = read_value(j, r, &c->fields[i], depth + 1, NULL)))
				return err;
		break;
	}
	if (out)
		out->num = v;
	return 0;
}

static int read_value(struct jfr *j, struct rd *r, const struct jfield *f, int depth, struct val *out)
{
	uint64_t n, i;
	int err;

	if (!f->array)
		return read_one(j, r, f, depth, out);
	if ((err = get_count(j, r, &n, "array length")))
		return err;
	for (i = 0; i < n; i++) {
		const uint8_t *at = r->p;

		if ((err = read_one(j, r, &(struct jfield){ f->name, f->type, f->cls, f->cpool, false }, depth, NULL)))
			return err;
		if (r->p == at) /* elements that take no bytes: the others take none either */
			break;
	}
	return 0;
}

/* Reads an object of class c, keeping the fields named in want[] (NULL-ended)
 * into out[]. */
static int read_object(struct jfr *j, struct rd *r, int cls, const char *const *want, struct val *out)
{
	const struct jclass *c = &j->classes[cls];
	int err;

	for (size_t k = 0; want[k]; k++)
		out[k].set = false;
	if (c->prim != P_OBJ) { /* a pool of plain values (java.lang.String) */
		struct jfield f = { c->name, c->id, cls, false, false };

		out[0].set = true;
		return read_one(j, r, &f, 0, out);
	}
	for (uint32_t i = 0; i < c->nfields; i++) {
		const struct jfield *f = &c->fields[i];
		struct val *o = NULL;

		for (size_t k = 0; want[k] && !o; k++)
			if (!f->array && !strcmp(f->name, want[k]))
				o = &out[k];
		if (o)
			o->set = true;
		if ((err = read_value(j, r, f, 1, o)))
			return err;
	}
	return 0;
}

/* ---- metadata ---- */

enum elem { E_TOP, E_ROOT, E_METADATA, E_CLASS, E_FIELD, E_OTHER };

static const char *attr(struct jfr *j, const uint64_t (*attrs)[2], size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(j->strs[attrs[i][0]], name))
			return j->strs[attrs[i][1]];
	return NULL;
}

static int read_element(struct jfr *j, struct rd *r, enum elem parent, int depth)
{
	uint64_t name, nattrs, nchildren, (*attrs)[2] = NULL;
	const char *ename;
	enum elem kind = E_OTHER;
	int err = 0;

	if (depth > MAX_DEPTH)
		return bad(j, r->p, "metadata nested too deep");
	if ((err = get_u(j, r, &name, "an element name")))
		return err;
	if (name >= j->nstrs)
		return bad(j, r->p, "an element name out of the string table");
	ename = j->strs[name];
	if ((err = get_count(j, r, &nattrs, "attribute count")))
		return err;
	if (nattrs && !(attrs = malloc(nattrs * sizeof(*attrs))))
		return nomem();
	for (uint64_t i = 0; i < nattrs; i++) {
		if ((err = get_u(j, r, &attrs[i][0], "an attribute")) || (err = get_u(j, r, &attrs[i][1], "an attribute")))
			goto out;
		if (attrs[i][0] >= j->nstrs || attrs[i][1] >= j->nstrs) {
			err = bad(j, r->p, "an attribute out of the string table");
			goto out;
		}
	}
	if (parent == E_TOP)
		kind = E_ROOT;
	else if (parent == E_ROOT && !strcmp(ename, "metadata"))
		kind = E_METADATA;
	else if (parent == E_METADATA && !strcmp(ename, "class"))
		kind = E_CLASS;
	else if (parent == E_CLASS && !strcmp(ename, "field"))
		kind = E_FIELD;
	if (kind == E_CLASS) {
		const char *id = attr(j, (const void *)attrs, nattrs, "id"), *cn = attr(j, (const void *)attrs, nattrs, "name");
		struct jclass *c;

		if (!id || !cn) {
			err = bad(j, r->p, "a class without id or name");
			goto out;
		}
		if (cp_grow((void **)&j->classes, &j->ccap, j->nclasses + 1, sizeof(*j->classes)) ||
		    (err = take_mem(j, sizeof(*c)))) {
			err = err ? err : nomem();
			goto out;
		}
		c = &j->classes[j->nclasses++];
		memset(c, 0, sizeof(*c));
		c->id = strtoll(id, NULL, 10);
		c->name = cn;
	} else if (kind == E_FIELD) {
		const char *fn = attr(j, (const void *)attrs, nattrs, "name"), *ft = attr(j, (const void *)attrs, nattrs, "class"),
			   *cpool = attr(j, (const void *)attrs, nattrs, "constantPool"),
			   *dim = attr(j, (const void *)attrs, nattrs, "dimension");
		struct jclass *c = &j->classes[j->nclasses - 1];
		struct jfield *f;

		if (!fn || !ft) {
			err = bad(j, r->p, "a field without name or class");
			goto out;
		}
		if (cp_grow((void **)&c->fields, &c->fcap, c->nfields + 1, sizeof(*c->fields)) ||
		    (err = take_mem(j, sizeof(*f)))) {
			err = err ? err : nomem();
			goto out;
		}
		f = &c->fields[c->nfields++];
		f->name = fn;
		f->type = strtoll(ft, NULL, 10);
		f->cls = -1;
		f->cpool = cpool && !strcmp(cpool, "true");
		f->array = dim && strcmp(dim, "0");
	}
	if ((err = get_count(j, r, &nchildren, "child count")))
		goto out;
	for (uint64_t i = 0; i < nchildren; i++)
		if ((err = read_element(j, r, kind, depth + 1)))
			goto out;
out:
	free(attrs);
	return err;
}

static int class_cmp(const void *a, const void *b)
{
	const struct jclass *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

static int find_class(struct jfr *j, int64_t id)
{
	size_t lo = 0, hi = j->nclasses;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (j->classes[mid].id < id)
			lo = mid + 1;
		else if (j->classes[mid].id > id)
			hi = mid;
		else
			return (int)mid;
	}
	return -1;
}

static int class_named(struct jfr *j, const char *name)
{
	for (size_t i = 0; i < j->nclasses; i++)
		if (!strcmp(j->classes[i].name, name))
			return (int)i;
	return -1;
}

/* Whether a value of class c takes bytes: a class whose fields all take none
 * (none at all, or only such classes) takes none, and is left out of the
 * classes that hold it, so that each field read takes a byte at least (the
 * work per event is bounded by its size).  A class that holds itself is
 * taken to take bytes: reading it fails, nested too deep. */
static bool takes_bytes(struct jfr *j, int cls, int depth)
{
	struct jclass *c = &j->classes[cls];

	if (c->width >= 2)
		return c->width == 3;
	if (c->width == 1 || depth > MAX_DEPTH || c->prim != P_OBJ)
		return true;
	c->width = 1;
	for (uint32_t i = 0; i < c->nfields; i++) {
		const struct jfield *f = &c->fields[i];

		if (f->cpool || f->array || f->cls < 0 || takes_bytes(j, f->cls, depth + 1)) {
			c->width = 3;
			return true;
		}
	}
	c->width = 2;
	return false;
}

static void free_metadata(struct jfr *j)
{
	for (size_t i = 0; i < j->nstrs; i++)
		free(j->strs[i]);
	free(j->strs);
	for (size_t i = 0; i < j->nclasses; i++)
		free(j->classes[i].fields);
	free(j->classes);
	j->strs = NULL;
	j->classes = NULL;
	j->nstrs = j->nclasses = j->ccap = 0;
	for (int i = 0; i < NPOOLS; i++) {
		free(j->pools[i].e);
		memset(&j->pools[i], 0, sizeof(j->pools[i]));
	}
	free(j->frames);
	j->frames = NULL;
	j->nframes = j->frcap = 0;
	j->mem = 0;
}

static int read_metadata(struct jfr *j, uint64_t off)
{
	static const char *const prims[][2] = {
		{ "boolean", "\x01" }, { "byte", "\x02" }, { "char", "\x03" },	 { "short", "\x04" },		{ "int", "\x05" },
		{ "long", "\x06" },    { "float", "\x07" }, { "double", "\x08" }, { "java.lang.String", "\x09" },
	};
	static const char *const pool_names[NPOOLS] = { "jdk.types.Symbol",	  "java.lang.Class",
							"jdk.types.Method",	  "jdk.types.StackTrace",
							"jdk.types.ThreadState", "java.lang.String" };
	struct rd r;
	uint64_t size, v, n;
	size_t i;
	int err;

	if (off < CHUNK_HEADER || off >= (uint64_t)(j->cend - j->chunk))
		return bad(j, j->chunk + 24, "the metadata offset is outside its chunk");
	r.p = j->chunk + off;
	r.end = j->cend;
	if ((err = get_u(j, &r, &size, "metadata size")))
		return err;
	if (!size || size > (uint64_t)(j->cend - j->chunk) - off)
		return bad(j, j->chunk + off, "the metadata size is past the end of its chunk");
	r.end = j->chunk + off + size;
	if ((err = get_u(j, &r, &v, "metadata type")))
		return err;
	if (v != 0)
		return bad(j, j->chunk + off, "the metadata offset is not at a metadata event");
	for (i = 0; i < 3; i++) /* start, duration, metadata id */
		if ((err = get_u(j, &r, &v, "metadata header")))
			return err;
	if ((err = get_count(j, &r, &n, "metadata string count")) || (err = take_mem(j, n * sizeof(char *))))
		return err;
	if (n && !(j->strs = calloc(n, sizeof(*j->strs))))
		return nomem();
	for (i = 0; i < n; i++) {
		struct jstr s;
		size_t cap = 0, len = 0;

		if ((err = read_str(j, &r, &s)))
			return err;
		if (s.enc == 2)
			s.enc = 1; /* no pools yet */
		if ((err = str_text(j, &s, &j->strs[i], &cap, &len)))
			return err;
		j->nstrs++;
		if ((err = take_mem(j, cap)))
			return err;
	}
	if ((err = read_element(j, &r, E_TOP, 0)))
		return err;
	cp_qsort(j->classes, j->nclasses, sizeof(*j->classes), class_cmp);
	for (i = 0; i < j->nclasses; i++) {
		struct jclass *c = &j->classes[i];

		if (i && c->id == j->classes[i - 1].id)
			return bad(j, j->chunk + off, "two classes with one id in the metadata");
		c->prim = P_OBJ;
		for (size_t k = 0; k < sizeof(prims) / sizeof(prims[0]); k++)
			if (!strcmp(c->name, prims[k][0]))
				c->prim = (enum prim)prims[k][1][0];
		for (uint32_t f = 0; f < c->nfields; f++)
			c->fields[f].cls = find_class(j, c->fields[f].type);
	}
	for (i = 0; i < j->nclasses; i++) {
		struct jclass *c = &j->classes[i];
		uint32_t kept = 0;

		for (uint32_t f = 0; f < c->nfields; f++) {
			const struct jfield *fd = &c->fields[f];

			if (fd->cpool || fd->array || fd->cls < 0 || takes_bytes(j, fd->cls, 0))
				c->fields[kept++] = *fd;
		}
		c->nfields = kept;
	}
	for (i = 0; i < NPOOLS; i++)
		j->c_pool[i] = class_named(j, pool_names[i]);
	j->c_frame = class_named(j, "jdk.types.StackFrame");
	j->c_setting = class_named(j, "jdk.ActiveSetting");
	j->c_exec = class_named(j, "jdk.ExecutionSample");
	for (i = 0; i < CP_JFR_NKINDS; i++)
		j->c_ev[i] = class_named(j, kinds[i].event);
	return 0;
}

/* ---- constant pools ---- */

static int read_stacktrace(struct jfr *j, struct rd *r, int cls, struct pent *e)
{
	static const char *const want[] = { "method", "lineNumber", NULL };
	const struct jclass *c = &j->classes[cls];
	int err = 0;

	e->a = j->nframes;
	e->b = 0;
	for (uint32_t i = 0; i < c->nfields; i++) {
		const struct jfield *f = &c->fields[i];
		uint64_t n;

		if (strcmp(f->name, "frames") || !f->array || f->cpool || f->cls < 0 || f->cls != j->c_frame ||
		    j->classes[f->cls].prim != P_OBJ) {
			if ((err = read_value(j, r, f, 1, NULL)))
				return err;
			continue;
		}
		if ((err = get_count(j, r, &n, "frame count")))
			return err;
		for (uint64_t k = 0; k < n; k++) {
			struct val v[2];
			const uint8_t *at = r->p;

			if ((err = read_object(j, r, f->cls, want, v)))
				return err;
			if (r->p == at)
				break;
			if (!v[0].set)
				continue;
			if (cp_grow((void **)&j->frames, &j->frcap, j->nframes + 1, sizeof(*j->frames)) ||
			    (err = take_mem(j, sizeof(*j->frames))))
				return err ? err : nomem();
			j->frames[j->nframes].method = v[0].num;
			j->frames[j->nframes].line = v[1].set ? (int64_t)v[1].num : 0;
			j->nframes++;
			e->b++;
		}
	}
	return 0;
}

static int read_pool_entry(struct jfr *j, struct rd *r, int which, int cls, uint64_t key)
{
	static const char *const want[NPOOLS][3] = {
		[POOL_SYMBOL] = { "string", NULL },
		[POOL_CLASS] = { "name", NULL },
		[POOL_METHOD] = { "type", "name", NULL },
		[POOL_STACK] = { NULL },
		[POOL_STATE] = { "name", NULL },
		[POOL_STRING] = { "", NULL },
	};
	struct pool *pl = &j->pools[which];
	struct pent *e;
	struct val v[2];
	int err = 0;

	if (cp_grow((void **)&pl->e, &pl->cap, pl->n + 1, sizeof(*pl->e)) || (err = take_mem(j, sizeof(*pl->e))))
		return err ? err : nomem();
	e = &pl->e[pl->n];
	memset(e, 0, sizeof(*e));
	e->key = key;
	e->memo = -1;
	if (which == POOL_STACK)
		err = read_stacktrace(j, r, cls, e);
	else
		err = read_object(j, r, cls, want[which], v);
	if (err)
		return err;
	switch (which) {
	case POOL_SYMBOL:
	case POOL_STATE:
	case POOL_STRING:
		if (v[0].set)
			e->s = v[0].s;
		break;
	case POOL_CLASS:
		e->a = v[0].set ? v[0].num : 0;
		break;
	case POOL_METHOD:
		e->a = v[0].set ? v[0].num : 0;
		e->b = v[1].set ? v[1].num : 0;
		break;
	}
	pl->n++;
	return 0;
}

static int pent_cmp(const void *a, const void *b)
{
	const struct pent *x = a, *y = b;

	return x->key < y->key ? -1 : x->key > y->key;
}

static int read_checkpoint(struct jfr *j, const uint8_t *at, int64_t *delta)
{
	struct rd r = { at, j->cend };
	uint64_t size, v, npools;
	int err;

	if ((err = get_u(j, &r, &size, "checkpoint size")))
		return err;
	if (!size || size > (uint64_t)(j->cend - at))
		return bad(j, at, "a checkpoint size past the end of its chunk");
	r.end = at + size;
	if ((err = get_u(j, &r, &v, "checkpoint type")))
		return err;
	if (v != 1)
		return bad(j, at, "the constant pool offset is not at a checkpoint event");
	if ((err = get_u(j, &r, &v, "checkpoint start")) || (err = get_u(j, &r, &v, "checkpoint duration")) ||
	    (err = get_u(j, &r, &v, "checkpoint delta")))
		return err;
	*delta = (int64_t)v;
	if (r.p >= r.end)
		return bad(j, r.p, "a checkpoint past the end");
	r.p++; /* the checkpoint's kind (flush, chunk header, statics, thread) */
	if ((err = get_count(j, &r, &npools, "pool count")))
		return err;
	for (uint64_t i = 0; i < npools; i++) {
		uint64_t type, count;
		int cls, which = -1;

		if ((err = get_u(j, &r, &type, "pool type")) || (err = get_count(j, &r, &count, "pool size")))
			return err;
		if ((cls = find_class(j, (int64_t)type)) < 0)
			return cp_error(EINVAL, "not a valid JFR file: a constant pool of type %" PRIu64
						", which the metadata does not describe, at offset %zu",
					type, (size_t)(r.p - j->buf));
		for (int k = 0; k < NPOOLS; k++)
			if (j->c_pool[k] == cls)
				which = k;
		for (uint64_t k = 0; k < count; k++) {
			uint64_t key;

			if ((err = get_u(j, &r, &key, "a constant's key")))
				return err;
			if (which >= 0)
				err = read_pool_entry(j, &r, which, cls, key);
			else
				err = read_one(j, &r, &(struct jfield){ "constant", (int64_t)type, cls, false, false }, 0, NULL);
			if (err)
				return err;
		}
	}
	return 0;
}

static int read_pools(struct jfr *j, uint64_t off)
{
	const uint8_t *at;
	int64_t delta = 0;
	int err;

	if (off < CHUNK_HEADER || off >= (uint64_t)(j->cend - j->chunk))
		return bad(j, j->chunk + 16, "the constant pool offset is outside its chunk");
	at = j->chunk + off;
	for (;;) {
		if ((err = read_checkpoint(j, at, &delta)))
			return err;
		if (!delta)
			break;
		/* each checkpoint names an earlier one: the chain cannot loop */
		if (delta > 0 || (uint64_t)-delta > (uint64_t)(at - j->chunk) - CHUNK_HEADER)
			return bad(j, at, "a checkpoint that does not point back into its chunk");
		at += delta;
	}
	for (int i = 0; i < NPOOLS; i++)
		cp_qsort(j->pools[i].e, j->pools[i].n, sizeof(*j->pools[i].e), pent_cmp);
	return 0;
}

/* ---- events into the profile ---- */

static int function_of(struct jfr *j, struct pent *m, uint32_t *fid)
{
	struct pent *cls, *cname = NULL, *mname;
	struct cp_function fn = { 0 };
	size_t len = 0, i;
	int64_t id;
	int err;

	if (m->memo >= 0) {
		*fid = (uint32_t)m->memo;
		return 0;
	}
	cls = pool_find(&j->pools[POOL_CLASS], m->a);
	if (cls)
		cname = pool_find(&j->pools[POOL_SYMBOL], cls->a);
	mname = pool_find(&j->pools[POOL_SYMBOL], m->b);
	if (cname && (err = str_text(j, &cname->s, &j->name, &j->namecap, &len)))
		return err;
	for (i = 0; i < len; i++)
		if (j->name[i] == '/')
			j->name[i] = '.';
	if ((err = str_text(j, &(struct jstr){ .p = (const uint8_t *)".", .len = 1, .enc = 3 }, &j->name, &j->namecap,
			    &len)) ||
	    (err = mname ? str_text(j, &mname->s, &j->name, &j->namecap, &len) :
			   str_text(j, &(struct jstr){ .p = (const uint8_t *)"[unknown]", .len = 9, .enc = 3 }, &j->name,
				    &j->namecap, &len)))
		return err;
	if ((id = cp_profile_strn(j->p, j->name, len)) < 0)
		return (int)id;
	fn.name = fn.system_name = (uint32_t)id;
	if ((id = cp_profile_function(j->p, &fn)) < 0)
		return (int)id;
	m->memo = id;
	*fid = (uint32_t)id;
	return 0;
}

static int stack_of(struct jfr *j, uint64_t key, uint32_t *stack)
{
	const struct cp_decode_limits *lim = cp_decode_limits();
	struct pent *st = pool_find(&j->pools[POOL_STACK], key);
	size_t n = 0;
	int64_t id;
	int err;

	if (!st) { /* no stack trace (an event without one, or a key the pools lack) */
		*stack = 0;
		return 0;
	}
	if (st->memo >= 0) {
		*stack = (uint32_t)st->memo;
		return 0;
	}
	if (cp_grow((void **)&j->locs, &j->locap, st->b + 1, sizeof(*j->locs)))
		return nomem();
	for (uint64_t i = 0; i < st->b; i++) {
		const struct jframe *f = &j->frames[st->a + i];
		struct pent *m = pool_find(&j->pools[POOL_METHOD], f->method);
		struct cp_line line = { 0 };

		if (!m)
			continue;
		if ((err = function_of(j, m, &line.function)))
			return err;
		line.line = f->line;
		if ((id = cp_profile_location(j->p, 0, 0, &line, 1, false)) < 0)
			return (int)id;
		if (j->p->nlocations > lim->max_locations)
			return cp_decode_too_many("locations (distinct method lines)", lim->max_locations);
		j->locs[n++] = (uint32_t)id;
	}
	if ((id = cp_profile_stack(j->p, j->locs, n)) < 0)
		return (int)id;
	st->memo = id;
	*stack = (uint32_t)id;
	return 0;
}

static int64_t ticks_ns(struct jfr *j, uint64_t ticks)
{
	unsigned __int128 ns;

	if (!j->tps || j->tps == 1000000000)
		return ticks > INT64_MAX ? INT64_MAX : (int64_t)ticks;
	ns = (unsigned __int128)ticks * 1000000000u / j->tps;
	return ns > INT64_MAX ? INT64_MAX : (int64_t)ns;
}

/* "10 ms", "20ms", "1 s", "500 us", "1000000 ns", or a number of nanoseconds */
static int64_t parse_period(const char *s)
{
	static const struct {
		const char *unit;
		int64_t mul;
	} units[] = { { "ns", 1 }, { "us", 1000 }, { "ms", 1000000 }, { "s", 1000000000 } };
	char *end;
	long long v = strtoll(s, &end, 10);

	if (end == s || v <= 0 || v > INT32_MAX)
		return 0;
	while (*end == ' ')
		end++;
	if (!*end)
		return v;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (!strcmp(end, units[i].unit))
			return v * units[i].mul;
	return 0;
}

static int on_setting(struct jfr *j, struct rd *r)
{
	static const char *const want[] = { "id", "name", "value", NULL };
	struct val v[3];
	char *name = NULL, *value = NULL;
	size_t ncap = 0, nlen = 0, vcap = 0, vlen = 0;
	int err;

	if ((err = read_object(j, r, j->c_setting, want, v)))
		return err;
	if (!v[1].set || !v[2].set)
		return 0;
	if ((err = str_text(j, &v[1].s, &name, &ncap, &nlen)) || (err = str_text(j, &v[2].s, &value, &vcap, &vlen)))
		goto out;
	if (j->c_exec >= 0 && v[0].set && v[0].num == (uint64_t)j->classes[j->c_exec].id && !strcmp(name, "period")) {
		int64_t p = parse_period(value);

		if (p) {
			j->period = p;
			j->period_set = true;
		}
	} else if (!strcmp(name, "interval") && !j->period_set) { /* async-profiler's, in ns */
		int64_t p = parse_period(value);

		if (p)
			j->period = p;
	} else if (!strcmp(name, "event")) {
		j->wall_mode = !strcmp(value, "wall");
	}
out:
	free(name);
	free(value);
	return err;
}

/* an event of kind k: its stack and values into the profile */
static int on_event(struct jfr *j, struct rd *r, int k)
{
	static const char *const want[] = { "stackTrace", "state",	  "weight",	  "duration",
					     "tlabSize",   "allocationSize", "samples", "contextId", NULL };
	const struct cp_decode_limits *lim = cp_decode_limits();
	int64_t vals[CP_JFR_NTYPES] = { 0 };
	struct val v[8];
	uint32_t stack = 0, labels = 0;
	int err;

	if ((err = read_object(j, r, j->c_ev[k], want, v)))
		return err;
	if (k == CP_JFR_CPU && v[1].set) {
		struct pent *st = pool_find(&j->pools[POOL_STATE], v[1].num);
		char *name = NULL;
		size_t cap = 0, len = 0;
		bool sleeping;

		if (st && (err = str_text(j, &st->s, &name, &cap, &len)))
			return err;
		sleeping = name && !strcmp(name, "STATE_SLEEPING");
		free(name);
		if (sleeping && !j->wall_mode)
			return 0;
		if (sleeping)
			k = CP_JFR_WALL;
	}
	if ((err = stack_of(j, v[0].set ? v[0].num : 0, &stack)))
		return err;
	switch (k) {
	case CP_JFR_CPU:
		vals[0] = j->period;
		if (j->wall_mode)
			vals[1] = j->period;
		break;
	case CP_JFR_WALL:
		vals[1] = j->period * (v[6].set ? (int64_t)v[6].num : 1);
		break;
	case CP_JFR_ALLOC_TLAB:
		vals[2] = 1;
		vals[3] = v[4].set ? (int64_t)v[4].num : 0;
		break;
	case CP_JFR_ALLOC_OUTSIDE:
		vals[4] = 1;
		vals[5] = v[5].set ? (int64_t)v[5].num : 0;
		break;
	case CP_JFR_ALLOC_SAMPLE:
		vals[6] = 1;
		vals[7] = v[2].set ? (int64_t)v[2].num : 0;
		break;
	case CP_JFR_LOCK:
	case CP_JFR_PARK:
		vals[kinds[k].col] = 1;
		vals[kinds[k].col + 1] = v[3].set ? ticks_ns(j, v[3].num) : 0;
		break;
	}
	if (v[7].set && v[7].num) { /* async-profiler's context (Pyroscope's Java agent labels it) */
		int64_t key = cp_profile_str(j->p, CP_JFR_CONTEXT_LABEL), ls;
		struct cp_label l = { .num = (int64_t)v[7].num };

		if (key < 0)
			return (int)key;
		l.key = (uint32_t)key;
		if ((ls = cp_profile_labelset(j->p, &l, 1)) < 0)
			return (int)ls;
		labels = (uint32_t)ls;
	}
	if ((err = cp_profile_add_sample(j->p, stack, labels, vals)))
		return err;
	if (j->p->nsamples > lim->max_samples)
		return cp_decode_too_many("samples", lim->max_samples);
	j->events[k]++;
	if (k == CP_JFR_CPU && j->wall_mode)
		j->events[CP_JFR_WALL]++;
	return 0;
}

static uint64_t be64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

static int read_chunk(struct jfr *j, const uint8_t *chunk, size_t left, size_t *used)
{
	uint64_t size, cpoff, metaoff, start_ns, dur_ns;
	uint32_t features;
	uint16_t major;
	struct rd r;
	int err;

	if (left < CHUNK_HEADER)
		return bad(j, chunk, "a chunk header cut short");
	if (memcmp(chunk, "FLR\0", 4))
		return bad(j, chunk, "no chunk magic (FLR)");
	major = (uint16_t)(chunk[4] << 8 | chunk[5]);
	if (major != 2)
		return cp_error(EINVAL, "JFR version %u.%u is not supported (only 2.x, from JDK 11 on), at offset %zu", major,
				(unsigned)(chunk[6] << 8 | chunk[7]), (size_t)(chunk - j->buf));
	size = be64(chunk + 8);
	cpoff = be64(chunk + 16);
	metaoff = be64(chunk + 24);
	start_ns = be64(chunk + 32);
	dur_ns = be64(chunk + 40);
	j->tps = be64(chunk + 56);
	features = (uint32_t)chunk[64] << 24 | (uint32_t)chunk[65] << 16 | (uint32_t)chunk[66] << 8 | chunk[67];
	if (size < CHUNK_HEADER || size > left)
		return cp_error(EINVAL, "not a valid JFR file: the chunk at offset %zu says it has %" PRIu64
					" bytes, and %zu are left (a recording cut short, or still being written?)",
				(size_t)(chunk - j->buf), size, left);
	if (!(features & 1))
		return cp_error(EINVAL, "JFR chunk at offset %zu does not use compressed integers: not supported",
				(size_t)(chunk - j->buf));
	j->chunk = chunk;
	j->cend = chunk + size;
	free_metadata(j);
	if ((err = read_metadata(j, metaoff)) || (err = read_pools(j, cpoff)))
		return err;
	if (!j->p->time_nanos || (int64_t)start_ns < j->p->time_nanos)
		j->p->time_nanos = start_ns > INT64_MAX ? INT64_MAX : (int64_t)start_ns;
	if (start_ns <= INT64_MAX && dur_ns <= INT64_MAX && (int64_t)(start_ns + dur_ns) > j->p->time_nanos &&
	    (int64_t)(start_ns + dur_ns) - j->p->time_nanos > j->p->duration_nanos)
		j->p->duration_nanos = (int64_t)(start_ns + dur_ns) - j->p->time_nanos;
	r.p = chunk + CHUNK_HEADER;
	while (r.p < j->cend) {
		const uint8_t *at = r.p;
		uint64_t esize, type;
		struct rd ev;
		int k = -1;

		r.end = j->cend;
		if ((err = get_u(j, &r, &esize, "event size")))
			return err;
		if (!esize || esize > (uint64_t)(j->cend - at))
			return bad(j, at, "an event size past the end of its chunk");
		ev.p = r.p;
		ev.end = at + esize;
		if ((err = get_u(j, &ev, &type, "event type")))
			return err;
		if (type > 1) {
			int cls = -1;

			for (int i = 0; i < CP_JFR_NKINDS; i++)
				if (j->c_ev[i] >= 0 && (uint64_t)j->classes[j->c_ev[i]].id == type)
					k = i;
			if (j->c_setting >= 0 && (uint64_t)j->classes[j->c_setting].id == type)
				cls = j->c_setting;
			if (k >= 0)
				err = on_event(j, &ev, k);
			else if (cls >= 0)
				err = on_setting(j, &ev);
			if (err)
				return err;
		}
		r.p = at + esize;
	}
	*used = size;
	return 0;
}

static int decode(const uint8_t *buf, size_t len, struct jfr *j)
{
	const struct cp_decode_limits *lim = cp_decode_limits();
	size_t off = 0, used = 0;
	int err = 0;

	memset(j, 0, sizeof(*j));
	j->buf = buf;
	j->len = len;
	j->period = DEFAULT_PERIOD;
	j->maxmem = lim->max_decompressed * 2;
	if (!cp_jfr_is(buf, len))
		return cp_error(EINVAL, "not a JFR file (no FLR magic)");
	if (!(j->p = cp_profile_new()))
		return nomem();
	for (int t = 0; t < CP_JFR_NTYPES && !err; t++)
		err = cp_profile_add_sample_type(j->p, cp_jfr_types[t][0], cp_jfr_types[t][1]);
	if (err)
		return err;
	while (off < len) {
		if ((err = read_chunk(j, buf + off, len - off, &used)))
			return err;
		off += used;
	}
	return cp_profile_set_period_type(j->p, "cpu", "nanoseconds", j->period);
}

static void release(struct jfr *j)
{
	free_metadata(j);
	free(j->locs);
	free(j->name);
}

bool cp_jfr_is(const void *buf, size_t len)
{
	return len >= 4 && !memcmp(buf, "FLR\0", 4);
}

static int finish_err(int err)
{
	if (err == -ENOMEM)
		return cp_error(ENOMEM, "out of memory reading a JFR file");
	return err;
}

int cp_jfr_decode(const uint8_t *buf, size_t len, struct cp_profile **out)
{
	struct jfr j;
	int err = decode(buf, len, &j);

	*out = NULL;
	if (!err) {
		int64_t def;
		int k;

		for (k = 0; k < CP_JFR_NKINDS && !j.events[k]; k++)
			;
		def = cp_profile_str(j.p, cp_jfr_types[k < CP_JFR_NKINDS ? kinds[k].col : 0][0]);
		if (def < 0)
			err = (int)def;
		else
			j.p->default_sample_type = (uint32_t)def;
	}
	release(&j);
	if (err) {
		cp_profile_free(j.p);
		return finish_err(err);
	}
	*out = j.p;
	return 0;
}

static bool keep_kind(const struct cp_profile *src, uint32_t sample, void *arg)
{
	const struct kind_info *ki = arg;
	const int64_t *v = cp_profile_values(src, sample);

	for (int c = 0; c < ki->ncols; c++)
		if (v[ki->col + c])
			return true;
	return false;
}

void cp_jfr_parts_free(struct cp_jfr_part *parts, size_t n)
{
	for (size_t i = 0; parts && i < n; i++)
		cp_profile_free(parts[i].profile);
	free(parts);
}

int cp_jfr_to_parts(const uint8_t *buf, size_t len, struct cp_jfr_part **parts, size_t *n)
{
	struct cp_jfr_part *out = NULL;
	size_t cnt = 0;
	struct jfr j;
	int err = decode(buf, len, &j);

	*parts = NULL;
	*n = 0;
	if (!err && !(out = calloc(CP_JFR_NKINDS, sizeof(*out))))
		err = nomem();
	for (int k = 0; k < CP_JFR_NKINDS && !err; k++) {
		const struct kind_info *ki = &kinds[k];
		struct cp_merge_opts opts = { .keep = keep_kind, .keep_arg = (void *)ki };
		bool keep[CP_JFR_NTYPES] = { false };
		struct cp_profile *q;

		if (!j.events[k])
			continue;
		if (!(q = cp_profile_copy(j.p, &opts))) {
			err = -errno;
			break;
		}
		out[cnt++] = (struct cp_jfr_part){ (enum cp_jfr_kind)k, ki->name, ki->event, q, j.events[k] };
		for (int c = 0; c < ki->ncols; c++)
			keep[ki->col + c] = true;
		if ((err = cp_profile_keep_types(q, keep)))
			break;
		for (int c = 0; c < ki->ncols && !err; c++) {
			int64_t t = cp_profile_str(q, ki->types[c][0]), u = cp_profile_str(q, ki->types[c][1]);

			if (t < 0 || u < 0)
				err = nomem();
			else
				q->sample_types[c] = (struct cp_valuetype){ (uint32_t)t, (uint32_t)u };
		}
		q->default_sample_type = 0;
		if (!err)
			err = cp_profile_set_period_type(q, ki->period[0], ki->period[1],
							 k == CP_JFR_CPU || k == CP_JFR_WALL ? j.period : 1);
	}
	release(&j);
	cp_profile_free(j.p);
	if (err) {
		cp_jfr_parts_free(out, cnt);
		return finish_err(err);
	}
	*parts = out;
	*n = cnt;
	return 0;
}

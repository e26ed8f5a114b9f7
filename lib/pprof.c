/* SPDX-License-Identifier: MIT */
/* pprof decode/encode: protobuf-c does the wire format (packed and unpacked
 * repeated fields alike), this file checks every index a file may carry and
 * converts to and from struct cp_profile. */
#include "pprof.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "decode_limits.h"
#include "error.h"
#include "profile.pb-c.h"
#include "util.h"

typedef Perftools__Profiles__Profile PB;

/* ---- decode ---- */

/* id -> index of the entity in the file, for ids that need not be dense */
struct idmap {
	uint64_t *ids; /* sorted (id << 0) with index in idx */
	uint32_t *idx;
	size_t n;
	int dense; /* ids are 1..n in order */
};

struct idpair {
	uint64_t id;
	uint32_t idx;
};

static int idpair_cmp(const void *a, const void *b)
{
	const struct idpair *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

static int idmap_build(struct idmap *m, const char *what, size_t n, uint64_t (*get)(const PB *, size_t), const PB *pb)
{
	struct idpair *pairs = NULL;
	size_t i;
	int err = 0;

	m->n = n;
	m->dense = 1;
	for (i = 0; i < n; i++) {
		if (get(pb, i) != i + 1) {
			m->dense = 0;
			break;
		}
	}
	if (m->dense)
		return 0;
	pairs = malloc(n * sizeof(*pairs));
	m->ids = malloc(n * sizeof(*m->ids));
	m->idx = malloc(n * sizeof(*m->idx));
	if (!pairs || !m->ids || !m->idx) {
		err = -ENOMEM;
		goto out;
	}
	for (i = 0; i < n; i++) {
		pairs[i].id = get(pb, i);
		pairs[i].idx = (uint32_t)i;
		if (!pairs[i].id) {
			err = cp_error(EINVAL, "%s %zu has id 0 (ids must be non-zero)", what, i);
			goto out;
		}
	}
	cp_qsort(pairs, n, sizeof(*pairs), idpair_cmp);
	for (i = 0; i < n; i++) {
		if (i && pairs[i].id == pairs[i - 1].id) {
			err = cp_error(EINVAL, "duplicate %s id %llu", what, (unsigned long long)pairs[i].id);
			goto out;
		}
		m->ids[i] = pairs[i].id;
		m->idx[i] = pairs[i].idx;
	}
out:
	free(pairs);
	return err;
}

/* index of id, or -1 */
static long idmap_find(const struct idmap *m, uint64_t id)
{
	size_t lo = 0, hi = m->n;

	if (m->dense)
		return id >= 1 && id <= m->n ? (long)(id - 1) : -1;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->ids[mid] == id)
			return m->idx[mid];
		if (m->ids[mid] < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

static void idmap_release(struct idmap *m)
{
	free(m->ids);
	free(m->idx);
}

static uint64_t fn_id(const PB *pb, size_t i) { return pb->function[i]->id; }
static uint64_t map_id(const PB *pb, size_t i) { return pb->mapping[i]->id; }
static uint64_t loc_id(const PB *pb, size_t i) { return pb->location[i]->id; }

struct decoder {
	const PB *pb;
	struct cp_profile *p;
	uint32_t *strs;     /* file string index -> profile string id */
	struct idmap fns, maps, locs;
	uint32_t *fn_new;   /* file function index -> profile id */
	uint32_t *map_new;
	uint64_t *map_delta;
	uint32_t *loc_new;
	bool drop_zero;
};

static int str(struct decoder *d, int64_t idx, const char *what, uint32_t *out)
{
	if (idx < 0 || (uint64_t)idx >= d->pb->n_string_table)
		return cp_error(EINVAL, "%s refers to string %lld, but the string table has %zu entries", what,
				(long long)idx, d->pb->n_string_table);
	*out = d->strs[idx];
	return 0;
}

static int decode_tables(struct decoder *d)
{
	const PB *pb = d->pb;
	struct cp_line *lines = NULL;
	size_t lcap = 0, i, j;
	int err = 0;

	for (i = 0; i < pb->n_function; i++) {
		const Perftools__Profiles__Function *f = pb->function[i];
		struct cp_function nf;
		int64_t id;

		if ((err = str(d, f->name, "a function name", &nf.name)) ||
		    (err = str(d, f->system_name, "a function system name", &nf.system_name)) ||
		    (err = str(d, f->filename, "a function file name", &nf.filename)))
			goto out;
		nf.start_line = f->start_line;
		if ((id = cp_profile_function(d->p, &nf)) < 0) {
			err = (int)id;
			goto out;
		}
		d->fn_new[i] = (uint32_t)id;
	}
	for (i = 0; i < pb->n_mapping; i++) {
		const Perftools__Profiles__Mapping *m = pb->mapping[i];
		struct cp_mapping nm = { m->memory_start, m->memory_limit, m->file_offset, 0, 0,
					 m->has_functions, m->has_filenames, m->has_line_numbers, m->has_inline_frames };
		int64_t id;

		if ((err = str(d, m->filename, "a mapping file name", &nm.filename)) ||
		    (err = str(d, m->build_id, "a mapping build id", &nm.build_id)))
			goto out;
		if ((id = cp_profile_mapping(d->p, &nm)) < 0) {
			err = (int)id;
			goto out;
		}
		d->map_new[i] = (uint32_t)id;
		d->map_delta[i] = d->p->mappings[id - 1].start - nm.start;
	}
	for (i = 0; i < pb->n_location; i++) {
		const Perftools__Profiles__Location *l = pb->location[i];
		uint32_t mapping = 0;
		uint64_t delta = 0;
		int64_t id;

		if (l->mapping_id) {
			long mi = idmap_find(&d->maps, l->mapping_id);

			if (mi < 0) {
				err = cp_error(EINVAL, "location %llu refers to mapping %llu, which the profile does not define",
					       (unsigned long long)l->id, (unsigned long long)l->mapping_id);
				goto out;
			}
			mapping = d->map_new[mi];
			delta = d->map_delta[mi];
		}
		if (cp_grow((void **)&lines, &lcap, l->n_line + 1, sizeof(*lines))) {
			err = -ENOMEM;
			goto out;
		}
		for (j = 0; j < l->n_line; j++) {
			const Perftools__Profiles__Line *ln = l->line[j];
			long fi = 0;

			if (ln->function_id && (fi = idmap_find(&d->fns, ln->function_id)) < 0) {
				err = cp_error(EINVAL, "location %llu refers to function %llu, which the profile does not define",
					       (unsigned long long)l->id, (unsigned long long)ln->function_id);
				goto out;
			}
			lines[j].function = ln->function_id ? d->fn_new[fi] : 0;
			lines[j].line = ln->line;
			lines[j].column = ln->column;
		}
		if ((id = cp_profile_location(d->p, mapping, l->address + delta, lines, l->n_line, l->is_folded)) < 0) {
			err = (int)id;
			goto out;
		}
		d->loc_new[i] = (uint32_t)id;
	}
out:
	free(lines);
	return err;
}

static int decode_samples(struct decoder *d)
{
	const PB *pb = d->pb;
	uint32_t *locs = NULL;
	struct cp_label *labels = NULL;
	size_t lcap = 0, labcap = 0, i, j;
	int err = 0;

	for (i = 0; i < pb->n_sample; i++) {
		const Perftools__Profiles__Sample *s = pb->sample[i];
		size_t nl = 0;
		int64_t stack, ls;

		if (s->n_value != d->p->ntypes) {
			err = cp_error(EINVAL, "sample %zu has %zu values, but the profile has %zu sample types", i,
				       s->n_value, d->p->ntypes);
			goto out;
		}
		if (cp_grow((void **)&locs, &lcap, s->n_location_id + 1, sizeof(*locs)) ||
		    cp_grow((void **)&labels, &labcap, s->n_label + 1, sizeof(*labels))) {
			err = -ENOMEM;
			goto out;
		}
		for (j = 0; j < s->n_location_id; j++) {
			long li = idmap_find(&d->locs, s->location_id[j]);

			if (li < 0) {
				err = cp_error(EINVAL, "sample %zu refers to location %llu, which the profile does not define",
					       i, (unsigned long long)s->location_id[j]);
				goto out;
			}
			locs[j] = d->loc_new[li];
		}
		for (j = 0; j < s->n_label; j++) {
			const Perftools__Profiles__Label *l = s->label[j];
			struct cp_label *nl2 = &labels[nl];

			if ((err = str(d, l->key, "a label key", &nl2->key)) ||
			    (err = str(d, l->str, "a label value", &nl2->str)) ||
			    (err = str(d, l->num_unit, "a label unit", &nl2->num_unit)))
				goto out;
			if (l->str) {
				nl2->num = 0;
				nl2->num_unit = 0;
			} else if (l->num || l->num_unit) {
				nl2->num = l->num;
			} else {
				continue; /* neither a string nor a number: pprof drops it too */
			}
			nl++;
		}
		if (d->drop_zero) {
			for (j = 0; j < s->n_value && !s->value[j]; j++)
				;
			if (j == s->n_value)
				continue;
		}
		stack = cp_profile_stack(d->p, locs, s->n_location_id);
		ls = cp_profile_labelset(d->p, labels, nl);
		if (stack < 0 || ls < 0) {
			err = (int)(stack < 0 ? stack : ls);
			goto out;
		}
		if ((err = cp_profile_add_sample(d->p, (uint32_t)stack, (uint32_t)ls, s->value)))
			goto out;
	}
out:
	free(locs);
	free(labels);
	return err;
}

/* The header goes into its own small profile first, so that
 * cp_profile_merge can check it against dst and combine it (period, time,
 * duration, comments) the one way merging always does. */
static int hstr(struct decoder *d, struct cp_profile *h, int64_t idx, const char *what, uint32_t *out)
{
	int64_t id;
	int err = str(d, idx, what, out);

	if (err)
		return err;
	id = cp_profile_str(h, d->pb->string_table[idx]);
	if (id < 0)
		return (int)id;
	*out = (uint32_t)id;
	return 0;
}

static int decode_header(struct decoder *d, struct cp_profile *h)
{
	const PB *pb = d->pb;
	size_t i;
	int err;

	if (!pb->n_sample_type)
		return cp_error(EINVAL, "the profile has no sample types");
	h->sample_types = calloc(pb->n_sample_type, sizeof(*h->sample_types));
	h->comments = calloc(pb->n_comment + 1, sizeof(*h->comments));
	if (!h->sample_types || !h->comments)
		return cp_error(ENOMEM, "out of memory decoding a profile with %zu sample types", pb->n_sample_type);
	for (i = 0; i < pb->n_sample_type; i++)
		if ((err = hstr(d, h, pb->sample_type[i]->type, "a sample type", &h->sample_types[i].type)) ||
		    (err = hstr(d, h, pb->sample_type[i]->unit, "a sample unit", &h->sample_types[i].unit)))
			return err;
	h->ntypes = pb->n_sample_type;
	if (pb->period_type &&
	    ((err = hstr(d, h, pb->period_type->type, "the period type", &h->period_type.type)) ||
	     (err = hstr(d, h, pb->period_type->unit, "the period unit", &h->period_type.unit))))
		return err;
	for (i = 0; i < pb->n_comment; i++)
		if ((err = hstr(d, h, pb->comment[i], "a comment", &h->comments[i])))
			return err;
	h->ncomments = pb->n_comment;
	if ((err = hstr(d, h, pb->drop_frames, "drop_frames", &h->drop_frames)) ||
	    (err = hstr(d, h, pb->keep_frames, "keep_frames", &h->keep_frames)) ||
	    (err = hstr(d, h, pb->default_sample_type, "default_sample_type", &h->default_sample_type)) ||
	    (err = hstr(d, h, pb->doc_url, "doc_url", &h->doc_url)))
		return err;
	h->period = pb->period;
	h->time_nanos = pb->time_nanos;
	h->duration_nanos = pb->duration_nanos;
	return cp_profile_merge(d->p, h, NULL);
}

static int decode_into(struct cp_profile *dst, const PB *pb)
{
	struct decoder d = { .pb = pb, .p = dst };
	struct cp_profile *hdr = NULL;
	int err = 0;
	size_t i;

	if (!pb->n_string_table || pb->string_table[0][0])
		return cp_error(EINVAL, "not a pprof profile: the string table must start with \"\"");
	d.drop_zero = dst->ntypes != 0; /* merging: all-zero samples go, as in pprof */
	hdr = cp_profile_new();
	d.strs = malloc(pb->n_string_table * sizeof(*d.strs));
	d.fn_new = calloc(pb->n_function + 1, sizeof(*d.fn_new));
	d.map_new = calloc(pb->n_mapping + 1, sizeof(*d.map_new));
	d.map_delta = calloc(pb->n_mapping + 1, sizeof(*d.map_delta));
	d.loc_new = calloc(pb->n_location + 1, sizeof(*d.loc_new));
	if (!hdr || !d.strs || !d.fn_new || !d.map_new || !d.map_delta || !d.loc_new) {
		err = -ENOMEM;
		goto out;
	}
	if ((err = decode_header(&d, hdr)))
		goto out;
	for (i = 0; i < pb->n_string_table; i++) {
		int64_t id = cp_profile_str(dst, pb->string_table[i]);

		if (id < 0) {
			err = (int)id;
			goto out;
		}
		d.strs[i] = (uint32_t)id;
	}
	if ((err = idmap_build(&d.fns, "function", pb->n_function, fn_id, pb)) ||
	    (err = idmap_build(&d.maps, "mapping", pb->n_mapping, map_id, pb)) ||
	    (err = idmap_build(&d.locs, "location", pb->n_location, loc_id, pb)))
		goto out;
	if ((err = decode_tables(&d)) || (err = decode_samples(&d)))
		goto out;
out:
	if (err == -ENOMEM)
		cp_error(ENOMEM, "out of memory decoding the profile");
	else if (err == -EOVERFLOW)
		cp_error(EOVERFLOW, "the profile is too large (more than 2^32 entries in a table)");
	cp_profile_free(hdr);
	free(d.strs);
	free(d.fn_new);
	free(d.map_new);
	free(d.map_delta);
	free(d.loc_new);
	idmap_release(&d.fns);
	idmap_release(&d.maps);
	idmap_release(&d.locs);
	return err;
}

/* ---- a look at the wire format before protobuf-c unpacks it ----
 *
 * protobuf-c allocates every record it unpacks: an empty Sample is 2 bytes
 * on the wire but a struct, a pointer and a scanned-field entry (over 100
 * bytes) once unpacked, so a few kilobytes of gzip can ask for gigabytes.
 * This walk counts samples and locations and estimates what unpacking will
 * allocate (erring high), allocating nothing itself: a profile over the
 * limits (lib/decode_limits.h) is refused before protobuf-c sees it. */

enum wire_msg { W_PROFILE, W_SAMPLE, W_LOCATION, W_VALUETYPE, W_MAPPING, W_FUNCTION, W_LABEL, W_LINE };

struct wire_scan {
	size_t samples, locations;
	size_t mem; /* estimated bytes protobuf-c will allocate */
};

#define ROUND16(n) (((n) + 15) & ~(size_t)15)
/* one scanned field: protobuf-c's slab entry (32 bytes, slabs doubling) */
#define FIELD_COST 64

static int wire_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	unsigned shift = 0;

	*v = 0;
	while (*p < end && shift < 64) {
		uint8_t b = *(*p)++;

		*v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return 0;
		shift += 7;
	}
	return -1;
}

/* the message a length-delimited field holds (or -1), and its unpacked size */
static int wire_submsg(enum wire_msg in, uint64_t field, size_t *size)
{
	switch (in) {
	case W_PROFILE:
		switch (field) {
		case 1:
		case 11: *size = sizeof(Perftools__Profiles__ValueType); return W_VALUETYPE;
		case 2: *size = sizeof(Perftools__Profiles__Sample); return W_SAMPLE;
		case 3: *size = sizeof(Perftools__Profiles__Mapping); return W_MAPPING;
		case 4: *size = sizeof(Perftools__Profiles__Location); return W_LOCATION;
		case 5: *size = sizeof(Perftools__Profiles__Function); return W_FUNCTION;
		}
		return -1;
	case W_SAMPLE:
		*size = sizeof(Perftools__Profiles__Label);
		return field == 3 ? W_LABEL : -1;
	case W_LOCATION:
		*size = sizeof(Perftools__Profiles__Line);
		return field == 4 ? W_LINE : -1;
	default: return -1;
	}
}

/* the highest field number each message knows (proto/profile.proto) */
static const uint64_t wire_fields[] = { [W_PROFILE] = 15, [W_SAMPLE] = 3, [W_LOCATION] = 5, [W_VALUETYPE] = 2,
					[W_MAPPING] = 10, [W_FUNCTION] = 5, [W_LABEL] = 4, [W_LINE] = 3 };

/* a repeated scalar field (packed or not) */
static bool wire_repeated(enum wire_msg in, uint64_t field)
{
	return (in == W_PROFILE && field == 13) || (in == W_SAMPLE && (field == 1 || field == 2));
}

static int wire_scan(const uint8_t *p, size_t len, enum wire_msg kind, struct wire_scan *ws)
{
	const uint8_t *end = p + len;
	uint64_t tag, v;
	int err;

	while (p < end) {
		uint64_t field;
		size_t sub;
		int inner;

		if (wire_varint(&p, end, &tag) || !(field = tag >> 3) || field > UINT32_MAX >> 3)
			return -1;
		ws->mem += FIELD_COST;
		if (field > wire_fields[kind]) /* kept as an unknown field: a copy of it */
			ws->mem += sizeof(ProtobufCMessageUnknownField) + 16;
		switch (tag & 7) {
		case 0:
			if (wire_varint(&p, end, &v))
				return -1;
			if (wire_repeated(kind, field))
				ws->mem += 8;
			break;
		case 1:
		case 5:
			if ((size_t)(end - p) < ((tag & 7) == 1 ? 8u : 4u))
				return -1;
			p += (tag & 7) == 1 ? 8 : 4;
			if (wire_repeated(kind, field))
				ws->mem += 8;
			break;
		case 2:
			if (wire_varint(&p, end, &v) || v > (uint64_t)(end - p))
				return -1;
			if (field > wire_fields[kind]) {
				ws->mem += ROUND16((size_t)v);
			} else if ((inner = wire_submsg(kind, field, &sub)) >= 0) {
				ws->mem += ROUND16(sub) + 8;
				if (kind == W_PROFILE && field == 2)
					ws->samples++;
				else if (kind == W_PROFILE && field == 4)
					ws->locations++;
				if ((err = wire_scan(p, (size_t)v, (enum wire_msg)inner, ws)))
					return err;
			} else if (wire_repeated(kind, field)) { /* packed: a varint ends at each byte under 0x80 */
				for (size_t i = 0; i < v; i++)
					ws->mem += p[i] & 0x80 ? 0 : 8;
			} else { /* a string (the string table) */
				ws->mem += ROUND16((size_t)v + 1) + 8;
			}
			p += v;
			break;
		default: /* groups (3, 4) are not in pprof, nor other wire types */
			return -1;
		}
	}
	return 0;
}

/* 0, or -EFBIG / -EINVAL with a message */
static int wire_check(const uint8_t *data, size_t len)
{
	const struct cp_decode_limits *lim = cp_decode_limits();
	struct wire_scan ws = { 0, 0, ROUND16(sizeof(PB)) };

	if (wire_scan(data, len, W_PROFILE, &ws))
		return cp_error(EINVAL, "not a pprof profile (the protobuf data is malformed or truncated)");
	if (ws.samples > lim->max_samples)
		return cp_decode_too_many("samples", lim->max_samples);
	if (ws.locations > lim->max_locations)
		return cp_decode_too_many("locations", lim->max_locations);
	if (ws.mem / 2 > lim->max_decompressed)
		return cp_decode_too_large(lim->max_decompressed * 2);
	return 0;
}

/* protobuf-c allocates every sub-message on its own: give it an arena that
 * is released at once instead (a pprof file has tens of thousands of them). */
struct arena {
	struct arena_block *head;
};

struct arena_block {
	struct arena_block *next;
	size_t used, size;
	max_align_t data[];
};

static void *arena_alloc(void *ctx, size_t size)
{
	struct arena *a = ctx;
	struct arena_block *b = a->head;
	size_t align = sizeof(max_align_t);

	size = (size + align - 1) / align * align;
	if (!b || b->size - b->used < size) {
		size_t bsize = size > (1u << 20) ? size : (1u << 20);

		b = malloc(sizeof(*b) + bsize);
		if (!b)
			return NULL;
		b->next = a->head;
		b->used = 0;
		b->size = bsize;
		a->head = b;
	}
	b->used += size;
	return (char *)b->data + b->used - size;
}

static void arena_free(void *ctx, void *ptr)
{
	(void)ctx;
	(void)ptr; /* everything goes with arena_release */
}

static void arena_release(struct arena *a)
{
	while (a->head) {
		struct arena_block *b = a->head;

		a->head = b->next;
		free(b);
	}
}

int cp_pprof_decode_into(struct cp_profile *dst, const void *data, size_t len)
{
	struct arena arena = { NULL };
	ProtobufCAllocator alloc = { arena_alloc, arena_free, &arena };
	uint8_t *raw = NULL;
	size_t rawlen = 0;
	PB *pb = NULL;
	char sz[32];
	int err;

	if (cp_is_gzip(data, len)) {
		err = cp_gunzip_limited(data, len, &raw, &rawlen);
		if (err)
			return err;
		data = raw;
		len = rawlen;
	} else if (len > CP_PPROF_MAX_SIZE) {
		return cp_error(EFBIG, "the profile exceeds the %s limit", cp_size_str(CP_PPROF_MAX_SIZE, sz, sizeof(sz)));
	}
	if (!len) {
		err = cp_error(EINVAL, "empty profile (no data)");
		goto out;
	}
	if ((err = wire_check(data, len)))
		goto out;
	pb = perftools__profiles__profile__unpack(&alloc, len, data);
	if (!pb) {
		err = cp_error(EINVAL, "not a pprof profile (the protobuf data is malformed or truncated)");
		goto out;
	}
	err = decode_into(dst, pb);
out:
	arena_release(&arena);
	free(raw);
	return err;
}

struct cp_profile *cp_pprof_decode(const void *data, size_t len)
{
	struct cp_profile *p = cp_profile_new();
	int err;

	if (!p) {
		errno = ENOMEM;
		return NULL;
	}
	err = cp_pprof_decode_into(p, data, len);
	if (err) {
		cp_profile_free(p);
		errno = -err;
		return NULL;
	}
	return p;
}

/* ---- encode ---- */

int cp_pprof_encode(const struct cp_profile *p, int gzip, uint8_t **out, size_t *outlen)
{
	PB pb = PERFTOOLS__PROFILES__PROFILE__INIT;
	Perftools__Profiles__ValueType *vt = NULL, **vtp = NULL, period = PERFTOOLS__PROFILES__VALUE_TYPE__INIT;
	Perftools__Profiles__Sample *smp = NULL, **smpp = NULL;
	Perftools__Profiles__Label *lab = NULL, **labp = NULL;
	Perftools__Profiles__Mapping *map = NULL, **mapp = NULL;
	Perftools__Profiles__Location *loc = NULL, **locp = NULL;
	Perftools__Profiles__Line *line = NULL, **linep = NULL;
	Perftools__Profiles__Function *fn = NULL, **fnp = NULL;
	int64_t *comments = NULL;
	uint64_t *locids = NULL;
	char **strs = NULL;
	uint8_t *buf = NULL;
	size_t i, j, nlabels = 0, nlocids = 0, li = 0, lab_i = 0, size;
	int err = -ENOMEM;

	for (i = 0; i < p->nsamples; i++) {
		nlabels += p->labelsets[p->samples[i].labels].len;
		nlocids += p->stacks[p->samples[i].stack].len;
	}
	strs = malloc(p->strs.n * sizeof(*strs));
	vt = calloc(p->ntypes + 1, sizeof(*vt));
	vtp = calloc(p->ntypes + 1, sizeof(*vtp));
	smp = calloc(p->nsamples + 1, sizeof(*smp));
	smpp = calloc(p->nsamples + 1, sizeof(*smpp));
	lab = calloc(nlabels + 1, sizeof(*lab));
	labp = calloc(nlabels + 1, sizeof(*labp));
	locids = calloc(nlocids + 1, sizeof(*locids));
	map = calloc(p->nmappings + 1, sizeof(*map));
	mapp = calloc(p->nmappings + 1, sizeof(*mapp));
	loc = calloc(p->nlocations + 1, sizeof(*loc));
	locp = calloc(p->nlocations + 1, sizeof(*locp));
	line = calloc(p->nlines + 1, sizeof(*line));
	linep = calloc(p->nlines + 1, sizeof(*linep));
	fn = calloc(p->nfunctions + 1, sizeof(*fn));
	fnp = calloc(p->nfunctions + 1, sizeof(*fnp));
	comments = calloc(p->ncomments + 1, sizeof(*comments));
	if (!strs || !vt || !vtp || !smp || !smpp || !lab || !labp || !locids || !map || !mapp || !loc ||
	    !locp || !line || !linep || !fn || !fnp || !comments)
		goto out;
	for (i = 0; i < p->strs.n; i++)
		strs[i] = (char *)cp_profile_string(p, (uint32_t)i);
	pb.n_string_table = p->strs.n;
	pb.string_table = strs;
	for (i = 0; i < p->ntypes; i++) {
		perftools__profiles__value_type__init(&vt[i]);
		vt[i].type = p->sample_types[i].type;
		vt[i].unit = p->sample_types[i].unit;
		vtp[i] = &vt[i];
	}
	pb.n_sample_type = p->ntypes;
	pb.sample_type = vtp;
	period.type = p->period_type.type;
	period.unit = p->period_type.unit;
	pb.period_type = &period;
	pb.period = p->period;
	pb.time_nanos = p->time_nanos;
	pb.duration_nanos = p->duration_nanos;
	pb.drop_frames = p->drop_frames;
	pb.keep_frames = p->keep_frames;
	pb.default_sample_type = p->default_sample_type;
	pb.doc_url = p->doc_url;
	for (i = 0; i < p->ncomments; i++)
		comments[i] = p->comments[i];
	pb.n_comment = p->ncomments;
	pb.comment = comments;
	for (i = 0; i < p->nsamples; i++) {
		const struct cp_span *st = &p->stacks[p->samples[i].stack];
		const struct cp_span *ls = &p->labelsets[p->samples[i].labels];

		perftools__profiles__sample__init(&smp[i]);
		smp[i].n_location_id = st->len;
		smp[i].location_id = locids + li;
		for (j = 0; j < st->len; j++)
			locids[li++] = p->stack_locs[st->off + j];
		smp[i].n_value = p->ntypes;
		smp[i].value = (int64_t *)cp_profile_values(p, (uint32_t)i);
		smp[i].n_label = ls->len;
		smp[i].label = labp + lab_i;
		for (j = 0; j < ls->len; j++, lab_i++) {
			const struct cp_label *l = &p->labels[ls->off + j];

			perftools__profiles__label__init(&lab[lab_i]);
			lab[lab_i].key = l->key;
			lab[lab_i].str = l->str;
			lab[lab_i].num = l->str ? 0 : l->num;
			lab[lab_i].num_unit = l->str ? 0 : l->num_unit;
			labp[lab_i] = &lab[lab_i];
		}
		smpp[i] = &smp[i];
	}
	pb.n_sample = p->nsamples;
	pb.sample = smpp;
	for (i = 0; i < p->nmappings; i++) {
		const struct cp_mapping *m = &p->mappings[i];

		perftools__profiles__mapping__init(&map[i]);
		map[i].id = i + 1;
		map[i].memory_start = m->start;
		map[i].memory_limit = m->limit;
		map[i].file_offset = m->offset;
		map[i].filename = m->filename;
		map[i].build_id = m->build_id;
		map[i].has_functions = m->has_functions;
		map[i].has_filenames = m->has_filenames;
		map[i].has_line_numbers = m->has_line_numbers;
		map[i].has_inline_frames = m->has_inline_frames;
		mapp[i] = &map[i];
	}
	pb.n_mapping = p->nmappings;
	pb.mapping = mapp;
	for (i = 0; i < p->nlines; i++) {
		perftools__profiles__line__init(&line[i]);
		line[i].function_id = p->lines[i].function;
		line[i].line = p->lines[i].line;
		line[i].column = p->lines[i].column;
		linep[i] = &line[i];
	}
	for (i = 0; i < p->nlocations; i++) {
		const struct cp_location *l = &p->locations[i];

		perftools__profiles__location__init(&loc[i]);
		loc[i].id = i + 1;
		loc[i].mapping_id = l->mapping;
		loc[i].address = l->address;
		loc[i].n_line = l->nlines;
		loc[i].line = linep + l->line_off;
		loc[i].is_folded = l->is_folded;
		locp[i] = &loc[i];
	}
	pb.n_location = p->nlocations;
	pb.location = locp;
	for (i = 0; i < p->nfunctions; i++) {
		const struct cp_function *f = &p->functions[i];

		perftools__profiles__function__init(&fn[i]);
		fn[i].id = i + 1;
		fn[i].name = f->name;
		fn[i].system_name = f->system_name;
		fn[i].filename = f->filename;
		fn[i].start_line = f->start_line;
		fnp[i] = &fn[i];
	}
	pb.n_function = p->nfunctions;
	pb.function = fnp;

	size = perftools__profiles__profile__get_packed_size(&pb);
	buf = malloc(size + 1);
	if (!buf)
		goto out;
	perftools__profiles__profile__pack(&pb, buf);
	if (gzip) {
		err = cp_gzip(buf, size, out, outlen);
		goto out;
	}
	*out = buf;
	*outlen = size;
	buf = NULL;
	err = 0;
out:
	if (err == -ENOMEM)
		cp_error(ENOMEM, "out of memory encoding the profile");
	free(buf);
	free(strs);
	free(vt);
	free(vtp);
	free(smp);
	free(smpp);
	free(lab);
	free(labp);
	free(locids);
	free(map);
	free(mapp);
	free(loc);
	free(locp);
	free(line);
	free(linep);
	free(fn);
	free(fnp);
	free(comments);
	return err;
}

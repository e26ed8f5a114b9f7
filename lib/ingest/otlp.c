/* SPDX-License-Identifier: MIT */
/* OTLP profiles (POST /v1development/profiles, docs/API.md): an
 * ExportProfilesServiceRequest of opentelemetry-proto v1.11.0 (proto/otlp/,
 * decoded by the code protoc-c makes of it), each of its profiles a profile
 * of the batch; and the decoder of protocol.c's row. */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "decode_limits.h"
#include "error.h"
#include "ingest/protocol.h"
#include "protojson.h"
#include "selector.h"
#include "store/store.h"
#include "opentelemetry/proto/collector/profiles/v1development/profiles_service.pb-c.h"
#include "rpc/status.pb-c.h"

typedef Opentelemetry__Proto__Collector__Profiles__V1development__ExportProfilesServiceRequest Req;
typedef Opentelemetry__Proto__Profiles__V1development__ProfilesDictionary Dict;
typedef Opentelemetry__Proto__Profiles__V1development__Profile Prof;
typedef Opentelemetry__Proto__Profiles__V1development__Sample Sample;
typedef Opentelemetry__Proto__Profiles__V1development__Location Loc;
typedef Opentelemetry__Proto__Profiles__V1development__Mapping Mapping;
typedef Opentelemetry__Proto__Profiles__V1development__Function Func;
typedef Opentelemetry__Proto__Profiles__V1development__KeyValueAndUnit KVU;
typedef Opentelemetry__Proto__Common__V1__AnyValue AnyValue;
typedef Opentelemetry__Proto__Common__V1__KeyValue KeyValue;

#define REQ_DESC opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__descriptor
/* how deep messages may nest (AnyValue in arrays and lists nests without
 * end; protobuf-c recurses per level) */
#define OTLP_MAX_DEPTH 32

/* ---- before unpacking: nesting, and the memory it takes ---- */

static int varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	*v = 0;
	for (int shift = 0; shift < 64 && *p < end; shift += 7) {
		uint8_t c = *(*p)++;

		*v |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80))
			return 0;
	}
	return -1;
}

/* the wire walked by the descriptors: well-formed, nested at most OTLP_MAX_DEPTH */
static int wire_check(const uint8_t *p, const uint8_t *end, const ProtobufCMessageDescriptor *desc, int depth)
{
	if (depth > OTLP_MAX_DEPTH)
		return cp_error(EINVAL, "the request nests messages over %d deep", OTLP_MAX_DEPTH);
	while (p < end) {
		uint64_t tag, v;
		const ProtobufCFieldDescriptor *f;

		if (varint(&p, end, &tag) || tag >> 3 == 0 || tag >> 3 > UINT32_MAX)
			goto bad;
		switch (tag & 7) {
		case 0:
			if (varint(&p, end, &v))
				goto bad;
			break;
		case 1:
			if (end - p < 8)
				goto bad;
			p += 8;
			break;
		case 5:
			if (end - p < 4)
				goto bad;
			p += 4;
			break;
		case 2:
			if (varint(&p, end, &v) || v > (uint64_t)(end - p))
				goto bad;
			f = protobuf_c_message_descriptor_get_field(desc, (unsigned)(tag >> 3));
			if (f && f->type == PROTOBUF_C_TYPE_MESSAGE) {
				int err = wire_check(p, p + v, f->descriptor, depth + 1);

				if (err)
					return err;
			}
			p += v;
			break;
		default:
			goto bad;
		}
	}
	return 0;
bad:
	return cp_error(EINVAL, "the body is not an OTLP ExportProfilesServiceRequest (protobuf)");
}

/* ---- attributes to labels ---- */

/* the attribute names cprof gives names of its own (docs/API.md); pid,
 * thread_id and thread_name are the samples' labels wherever they come from */
static const struct {
	const char *otel, *cprof;
	bool sample;
} renames[] = {
	{ "service.name", "service_name", false }, { "host.name", "node", false },
	{ "container.id", "container", false },    { "k8s.pod.name", "pod", false },
	{ "process.pid", "pid", true },            { "thread.id", "thread_id", true },
	{ "thread.name", "thread_name", true },
};

/* key's label name into buf: renamed, or each character but letters, digits
 * and '_' made '_' (and '_' before a leading digit); *sample when it is a
 * sample's label.  NULL for an empty key. */
static const char *label_name(const char *key, char *buf, size_t len, bool *sample)
{
	size_t i, o = 0;

	*sample = false;
	if (!*key)
		return NULL;
	for (i = 0; i < sizeof(renames) / sizeof(renames[0]); i++)
		if (!strcmp(key, renames[i].otel)) {
			*sample = renames[i].sample;
			return renames[i].cprof;
		}
	if (*key >= '0' && *key <= '9')
		buf[o++] = '_';
	for (; *key && o + 1 < len; key++) {
		char c = *key;

		buf[o++] = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ? c : '_';
	}
	buf[o] = 0;
	for (i = 0; i < sizeof(renames) / sizeof(renames[0]); i++)
		if (renames[i].sample && !strcmp(buf, renames[i].cprof))
			*sample = true;
	return buf;
}

struct dec {
	const Dict *d;
	size_t nstrings;
	struct cp_profile *p;
	unsigned gen; /* the profile being made: the caches below hold its ids */
	struct slot {
		unsigned gen;
		uint32_t id;
	} *locs, *funcs, *maps, *stacks;
	struct cp_label *sl; /* a sample's labels */
	size_t slcap;
	/* the resource's and profile's sample labels, for every sample */
	struct {
		const char *name, *value;
	} rl[CP_LABELS_MAX];
	size_t nrl;
	char (*rbuf)[2][CP_LABEL_NAME_MAX + 1];
};

static const char *str(const struct dec *x, int32_t i, const char *what, size_t at, int *err)
{
	if (i == 0 && !x->nstrings)
		return "";
	if (i < 0 || (size_t)i >= x->nstrings) {
		*err = cp_error(EINVAL, "%s %zu: string %" PRId32 " is not in the string table (%zu)", what, at, i,
				x->nstrings);
		return NULL;
	}
	return x->d->string_table[i];
}

/* an attribute's value as a label's: NULL for none (an empty string, arrays,
 * lists and bytes are not labels) */
static const char *any_value(const struct dec *x, const AnyValue *v, char *buf, size_t len, int *err)
{
	if (!v)
		return NULL;
	switch (v->value_case) {
	case OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE:
		return *v->string_value ? v->string_value : NULL;
	case OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE_STRINDEX: {
		const char *s = str(x, v->string_value_strindex, "attribute value", 0, err);

		return s && *s ? s : NULL;
	}
	case OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_INT_VALUE:
		snprintf(buf, len, "%" PRId64, v->int_value);
		return buf;
	case OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_BOOL_VALUE:
		return v->bool_value ? "true" : "false";
	case OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_DOUBLE_VALUE:
		snprintf(buf, len, "%.17g", v->double_value);
		return buf;
	default:
		return NULL;
	}
}

/* a resource's (or profile's) attribute: a series label in ls, or (pid,
 * thread_id, thread_name) one for every sample */
static int resource_label(struct dec *x, struct cp_labels *ls, const char *key, const char *value)
{
	char name[CP_LABEL_NAME_MAX + 1];
	bool sample;
	const char *n = label_name(key, name, sizeof(name), &sample);

	if (!n || !value)
		return 0;
	if (!sample)
		return cp_labels_add(ls, n, value);
	for (size_t i = 0; i < x->nrl; i++)
		if (!strcmp(x->rl[i].name, n))
			return 0; /* the first stands */
	if (x->nrl == CP_LABELS_MAX)
		return cp_error(EINVAL, "more than %d attributes of the samples in a resource", CP_LABELS_MAX);
	if (strlen(value) > CP_LABEL_VALUE_MAX)
		return cp_error(EINVAL, "the value of attribute '%.64s' is longer than %d bytes", key, CP_LABEL_VALUE_MAX);
	snprintf(x->rbuf[x->nrl][0], sizeof(x->rbuf[0][0]), "%s", n);
	snprintf(x->rbuf[x->nrl][1], sizeof(x->rbuf[0][1]), "%s", value);
	x->rl[x->nrl].name = x->rbuf[x->nrl][0];
	x->rl[x->nrl].value = x->rbuf[x->nrl][1];
	x->nrl++;
	return 0;
}

/* ---- the dictionary into the profile, as the samples reach it ---- */

static int64_t pstr(struct dec *x, const char *s)
{
	int64_t id = cp_profile_str(x->p, s);

	if (id < 0)
		cp_error((int)-id, "out of memory");
	return id;
}

static int64_t mapping(struct dec *x, int32_t i, int *err)
{
	const Mapping *m;
	struct cp_mapping cm = { 0 };
	const char *fn;
	int64_t id;

	if (i == 0)
		return 0; /* none */
	if (i < 0 || (size_t)i >= x->d->n_mapping_table)
		return *err = cp_error(EINVAL, "mapping %" PRId32 " is not in the mapping table (%zu)", i,
				       x->d->n_mapping_table);
	if (x->maps[i].gen == x->gen)
		return x->maps[i].id;
	m = x->d->mapping_table[i];
	if (!(fn = str(x, m->filename_strindex, "mapping", (size_t)i, err)))
		return *err;
	cm.start = m->memory_start;
	cm.limit = m->memory_limit;
	cm.offset = m->file_offset;
	for (size_t k = 0; k < m->n_attribute_indices; k++) {
		int32_t a = m->attribute_indices[k];
		const char *key, *v;
		char buf[64];

		if (a < 0 || (size_t)a >= x->d->n_attribute_table)
			return *err = cp_error(EINVAL, "mapping %" PRId32 ": attribute %" PRId32 " is not in the attribute table",
					       i, a);
		if (!(key = str(x, x->d->attribute_table[a]->key_strindex, "attribute", (size_t)a, err)))
			return *err;
		if (strcmp(key, "process.executable.build_id.gnu"))
			continue;
		v = any_value(x, x->d->attribute_table[a]->value, buf, sizeof(buf), err);
		if (*err)
			return *err;
		if (v && (id = pstr(x, v)) < 0)
			return *err = (int)id;
		if (v)
			cm.build_id = (uint32_t)id;
	}
	if ((id = pstr(x, fn)) < 0)
		return *err = (int)id;
	cm.filename = (uint32_t)id;
	cm.has_functions = true;
	if ((id = cp_profile_mapping(x->p, &cm)) < 0)
		return *err = cp_error((int)-id, "mapping %" PRId32, i);
	x->maps[i] = (struct slot){ x->gen, (uint32_t)id };
	return id;
}

static int64_t function(struct dec *x, int32_t i, int *err)
{
	const Func *f;
	struct cp_function cf = { 0 };
	const char *name, *sys, *file;
	int64_t id;

	if (i == 0)
		return 0;
	if (i < 0 || (size_t)i >= x->d->n_function_table)
		return *err = cp_error(EINVAL, "function %" PRId32 " is not in the function table (%zu)", i,
				       x->d->n_function_table);
	if (x->funcs[i].gen == x->gen)
		return x->funcs[i].id;
	f = x->d->function_table[i];
	if (!(name = str(x, f->name_strindex, "function", (size_t)i, err)) ||
	    !(sys = str(x, f->system_name_strindex, "function", (size_t)i, err)) ||
	    !(file = str(x, f->filename_strindex, "function", (size_t)i, err)))
		return *err;
	if ((id = pstr(x, name)) < 0)
		return *err = (int)id;
	cf.name = (uint32_t)id;
	if ((id = pstr(x, sys)) < 0)
		return *err = (int)id;
	cf.system_name = (uint32_t)id;
	if ((id = pstr(x, file)) < 0)
		return *err = (int)id;
	cf.filename = (uint32_t)id;
	cf.start_line = f->start_line;
	if ((id = cp_profile_function(x->p, &cf)) < 0)
		return *err = cp_error((int)-id, "function %" PRId32, i);
	x->funcs[i] = (struct slot){ x->gen, (uint32_t)id };
	return id;
}

static int64_t location(struct dec *x, int32_t i, int *err)
{
	const Loc *l;
	struct cp_line lines[64], *ls = lines;
	int64_t id, mid;
	size_t k;

	if (i < 0 || (size_t)i >= x->d->n_location_table)
		return *err = cp_error(EINVAL, "location %" PRId32 " is not in the location table (%zu)", i,
				       x->d->n_location_table);
	if (x->locs[i].gen == x->gen)
		return x->locs[i].id;
	l = x->d->location_table[i];
	if ((mid = mapping(x, l->mapping_index, err)) < 0)
		return mid;
	if (l->n_lines > sizeof(lines) / sizeof(lines[0]) && !(ls = calloc(l->n_lines, sizeof(*ls))))
		return *err = cp_error(ENOMEM, "out of memory");
	for (k = 0; k < l->n_lines; k++) {
		int64_t fid = function(x, l->lines[k]->function_index, err);

		if (fid < 0)
			goto out;
		ls[k] = (struct cp_line){ (uint32_t)fid, l->lines[k]->line, l->lines[k]->column };
	}
	if ((id = cp_profile_location(x->p, (uint32_t)mid, l->address, ls, l->n_lines, false)) < 0) {
		*err = cp_error((int)-id, "location %" PRId32, i);
		goto out;
	}
	x->locs[i] = (struct slot){ x->gen, (uint32_t)id };
out:
	if (ls != lines)
		free(ls);
	return *err ? (int64_t)*err : (int64_t)x->locs[i].id;
}

static int64_t stack(struct dec *x, int32_t i, int *err)
{
	const Opentelemetry__Proto__Profiles__V1development__Stack *s;
	uint32_t *ids;
	int64_t id;

	if (i == 0 && !x->d->n_stack_table)
		return 0; /* the empty stack */
	if (i < 0 || (size_t)i >= x->d->n_stack_table)
		return *err = cp_error(EINVAL, "stack %" PRId32 " is not in the stack table (%zu)", i, x->d->n_stack_table);
	if (x->stacks[i].gen == x->gen)
		return x->stacks[i].id;
	s = x->d->stack_table[i];
	if (!(ids = malloc((s->n_location_indices + 1) * sizeof(*ids))))
		return *err = cp_error(ENOMEM, "out of memory");
	for (size_t k = 0; k < s->n_location_indices; k++) { /* leaf first, as cprof's */
		int64_t l = location(x, s->location_indices[k], err);

		if (l < 0) {
			free(ids);
			return *err = cp_error_ctx(-*err, "stack %" PRId32, i);
		}
		ids[k] = (uint32_t)l;
	}
	id = cp_profile_stack(x->p, ids, s->n_location_indices);
	free(ids);
	if (id < 0)
		return *err = cp_error((int)-id, "stack %" PRId32, i);
	x->stacks[i] = (struct slot){ x->gen, (uint32_t)id };
	return id;
}

/* a sample's labels: its attributes, then the resource's sample labels it has not */
static int64_t sample_labels(struct dec *x, const Sample *s, size_t at, int *err)
{
	size_t n = 0, k, need = s->n_attribute_indices + x->nrl;
	int64_t id;

	if (need > x->slcap) {
		struct cp_label *sl = realloc(x->sl, need * sizeof(*sl));

		if (!sl)
			return *err = cp_error(ENOMEM, "out of memory");
		x->sl = sl;
		x->slcap = need;
	}
	for (k = 0; k < s->n_attribute_indices; k++) {
		int32_t a = s->attribute_indices[k];
		const KVU *kv;
		const char *key, *name, *v;
		char nbuf[CP_LABEL_NAME_MAX + 1], vbuf[64];
		bool sample;
		int64_t kid, vid;

		if (a < 0 || (size_t)a >= x->d->n_attribute_table)
			return *err = cp_error(EINVAL, "sample %zu: attribute %" PRId32 " is not in the attribute table (%zu)",
					       at, a, x->d->n_attribute_table);
		kv = x->d->attribute_table[a];
		if (!(key = str(x, kv->key_strindex, "attribute", (size_t)a, err)))
			return *err;
		v = any_value(x, kv->value, vbuf, sizeof(vbuf), err);
		if (*err)
			return *err;
		if (!(name = label_name(key, nbuf, sizeof(nbuf), &sample)) || !v)
			continue;
		if ((kid = pstr(x, name)) < 0 || (vid = pstr(x, v)) < 0)
			return *err = -ENOMEM;
		x->sl[n++] = (struct cp_label){ (uint32_t)kid, (uint32_t)vid, 0, 0 };
	}
	for (k = 0; k < x->nrl; k++) {
		int64_t kid = pstr(x, x->rl[k].name), vid;
		size_t j;

		if (kid < 0 || (vid = pstr(x, x->rl[k].value)) < 0)
			return *err = -ENOMEM;
		for (j = 0; j < n && x->sl[j].key != (uint32_t)kid; j++)
			;
		if (j == n)
			x->sl[n++] = (struct cp_label){ (uint32_t)kid, (uint32_t)vid, 0, 0 };
	}
	/* one value per name: the first stands */
	for (k = 1; k < n; k++)
		for (size_t j = 0; j < k; j++)
			if (x->sl[j].key == x->sl[k].key) {
				x->sl[k--] = x->sl[--n];
				break;
			}
	if ((id = cp_profile_labelset(x->p, x->sl, n)) < 0)
		return *err = cp_error((int)-id, "sample %zu: labels", at);
	return id;
}

/* ---- a profile ---- */

static bool type_part_valid(const char *s)
{
	return *s && !strchr(s, ':') && cp_type_name_valid(s);
}

/* profile pi of the request: into b (nothing for a profile without samples) */
static int one_profile(struct dec *x, const Prof *pr, size_t pi, const struct cp_labels *series,
		       struct cp_ingest_batch *b)
{
	const struct cp_decode_limits *lim = cp_decode_limits();
	const char *t = "", *u = "", *pt, *pu, *name = NULL;
	struct cp_store_append a = { 0 };
	struct cp_labels ls = { 0 };
	int64_t scale = 1;
	int err = 0;
	size_t k;

	if (!pr->n_samples)
		return 0;
	if (pr->n_samples > lim->max_samples)
		return cp_decode_too_many("samples", lim->max_samples);
	if (pr->sample_type && (!(t = str(x, pr->sample_type->type_strindex, "profile", pi, &err)) ||
				!(u = str(x, pr->sample_type->unit_strindex, "profile", pi, &err))))
		return err;
	pt = t;
	pu = u;
	if (pr->period_type && (!(pt = str(x, pr->period_type->type_strindex, "profile", pi, &err)) ||
				!(pu = str(x, pr->period_type->unit_strindex, "profile", pi, &err))))
		return err;
	if (!*pt && !*pu) {
		pt = t;
		pu = u;
	}
	if (!type_part_valid(t) || !type_part_valid(u) || !type_part_valid(pt) || !type_part_valid(pu))
		return cp_error(EINVAL, "profile %zu: sample type '%.64s/%.64s' or period type '%.64s/%.64s' is not "
				"letters, digits, '_', '.' and '-'", pi, t, u, pt, pu);
	/* the eBPF profiler's CPU profile counts samples, a period of CPU time each */
	if (!strcmp(t, "samples") && !strcmp(u, "count") && !strcmp(pt, "cpu") && !strcmp(pu, "nanoseconds") &&
	    pr->period > 0) {
		t = "cpu";
		u = "nanoseconds";
		scale = pr->period;
	}
	if (!strcmp(t, "cpu") && !strcmp(u, "nanoseconds"))
		name = "process_cpu";
	if (pr->time_unix_nano > (uint64_t)CP_STORE_TIME_MAX || pr->duration_nano > (uint64_t)INT64_MAX)
		return cp_error(EINVAL, "profile %zu: time_unix_nano or duration_nano out of range", pi);

	if (!(x->p = cp_profile_new()))
		return cp_error(ENOMEM, "out of memory");
	x->gen++;
	if (cp_profile_add_sample_type(x->p, t, u) || cp_profile_set_period_type(x->p, pt, pu, pr->period)) {
		err = cp_error(ENOMEM, "out of memory");
		goto out;
	}
	x->p->time_nanos = (int64_t)pr->time_unix_nano;
	x->p->duration_nanos = (int64_t)pr->duration_nano;
	for (k = 0; k < series->n; k++)
		if ((err = cp_labels_add(&ls, series->kv[k].name, series->kv[k].value)))
			goto out;
	/* the profile's own attributes: labels of its series too */
	for (k = 0; k < pr->n_attribute_indices; k++) {
		int32_t ai = pr->attribute_indices[k];
		const char *key, *v;
		char buf[64];

		if (ai < 0 || (size_t)ai >= x->d->n_attribute_table) {
			err = cp_error(EINVAL, "profile %zu: attribute %" PRId32 " is not in the attribute table", pi, ai);
			goto out;
		}
		if (!(key = str(x, x->d->attribute_table[ai]->key_strindex, "attribute", (size_t)ai, &err)))
			goto out;
		v = any_value(x, x->d->attribute_table[ai]->value, buf, sizeof(buf), &err);
		if (err || (err = resource_label(x, &ls, key, v)))
			goto out;
	}
	for (k = 0; k < pr->n_samples; k++) {
		const Sample *s = pr->samples[k];
		int64_t st, lid, v = 0;
		bool over = false;

		if (s->n_values && s->n_timestamps_unix_nano && s->n_values != s->n_timestamps_unix_nano) {
			err = cp_error(EINVAL, "profile %zu, sample %zu: %zu values for %zu timestamps", pi, k, s->n_values,
				       s->n_timestamps_unix_nano);
			goto out;
		}
		if (!s->n_values && !s->n_timestamps_unix_nano) {
			err = cp_error(EINVAL, "profile %zu, sample %zu: neither values nor timestamps", pi, k);
			goto out;
		}
		if (!s->n_values)
			v = (int64_t)s->n_timestamps_unix_nano; /* one each */
		for (size_t j = 0; j < s->n_values; j++)
			over |= __builtin_add_overflow(v, s->values[j], &v);
		if (over || __builtin_mul_overflow(v, scale, &v)) {
			err = cp_error(EINVAL, "profile %zu, sample %zu: the value overflows", pi, k);
			goto out;
		}
		if ((st = stack(x, s->stack_index, &err)) < 0 || (lid = sample_labels(x, s, k, &err)) < 0) {
			cp_error_ctx(-err, "profile %zu", pi);
			goto out;
		}
		if ((err = cp_profile_add_sample(x->p, (uint32_t)st, (uint32_t)lid, &v))) {
			cp_error_ctx(-err, "profile %zu, sample %zu", pi, k);
			goto out;
		}
	}
	a.name = name;
	a.time_ns = x->p->time_nanos;
	if ((err = cp_ingest_batch_add(b, x->p, &a, &ls, NULL))) {
		b->internal = true;
		goto out;
	}
	b->profiles++;
	b->samples += x->p->nsamples;
	x->p = NULL;
out:
	cp_profile_free(x->p);
	x->p = NULL;
	cp_labels_release(&ls);
	return err;
}

/* ---- the request ---- */

/* The profiles of req (len bytes on the wire) into b. */
static int decode_request(const Req *req, size_t len, struct cp_ingest_batch *b)
{
	const struct cp_decode_limits *lim = cp_decode_limits();
	static const Dict empty = OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__PROFILES_DICTIONARY__INIT;
	struct dec x = { 0 };
	size_t i, j, k, at = 0;
	int err = 0;

	x.d = req->dictionary ? req->dictionary : &empty;
	x.nstrings = x.d->n_string_table;
	if (x.d->n_location_table > lim->max_locations) {
		err = cp_decode_too_many("locations", lim->max_locations);
		goto out;
	}
	x.locs = calloc(x.d->n_location_table + 1, sizeof(*x.locs));
	x.funcs = calloc(x.d->n_function_table + 1, sizeof(*x.funcs));
	x.maps = calloc(x.d->n_mapping_table + 1, sizeof(*x.maps));
	x.stacks = calloc(x.d->n_stack_table + 1, sizeof(*x.stacks));
	x.rbuf = malloc(CP_LABELS_MAX * sizeof(*x.rbuf));
	if (!x.locs || !x.funcs || !x.maps || !x.stacks || !x.rbuf) {
		err = cp_error(ENOMEM, "out of memory");
		b->internal = true;
		goto out;
	}
	for (i = 0; i < req->n_resource_profiles && !err; i++) {
		const Opentelemetry__Proto__Profiles__V1development__ResourceProfiles *rp = req->resource_profiles[i];
		struct cp_labels series = { 0 };

		x.nrl = 0;
		for (k = 0; rp->resource && k < rp->resource->n_attributes && !err; k++) {
			const KeyValue *kv = rp->resource->attributes[k];
			const char *key = *kv->key ? kv->key : str(&x, kv->key_strindex, "resource attribute", k, &err), *v;
			char buf[64];

			if (!key)
				break;
			v = any_value(&x, kv->value, buf, sizeof(buf), &err);
			if (!err)
				err = resource_label(&x, &series, key, v);
		}
		for (j = 0; j < rp->n_scope_profiles && !err; j++)
			for (k = 0; k < rp->scope_profiles[j]->n_profiles && !err; k++, at++) {
				size_t nrl = x.nrl;

				err = one_profile(&x, rp->scope_profiles[j]->profiles[k], at, &series, b);
				x.nrl = nrl; /* the profile's own sample labels stay its own */
			}
		if (err)
			cp_error_ctx(-err, "resource_profiles %zu", i);
		cp_labels_release(&series);
	}
	b->bytes = len;
out:
	free(x.locs);
	free(x.funcs);
	free(x.maps);
	free(x.stacks);
	free(x.rbuf);
	free(x.sl);
	return err;
}

int cp_otlp_decode(const uint8_t *body, size_t len, struct cp_ingest_batch *b)
{
	struct cp_decode_budget bud;
	ProtobufCAllocator alloc = { cp_decode_budget_alloc, cp_decode_budget_free, &bud };
	Req *req;
	int err;

	if ((err = wire_check(body, body + len, &REQ_DESC, 0)))
		return err;
	cp_decode_budget_init(&bud);
	req = (Req *)protobuf_c_message_unpack(&REQ_DESC, &alloc, len, body);
	if (!req) {
		if (bud.over)
			return cp_decode_too_large(bud.max);
		return cp_error(EINVAL, "the body is not an OTLP ExportProfilesServiceRequest (protobuf)");
	}
	err = decode_request(req, len, b);
	protobuf_c_message_free_unpacked(&req->base, &alloc);
	return err;
}

/* OTLP/JSON: proto3's JSON mapping, but trace, span and profile ids in hex (the OTLP specification,
 * "JSON Protobuf Encoding") */
static const char *const otlp_hex[] = { "trace_id", "span_id", "profile_id", NULL };

int cp_otlp_decode_json(const char *body, size_t len, struct cp_ingest_batch *b)
{
	Req *req = (Req *)cp_protojson_read(&REQ_DESC, len ? body : "{}", len ? len : 2, otlp_hex);
	int err;

	if (!req) {
		err = errno;
		if (err == EFBIG || err == ENOMEM)
			return -err;
		return cp_error_ctx(err, "the body is not an OTLP ExportProfilesServiceRequest (JSON)");
	}
	err = decode_request(req, len, b);
	protobuf_c_message_free_unpacked(&req->base, NULL);
	return err;
}

/* the value of header name up to its first ';' (parameters) and blanks, lowercased, into buf */
static const char *header_token(struct cp_req *r, const char *name, char *buf, size_t len)
{
	const char *v = cp_req_header(r, name);
	size_t n = 0;

	if (!v)
		return NULL;
	while (*v == ' ' || *v == '\t')
		v++;
	for (; *v && *v != ';' && *v != ' ' && *v != '\t' && n + 1 < len; v++)
		buf[n++] = (char)(*v >= 'A' && *v <= 'Z' ? *v + 32 : *v);
	buf[n] = 0;
	return buf;
}

/* whether r's body is JSON (Content-Type application/json), else protobuf */
static bool is_json(struct cp_req *r)
{
	char ctb[64];
	const char *ct = header_token(r, "Content-Type", ctb, sizeof(ctb));

	return ct && !strcmp(ct, "application/json");
}

int cp_ingest_otlp(struct cp_req *r, struct cp_ingest_batch *b)
{
	const uint8_t *body;
	const char *ct, *ce;
	char ctb[64], ceb[32];
	uint8_t *raw = NULL;
	size_t len, rlen;
	bool json = is_json(r);
	int err;

	body = cp_req_body(r, &len);
	ct = header_token(r, "Content-Type", ctb, sizeof(ctb));
	if (ct && !json && strcmp(ct, "application/x-protobuf") && strcmp(ct, "application/protobuf"))
		return cp_error(EINVAL, "Content-Type '%.64s': send application/x-protobuf or application/json", ct);
	ce = header_token(r, "Content-Encoding", ceb, sizeof(ceb));
	if (ce && *ce && strcmp(ce, "gzip") && strcmp(ce, "identity"))
		return cp_error(EINVAL, "Content-Encoding '%.32s': send gzip or none", ce);
	/* gzip by its header or by its magic (no request starts with 0x1f: wire type 7, nor JSON) */
	if ((ce && !strcmp(ce, "gzip")) || (len >= 2 && body[0] == 0x1f && body[1] == 0x8b)) {
		if ((err = cp_gunzip_limited(body, len, &raw, &rlen)))
			return err == -EFBIG || err == -EBUSY ? err : cp_error_ctx(-err, "Content-Encoding gzip");
		body = raw;
		len = rlen;
	}
	err = json ? cp_otlp_decode_json((const char *)body, len, b) : cp_otlp_decode(body, len, b);
	free(raw);
	return err;
}

/* ---- the answer to a refused export ---- */

void cp_otlp_respond(struct cp_req *r, struct cp_resp *out, int status, const char *message)
{
	Google__Rpc__Status st = GOOGLE__RPC__STATUS__INIT;
	char *buf;
	size_t len;

	if (status == 200) { /* an empty ExportProfilesServiceResponse */
		if (is_json(r))
			cp_resp_text(out, 200, "application/json", "{}");
		else
			cp_resp_take(out, 200, "application/x-protobuf", NULL, 0);
		return;
	}
	/* google.rpc.Code, as OTLP/HTTP maps HTTP statuses */
	st.code = status == 400 ? 3 : status == 413 ? 8 : status == 503 ? 14 : 13;
	st.message = (char *)(message ? message : "");
	if (is_json(r)) {
		if (!(buf = cp_protojson_write(&st.base, &len)))
			cp_resp_take(out, 500, "text/plain", NULL, 0);
		else
			cp_resp_take(out, status, "application/json", buf, len);
		return;
	}
	len = google__rpc__status__get_packed_size(&st);
	if (!(buf = malloc(len ? len : 1))) {
		cp_resp_take(out, 500, "text/plain", NULL, 0);
		return;
	}
	google__rpc__status__pack(&st, (uint8_t *)buf);
	cp_resp_take(out, status, "application/x-protobuf", buf, len);
}

/* SPDX-License-Identifier: MIT */
/* Pyroscope's POST /ingest?format=speedscope (docs/API.md): speedscope's
 * JSON file format (https://www.speedscope.app/file-format-schema.json), its
 * sampled and evented profiles each a profile of the push, read as
 * Pyroscope's server reads them (its units, names and merging), bounded by
 * lib/decode_limits.h. */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "decode_limits.h"
#include "error.h"
#include "gzip.h"
#include "ingest/protocol.h"
#include "profile.h"
#include "util.h"

#define SPEEDSCOPE_SCHEMA "https://www.speedscope.app/file-format-schema.json"
/* profiles (after merging) one body may hold: each becomes a series' profile */
#define SPEEDSCOPE_MAX_PROFILES 1024

enum ss_unit { U_NONE, U_NS, U_US, U_MS, U_S, U_BYTES };

static const struct {
	const char *name;
	enum ss_unit u;
	double ns; /* nanoseconds in one; 0: not a time */
} ss_units[] = {
	{ "none", U_NONE, 0 },	       { "nanoseconds", U_NS, 1 }, { "microseconds", U_US, 1e3 },
	{ "milliseconds", U_MS, 1e6 }, { "seconds", U_S, 1e9 },	   { "bytes", U_BYTES, 0 },
};

/* One profile of the file, as read before it is decoded. */
struct ss_prof {
	json_t *j;
	const char *name, *type, *unit_name;
	enum ss_unit unit;
	double ns;
	double start;
	size_t index, group;
};

static int ss_key_cmp(const void *a, const void *b)
{
	const struct ss_prof *x = *(const struct ss_prof *const *)a, *y = *(const struct ss_prof *const *)b;
	int c;

	if ((c = strcmp(x->name, y->name)) || (c = strcmp(x->type, y->type)) || (c = strcmp(x->unit_name, y->unit_name)))
		return c;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->index < y->index ? -1 : x->index > y->index;
}

static bool ss_same_key(const struct ss_prof *x, const struct ss_prof *y)
{
	return !strcmp(x->name, y->name) && !strcmp(x->type, y->type) && !strcmp(x->unit_name, y->unit_name) &&
	       x->start == y->start;
}

/* What one group of profiles decodes into. */
struct ss_out {
	struct cp_profile *p;
	struct cp_pyro_type t;
	double mult;            /* a weight times this is the stored value */
	int64_t *lids;          /* per shared frame: its location in p, 0: none yet */
	uint32_t *buf;          /* a stack leaf first */
	size_t bufcap, samples; /* samples added to p */
	size_t work;            /* frames of the stacks built so far */
	int64_t total;
};

struct ss_ctx {
	json_t *frames;
	size_t nframes;
	const struct cp_decode_limits *lim;
};

/* The location of shared frame fid in o->p. */
static int64_t ss_location(struct ss_ctx *c, struct ss_out *o, size_t fid)
{
	json_t *f = json_array_get(c->frames, fid);
	json_t *file = json_object_get(f, "file"), *line = json_object_get(f, "line"), *col = json_object_get(f, "col");
	const char *name = json_string_value(json_object_get(f, "name"));
	struct cp_function fn = { 0 };
	struct cp_line ln = { 0 };
	int64_t id;

	if (o->lids[fid])
		return o->lids[fid];
	if (!name)
		return cp_error(EINVAL, "format=speedscope: shared frame %zu has no \"name\" string", fid);
	if ((file && !json_is_string(file)) || (line && !json_is_number(line)) || (col && !json_is_number(col)))
		return cp_error(EINVAL, "format=speedscope: shared frame %zu: \"file\" is a string, \"line\" and \"col\" numbers",
				fid);
	if ((id = cp_profile_str(o->p, name)) < 0)
		return id;
	fn.name = fn.system_name = (uint32_t)id;
	if (file && *json_string_value(file)) {
		if ((id = cp_profile_str(o->p, json_string_value(file))) < 0)
			return id;
		fn.filename = (uint32_t)id;
	}
	if ((id = cp_profile_function(o->p, &fn)) < 0)
		return id;
	ln.function = (uint32_t)id;
	if (line && json_number_value(line) > 0 && json_number_value(line) < 1e15)
		ln.line = (int64_t)json_number_value(line);
	if (col && json_number_value(col) > 0 && json_number_value(col) < 1e15)
		ln.column = (int64_t)json_number_value(col);
	if ((id = cp_profile_location(o->p, 0, 0, &ln, 1, false)) < 0)
		return id;
	o->lids[fid] = id;
	return id;
}

/* A frame index of profile pi: a whole number within shared.frames. */
static int ss_frame(struct ss_ctx *c, json_t *v, size_t pi, const char *where, size_t at, size_t *fid)
{
	double d = json_number_value(v);

	if (!json_is_number(v) || d != floor(d) || d < 0 || d >= (double)c->nframes)
		return cp_error(EINVAL, "format=speedscope: profile %zu, %s %zu: frame index is not one of the %zu shared frames",
				pi, where, at, c->nframes);
	*fid = (size_t)d;
	return 0;
}

/* Adds weight w to the stack of n frames (root first, shared frame ids). */
static int ss_add(struct ss_ctx *c, struct ss_out *o, const size_t *fids, size_t n, double w, size_t pi)
{
	double v = w * o->mult;
	int64_t val, stack;
	size_t i;

	if (!isfinite(w) || w < 0)
		return cp_error(EINVAL, "format=speedscope: profile %zu: a weight is negative or not a number", pi);
	if (v >= 9.2e18)
		return cp_error(EINVAL, "format=speedscope: profile %zu: a weight of %g %s overflows", pi, w, o->t.unit);
	val = (int64_t)llround(v);
	if (!val || !n) /* nothing to count, or nowhere to count it */
		return 0;
	if (__builtin_add_overflow(o->total, val, &o->total))
		return cp_error(EINVAL, "format=speedscope: profile %zu: its total overflows", pi);
	if (++o->samples > c->lim->max_samples)
		return cp_decode_too_many("samples (speedscope samples and events)", c->lim->max_samples);
	/* the frames gathered for stacks: within what a pprof profile may take */
	o->work += n;
	if (o->work > c->lim->max_decompressed / 4 || o->p->nstack_locs + n > c->lim->max_decompressed / 4)
		return cp_decode_too_large(c->lim->max_decompressed * 2);
	if (cp_grow((void **)&o->buf, &o->bufcap, n, sizeof(*o->buf)))
		return cp_error(ENOMEM, "format=speedscope: out of memory");
	for (i = 0; i < n; i++) {
		int64_t lid = ss_location(c, o, fids[i]);

		if (lid < 0)
			return (int)lid;
		o->buf[n - 1 - i] = (uint32_t)lid;
	}
	if ((stack = cp_profile_stack(o->p, o->buf, n)) < 0)
		return (int)stack;
	return cp_profile_add_sample(o->p, (uint32_t)stack, 0, &val);
}

static int ss_sampled(struct ss_ctx *c, struct ss_out *o, const struct ss_prof *sp)
{
	json_t *samples = json_object_get(sp->j, "samples"), *weights = json_object_get(sp->j, "weights"), *s, *f;
	size_t *fids = NULL, cap = 0, i, k;
	int err = 0;

	if (!json_is_array(samples) || !json_is_array(weights))
		return cp_error(EINVAL, "format=speedscope: profile %zu: a sampled profile has \"samples\" and \"weights\" arrays",
				sp->index);
	if (json_array_size(samples) != json_array_size(weights))
		return cp_error(EINVAL, "format=speedscope: profile %zu: %zu samples but %zu weights", sp->index,
				json_array_size(samples), json_array_size(weights));
	json_array_foreach(samples, i, s) {
		json_t *w = json_array_get(weights, i);

		if (!json_is_array(s) || !json_is_number(w)) {
			err = cp_error(EINVAL,
				       "format=speedscope: profile %zu, sample %zu: a sample is an array of frame indexes, "
				       "its weight a number",
				       sp->index, i);
			break;
		}
		if (cp_grow((void **)&fids, &cap, json_array_size(s) + 1, sizeof(*fids))) {
			err = -ENOMEM;
			break;
		}
		json_array_foreach(s, k, f) {
			if ((err = ss_frame(c, f, sp->index, "sample", i, &fids[k])))
				break;
		}
		if (err || (err = ss_add(c, o, fids, json_array_size(s), json_number_value(w), sp->index)))
			break;
	}
	free(fids);
	return err;
}

static int ss_evented(struct ss_ctx *c, struct ss_out *o, const struct ss_prof *sp)
{
	json_t *events = json_object_get(sp->j, "events"), *e;
	size_t *open = NULL, cap = 0, depth = 0, i, fid;
	double last = sp->start;
	int err = 0;

	if (!json_is_array(events))
		return cp_error(EINVAL, "format=speedscope: profile %zu: an evented profile has an \"events\" array",
				sp->index);
	json_array_foreach(events, i, e) {
		const char *type = json_string_value(json_object_get(e, "type"));
		json_t *at = json_object_get(e, "at");
		double t = json_number_value(at);

		if (!type || !json_is_number(at) || (strcmp(type, "O") && strcmp(type, "C"))) {
			err = cp_error(EINVAL,
				       "format=speedscope: profile %zu, event %zu: wants {\"type\":\"O\" or \"C\",\"at\":N,"
				       "\"frame\":N}",
				       sp->index, i);
			break;
		}
		if ((err = ss_frame(c, json_object_get(e, "frame"), sp->index, "event", i, &fid)))
			break;
		if (!(t >= last)) {
			err = cp_error(EINVAL, "format=speedscope: profile %zu, event %zu: at %g is before %g (%s)", sp->index,
				       i, t, last, i ? "the event before" : "startValue");
			break;
		}
		/* the stack open until now: the time since the event before */
		if (depth && (err = ss_add(c, o, open, depth, t - last, sp->index)))
			break;
		last = t;
		if (*type == 'C') {
			if (!depth || open[depth - 1] != fid) {
				err = cp_error(EINVAL, "format=speedscope: profile %zu, event %zu: closes frame %zu, %s",
					       sp->index, i, fid, depth ? "not the one open last" : "which is not open");
				break;
			}
			depth--;
		} else {
			if (cp_grow((void **)&open, &cap, depth + 1, sizeof(*open))) {
				err = -ENOMEM;
				break;
			}
			open[depth++] = fid;
		}
	}
	/* frames still open at the last event are left so (as by Pyroscope) */
	free(open);
	return err;
}

/* The type of a group: the push's (its name's suffix and units=) when the
 * file holds one profile, else its unit's (as Pyroscope names them: time ->
 * wall, bytes -> memory); the factor from a weight to the stored value. */
static int ss_type(const struct ss_prof *sp, bool several, const struct cp_pyro_type *t, int64_t rate,
		   struct ss_out *o)
{
	static const struct cp_pyro_type wall = { "wall", "wall", "nanoseconds", "wall", "nanoseconds", 1 };
	static const struct cp_pyro_type mem = { "memory", "samples", "bytes", "space", "bytes", 0 };

	if (rate <= 0)
		return cp_error(EINVAL, "sampleRate must be a positive number");
	if (several && sp->unit == U_NONE)
		return cp_error(EINVAL,
				"format=speedscope: profile %zu ('%.64s') has unit none among several profiles, each named "
				"by its unit: Pyroscope has no type for none (send it alone)",
				sp->index, sp->name);
	if (sp->unit == U_BYTES && (several || t->cpu))
		o->t = mem;
	else if (several)
		o->t = wall;
	else
		o->t = *t;
	if (o->t.cpu) /* nanoseconds: a time's own; a count of samples at sampleRate */
		o->mult = sp->ns ? sp->ns : 1e9 / (double)rate;
	else if (sp->ns && !strcmp(o->t.unit, "nanoseconds"))
		o->mult = sp->ns;
	else
		o->mult = 1;
	return 0;
}

static int ss_labels(const struct cp_labels *from, const char *profile_name, struct cp_labels *out)
{
	size_t i;
	int err;

	memset(out, 0, sizeof(*out));
	for (i = 0; i < from->n; i++)
		if ((!*profile_name || strcmp(from->kv[i].name, "profile_name")) &&
		    (err = cp_labels_add(out, from->kv[i].name, from->kv[i].value)))
			return err;
	if (*profile_name && (err = cp_labels_add(out, "profile_name", profile_name)))
		return err;
	return 0;
}

int cp_ingest_pyroscope_speedscope(const struct cp_pyro_push *push, const struct cp_pyro_type *t,
				   struct cp_ingest_batch *b)
{
	const uint8_t *body = push->body;
	size_t len = push->len, n = 0, ngroups = 0, i, j;
	uint8_t *inflated = NULL;
	json_t *root = NULL, *profiles, *shared, *v;
	json_error_t je;
	struct ss_prof *sp = NULL, **order = NULL;
	struct ss_out o = { 0 };
	struct ss_ctx c = { 0 };
	const char *schema;
	int err;

	if (!len)
		return cp_error(EINVAL, "format=speedscope: the body is empty (POST a speedscope JSON file)");
	if (cp_is_gzip(body, len)) { /* inflated within max_decompressed */
		if ((err = cp_gunzip_limited(body, len, &inflated, &len)))
			return err;
		body = inflated;
	}
	if ((err = cp_json_bounded((const char *)body, len, "format=speedscope: the body")))
		goto out;
	if (!(root = json_loadb((const char *)body, len, 0, &je))) {
		err = cp_error(EINVAL, "format=speedscope: the body is not JSON: %s (line %d)", je.text, je.line);
		goto out;
	}
	schema = json_string_value(json_object_get(root, "$schema"));
	if (!schema || strcmp(schema, SPEEDSCOPE_SCHEMA)) {
		err = cp_error(EINVAL, "format=speedscope: \"$schema\" is not \"" SPEEDSCOPE_SCHEMA "\" (not a speedscope file)");
		goto out;
	}
	shared = json_object_get(root, "shared");
	c.frames = json_object_get(shared, "frames");
	profiles = json_object_get(root, "profiles");
	c.lim = cp_decode_limits();
	if (!json_is_array(c.frames) || !json_is_array(profiles)) {
		err = cp_error(EINVAL, "format=speedscope: wants {\"shared\":{\"frames\":[...]},\"profiles\":[...]}");
		goto out;
	}
	c.nframes = json_array_size(c.frames);
	if (c.nframes > c.lim->max_locations) {
		err = cp_decode_too_many("frames (speedscope shared frames)", c.lim->max_locations);
		goto out;
	}
	if (!(n = json_array_size(profiles))) {
		err = cp_error(EINVAL, "format=speedscope: \"profiles\" is empty");
		goto out;
	}
	if (!(sp = calloc(n, sizeof(*sp))) || !(order = calloc(n, sizeof(*order))) ||
	    !(o.lids = calloc(c.nframes + 1, sizeof(*o.lids)))) {
		err = -ENOMEM;
		goto out;
	}
	json_array_foreach(profiles, i, v) {
		json_t *start = json_object_get(v, "startValue");

		sp[i].j = v;
		sp[i].index = i;
		sp[i].name = json_string_value(json_object_get(v, "name"));
		sp[i].type = json_string_value(json_object_get(v, "type"));
		sp[i].unit_name = json_string_value(json_object_get(v, "unit"));
		if (!sp[i].name)
			sp[i].name = "";
		if (!json_is_object(v) || !sp[i].type || (strcmp(sp[i].type, "sampled") && strcmp(sp[i].type, "evented"))) {
			err = cp_error(EINVAL, "format=speedscope: profile %zu: \"type\" is neither \"sampled\" nor \"evented\"",
				       i);
			goto out;
		}
		for (j = 0; sp[i].unit_name && j < sizeof(ss_units) / sizeof(ss_units[0]); j++)
			if (!strcmp(sp[i].unit_name, ss_units[j].name))
				break;
		if (!sp[i].unit_name || j == sizeof(ss_units) / sizeof(ss_units[0])) {
			err = cp_error(EINVAL,
				       "format=speedscope: profile %zu: unknown \"unit\" '%.32s' (none, nanoseconds, "
				       "microseconds, milliseconds, seconds or bytes)",
				       i, sp[i].unit_name ? sp[i].unit_name : "");
			goto out;
		}
		sp[i].unit = ss_units[j].u;
		sp[i].ns = ss_units[j].ns;
		if (start && !json_is_number(start)) {
			err = cp_error(EINVAL, "format=speedscope: profile %zu: \"startValue\" is not a number", i);
			goto out;
		}
		sp[i].start = json_number_value(start);
		order[i] = &sp[i];
	}
	/* profiles of the same name, type, unit and startValue are one (as
	 * Pyroscope merges them): each group a profile of the push */
	qsort(order, n, sizeof(*order), ss_key_cmp);
	for (i = 0; i < n; i++) {
		if (i && !ss_same_key(order[i - 1], order[i]))
			ngroups++;
		order[i]->group = ngroups;
	}
	ngroups++;
	if (ngroups > SPEEDSCOPE_MAX_PROFILES) {
		err = cp_error(EFBIG, "format=speedscope: the body holds over %d profiles (the most one push may have)",
			       SPEEDSCOPE_MAX_PROFILES);
		goto out;
	}
	b->bytes = push->len;
	for (i = 0; i < n;) {
		struct cp_store_append a = { 0 };
		struct cp_labels ls = { 0 };
		char *tname;

		if ((err = ss_type(order[i], ngroups > 1, t, push->sample_rate, &o)))
			goto out;
		if (!(o.p = cp_profile_new()) || cp_profile_add_sample_type(o.p, o.t.type, o.t.unit) ||
		    cp_profile_set_period_type(o.p, o.t.ptype, o.t.punit,
					       o.t.cpu ? 1000000000 / push->sample_rate : 1)) {
			err = -ENOMEM;
			goto out;
		}
		memset(o.lids, 0, (c.nframes + 1) * sizeof(*o.lids));
		o.samples = 0;
		o.work = 0;
		o.total = 0;
		for (j = i; j < n && order[j]->group == order[i]->group; j++) {
			err = !strcmp(order[j]->type, "sampled") ? ss_sampled(&c, &o, order[j]) : ss_evented(&c, &o, order[j]);
			if (err)
				goto out;
		}
		o.p->time_nanos = push->from_ns;
		o.p->duration_nanos = push->until_ns > push->from_ns ? push->until_ns - push->from_ns : 0;
		if ((err = ss_labels(&push->name->labels, order[i]->name, &ls))) {
			cp_labels_release(&ls);
			if (err != -ENOMEM)
				err = cp_error_ctx(-err, "format=speedscope: profile %zu's labels", order[i]->index);
			goto out;
		}
		a.time_ns = push->from_ns;
		if (!(tname = strdup(o.t.name))) {
			cp_labels_release(&ls);
			err = -ENOMEM;
			goto out;
		}
		b->profiles++;
		b->samples += o.p->nsamples;
		if ((err = cp_ingest_batch_add(b, o.p, &a, &ls, tname))) {
			free(tname);
			cp_labels_release(&ls);
			b->internal = true;
			goto out;
		}
		o.p = NULL; /* the batch's */
		i = j;
	}
out:
	if (err == -ENOMEM) {
		cp_error(ENOMEM, "format=speedscope: out of memory");
		b->internal = true;
	}
	cp_profile_free(o.p);
	free(o.lids);
	free(o.buf);
	free(sp);
	free(order);
	json_decref(root);
	free(inflated);
	return err;
}

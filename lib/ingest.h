/* SPDX-License-Identifier: MIT */
/* What push clients send, turned into profiles and series labels: the
 * Pyroscope ingest API (its "app.cpu{k=v}" names, folded and lines bodies)
 * and Parca's writeraw JSON.  Pure parsing: cmd/serve.c does the HTTP. */
#ifndef CP_INGEST_H
#define CP_INGEST_H

#include <stddef.h>
#include <stdint.h>

#include "labels.h"
#include "profile.h"
#include "store/store.h"

/* Pyroscope's name: "app.cpu{k=v,k2=v2}" -> app "app", suffix "cpu" (the
 * part after the last dot; "cpu" when there is none), labels k, k2 (plus
 * service_name=app).  -EINVAL with a message. */
struct cp_pyro_name {
	char *app, *suffix;
	struct cp_labels labels;
};
int cp_pyro_name_parse(const char *s, struct cp_pyro_name *out);
void cp_pyro_name_release(struct cp_pyro_name *n);


/* The profile type a suffix and units give: name, sample type/unit, period
 * type/unit, and whether values are samples to multiply by 1e9/sampleRate. */
struct cp_pyro_type {
	const char *name, *type, *unit, *ptype, *punit;
	int cpu;
};
void cp_pyro_type(const char *suffix, const char *units, struct cp_pyro_type *t);

/* A label name as Pyroscope takes it: letters, digits, '_' and '.', not
 * starting with a digit; each '.' becomes '_' in place (otel.scope.name ->
 * otel_scope_name).  0, or -EINVAL (name unchanged) for any other name. */
int cp_pyro_label_name(char *name);

/* A pprof profile pushed to /ingest, split by what its sample types measure
 * and named as Pyroscope names them: cpu -> process_cpu:cpu:nanoseconds:cpu:
 * nanoseconds, wall -> wall:wall:nanoseconds:wall:nanoseconds (the samples
 * count goes with wall when there is one, else with cpu), heap ->
 * memory:{inuse,alloc}_{space,objects}:...:space:bytes (Node.js's objects and
 * space are inuse_objects and inuse_space), goroutines:goroutine:count:
 * goroutine:count, contentions and delay -> mutex (block when the name's
 * suffix starts with "block").  Other sample types keep their profile's period
 * type and name NULL (the store names them).  Each part is a profile and its
 * type name for cp_store_append.  On success p belongs to the parts (free
 * them all with cp_pyro_parts_free); on error it stays the caller's. */
struct cp_pyro_part {
	struct cp_profile *profile;
	const char *name; /* static, or NULL */
};
int cp_pyro_split(struct cp_profile *p, const char *suffix, struct cp_pyro_part **parts, size_t *n);
void cp_pyro_parts_free(struct cp_pyro_part *parts, size_t n);

/* A folded ("groups") or lines body as a profile of that type: values
 * scaled for cpu, duration until - from, time from.  NULL + errno. */
struct cp_profile *cp_pyro_decode_text(const char *body, size_t len, int lines, const struct cp_pyro_type *t,
				       int64_t sample_rate, int64_t from_ns, int64_t until_ns);

/* Parca's writeraw body: fn gets each raw profile with its series labels
 * (__name__ among them, as sent).  Stops at fn's first nonzero return.
 * -EINVAL with a message naming what is wrong; -EFBIG for a body of over
 * max_json_containers JSON objects and arrays or max_json_values values
 * (lib/decode_limits.h; counted before it is parsed: jansson takes a few
 * hundred bytes for an empty object). */
int cp_parca_writeraw(const char *body, size_t len,
		      int (*fn)(void *ctx, const struct cp_labels *labels, const uint8_t *raw, size_t rawlen),
		      void *ctx);


#endif

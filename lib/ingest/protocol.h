/* SPDX-License-Identifier: MIT */
/* How cprof serve takes pushes: one row per protocol in protocol.c, each
 * protocol's decoder in a file of its own here (cprof.c: cprof's own
 * POST /api/v1/push; pyroscope.c: Pyroscope's POST /ingest, its names, types
 * and text bodies; parca.c: Parca's POST /api/profiles/writeraw; otlp.c:
 * OpenTelemetry's OTLP/HTTP POST /v1development/profiles).  A decoder
 * turns one request into a batch of appends; lib/http/api_ingest.c serves
 * every row alike (the route, the status of a refusal, the commit through the
 * shared store, the counters, the log of rejected pushes).  Every decoder
 * bounds what it decodes by lib/decode_limits.h.
 * Adding a protocol: its file here, one row in protocol.c (its decoder
 * declared below).
 *
 * Ownership: a batch owns its profiles, labels and names until
 * cp_ingest_batch_release; its appends may also point into the request (which
 * outlives it).  Errors: a decoder returns 0 or -errno with the message
 * recorded (cp_error): the body is refused, 413 for -EFBIG (over a decode
 * limit), 503 for -EBUSY (the inflation budget is taken), else 400; 500 when
 * it set b->internal (the server failed, not the body). */
#ifndef CP_INGEST_PROTOCOL_H
#define CP_INGEST_PROTOCOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../http/server.h"
#include "../labels.h"
#include "../profile.h"
#include "../store/store.h"

/* What one request holds, to be committed in one go. */
struct cp_ingest_batch {
	struct cp_store_append *a; /* n appends */
	size_t n;
	size_t profiles, samples, bytes; /* what /metrics counts of it (set by the decoder) */
	bool internal;                   /* the refusal is the server's fault: 500 */
	/* what the appends point at, one of each per append (cp_ingest_batch_add) */
	struct cp_profile **profiles_owned;
	struct cp_labels *labels;
	char **names;
	size_t cap;
};

/* Appends *a to b with profile p, which becomes b's; so do *labels (moved,
 * left empty) and name (malloc'ed) when not NULL, which become the append's
 * labels and name.  0, or -ENOMEM with the message (nothing taken). */
int cp_ingest_batch_add(struct cp_ingest_batch *b, struct cp_profile *p, const struct cp_store_append *a,
			struct cp_labels *labels, char *name);
/* Frees what b owns and empties it. */
void cp_ingest_batch_release(struct cp_ingest_batch *b);

typedef int (*cp_ingest_decode_fn)(struct cp_req *r, struct cp_ingest_batch *b);

struct cp_ingest_protocol {
	const char *name;   /* its counters' api="..." in /metrics, its name in the log of rejected pushes */
	const char *method; /* "POST" */
	const char *path;   /* exact */
	const char *route;  /* the route's name: its handler label in /metrics */
	cp_ingest_decode_fn decode;
	const char *answer; /* a 200's JSON body; NULL: {"profiles":N,"samples":N} */
	/* For a protocol that says how it answers (OTLP: its response message, and a google.rpc.Status
	 * for a refusal, each in the request's encoding): writes the answer of status (200: stored,
	 * message NULL) to request r.  NULL: answer above, and cprof's {"error":"..."} for refusals. */
	void (*respond)(struct cp_req *r, struct cp_resp *out, int status, const char *message);
};

/* The most rows the table may have (the server's counters are sized by it). */
#define CP_INGEST_PROTOCOLS_MAX 8

/* The table, ending in a row without a name. */
extern const struct cp_ingest_protocol cp_ingest_protocols[];
/* Its rows. */
size_t cp_ingest_protocol_count(void);
/* The row serving method and path, or NULL. */
const struct cp_ingest_protocol *cp_ingest_protocol_at(const char *method, const char *path);

/* A time argument of r (cp_parse_time, lib/selector.h) into *t, left alone
 * when absent or empty.  0, or -EINVAL with "PARAM: why". */
int cp_ingest_time(struct cp_req *r, const char *param, int64_t now, int64_t *t);

/* ---- the rows' decoders ---- */
int cp_ingest_cprof(struct cp_req *r, struct cp_ingest_batch *b);
int cp_ingest_pyroscope(struct cp_req *r, struct cp_ingest_batch *b);
int cp_ingest_parca(struct cp_req *r, struct cp_ingest_batch *b);
int cp_ingest_otlp(struct cp_req *r, struct cp_ingest_batch *b);
/* OTLP/HTTP's answers, in the request's encoding (application/x-protobuf, or application/json for a
 * JSON request): for 200 an empty ExportProfilesServiceResponse (no partial_success), else a
 * google.rpc.Status (proto/rpc/status.proto) whose code is the gRPC code of status (400
 * INVALID_ARGUMENT, 413 RESOURCE_EXHAUSTED, 503 UNAVAILABLE, else INTERNAL) and whose message is
 * message (otlp.c). */
void cp_otlp_respond(struct cp_req *r, struct cp_resp *out, int status, const char *message);

/* ---- Pyroscope (pyroscope.c) ---- */

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
 * scaled for cpu, duration until - from, time from.  At most max_samples
 * lines (lib/decode_limits.h).  NULL + errno. */
struct cp_profile *cp_pyro_decode_text(const char *body, size_t len, int lines, const struct cp_pyro_type *t,
				       int64_t sample_rate, int64_t from_ns, int64_t until_ns);

/* The sample_type_config part of a multipart pprof push: per pprof sample
 * type, the name Pyroscope shows it as ("display-name"; its units,
 * aggregation, cumulative and sampled are checked, not used).  -EINVAL with
 * "sample_type_config: why", -EFBIG over 64 KiB. */
struct cp_pyro_stc {
	struct {
		char *type, *display; /* display NULL: none given */
	} *e;
	size_t n;
};
int cp_pyro_stc_parse(const char *s, size_t len, struct cp_pyro_stc *out);
void cp_pyro_stc_free(struct cp_pyro_stc *c);
/* type's display-name in c (c may be NULL), or NULL. */
const char *cp_pyro_stc_display(const struct cp_pyro_stc *c, const char *type);

/* cp_pyro_split, classifying each sample type by its display-name in stc when
 * it has one, as Pyroscope does ("block_count" -> block, "mutex_duration" ->
 * mutex, anything with "cpu" -> process_cpu, "alloc_"/"inuse_" -> memory,
 * "goroutines"); stc NULL: as cp_pyro_split. */
int cp_pyro_split_config(struct cp_profile *p, const char *suffix, const struct cp_pyro_stc *stc,
			 struct cp_pyro_part **parts, size_t *n);

/* Pyroscope's legacy binary uploads (format=trie, format=tree, or
 * Content-Type binary/octet-stream+trie / +tree) as folded text ("a;b;c N"
 * lines, malloc'ed in *text): preorder nodes of a varint name length, the
 * name, a varint value and a varint child count; a trie's key is its nodes'
 * names concatenated, a tree's the names below its root joined by ';'.  At
 * most max_samples nodes and max_decompressed bytes of text.  -EINVAL with
 * "trie: why" (truncated, a name with a newline, no value), -EFBIG. */
int cp_pyro_nodes_folded(const uint8_t *data, size_t len, int tree, char **text, size_t *tlen);

/* One /ingest request, as the decoders of its formats see it. */
/* The samples of *p (a JFR part) with a contextId label (lib/jfr.h) labelled by the contexts of
 * labels, the labels part of Pyroscope's Java agent (a LabelsSnapshot, proto/jfr/labels.proto,
 * gzipped or not; NULL or empty: none), the contextId dropped; samples that become alike summed (*p
 * made again).  0, or -EINVAL (not a snapshot, or a label naming a string it does not have), -EFBIG
 * past the decode limits, -ENOMEM, with a message. */
int cp_jfr_label_contexts(struct cp_profile **p, const uint8_t *labels, size_t len);

struct cp_pyro_push {
	struct cp_pyro_name *name; /* its labels already include service_name (moved into the batch) */
	const char *spy;                 /* spyName, or NULL */
	int64_t from_ns, until_ns, sample_rate;
	const uint8_t *body; /* the whole body (format=jfr), or the form's "jfr" part */
	size_t len;
	const uint8_t *labels; /* a form's "labels" part (JFR's per-context labels), or NULL */
	size_t labels_len;
};

/* format=jfr, and a multipart push with a "jfr" part (gzipped or not): the
 * recording read by lib/jfr.h, each of its event types (CPU, wall, the
 * allocation, monitor and park events) a profile of its Pyroscope type in b,
 * at the push's from..until, with the push's series labels (moved out of
 * push->name).  The form's "labels" part (the Java agent's per-context
 * labels) is not read.  -EINVAL naming what is wrong (not a recording, none
 * of the events read, a damaged one), -EFBIG past the decode limits
 * (pyroscope_formats.c). */
int cp_ingest_pyroscope_jfr(struct cp_req *r, struct cp_pyro_push *push, struct cp_ingest_batch *b);

/* format=speedscope: speedscope's JSON file (gzipped or not), each of its
 * profiles a profile in b at the push's from..until, labelled profile_name=
 * its name; profiles of the same name, type, unit and startValue are merged
 * into one, as Pyroscope merges them.  A file of one profile takes t (the
 * name's suffix and units=); of several, each is named by its unit as
 * Pyroscope names them: a time -> wall, bytes -> memory:samples:bytes, none
 * refused.  Times become nanoseconds, unit none counts samples at
 * sample_rate; an evented profile weighs each stack by the time it is open.
 * -EINVAL naming what is wrong, -EFBIG past the decode limits
 * (speedscope.c). */
int cp_ingest_pyroscope_speedscope(const struct cp_pyro_push *push, const struct cp_pyro_type *t,
				   struct cp_ingest_batch *b);

/* ---- Parca (parca.c) ---- */

/* Parca's writeraw body: fn gets each raw profile with its series labels
 * (__name__ among them, as sent).  Stops at fn's first nonzero return.
 * -EINVAL with a message naming what is wrong; -EFBIG for a body of over
 * max_json_containers JSON objects and arrays or max_json_values values
 * (lib/decode_limits.h; counted before it is parsed: jansson takes a few
 * hundred bytes for an empty object). */
int cp_parca_writeraw(const char *body, size_t len,
		      int (*fn)(void *ctx, const struct cp_labels *labels, const uint8_t *raw, size_t rawlen),
		      void *ctx);

/* ---- OTLP (otlp.c) ---- */

/* An OTLP ExportProfilesServiceRequest of opentelemetry-proto v1.11.0
 * (proto/otlp/README.md), protobuf (inflated already), into b: each Profile
 * with samples a profile of its sample type (samples/count with a period of
 * cpu/nanoseconds, the eBPF profiler's, becomes cpu/nanoseconds, each
 * sample's count times the period, named process_cpu; cpu/nanoseconds too;
 * other types keep theirs and the store names them), at its time_unix_nano
 * for duration_nano.  A sample's value is the sum of its values, or the
 * count of its timestamps when it has none.  Resource and profile
 * attributes become series labels, sample attributes sample labels:
 * service.name -> service_name, host.name -> node, container.id ->
 * container, k8s.pod.name -> pod, process.pid -> pid, thread.id ->
 * thread_id, thread.name -> thread_name (these three always the samples'
 * labels), other names with each character but letters, digits and '_' made
 * '_'; values strings, integers, booleans and doubles as text (arrays, lists,
 * bytes and empty strings are left out).  Mappings keep their
 * process.executable.build_id.gnu attribute as their build id.  Nesting and
 * the memory unpacking takes are bounded (twice max_decompressed), and so
 * are samples per profile and dictionary locations (lib/decode_limits.h).
 * 0, or -EINVAL with a message naming what is wrong (an index outside its
 * table, a bad type, a value that overflows), -EFBIG, -ENOMEM. */
int cp_otlp_decode(const uint8_t *body, size_t len, struct cp_ingest_batch *b);
/* The same from OTLP/JSON (Content-Type application/json): proto3's JSON mapping (lib/protojson.h)
 * with trace, span and profile ids in hex, as the OTLP specification says; the JSON held to the
 * decode limits' counts before it is parsed.  Errors as cp_otlp_decode's. */
int cp_otlp_decode_json(const char *body, size_t len, struct cp_ingest_batch *b);

#endif

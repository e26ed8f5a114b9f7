/* SPDX-License-Identifier: MIT */
/* How profiles are pushed to a server (--remote-api): one row per protocol
 * in protocol.c, each protocol's encoder in a file of its own here
 * (cprof.c: cprof's /api/v1/push; pyroscope.c: Pyroscope's /ingest as its
 * official clients send it; otlp.c: OTLP's /v1development/profiles).  The
 * remote store (lib/store/remote.c) pushes through the row it was given; the
 * body is the append's profile as gzipped pprof, or what the row's encode
 * makes of it, spooled by lib/http/push.c with the row's headers when the
 * server is away.
 * Adding a protocol: its file here, one row in protocol.c.
 *
 * Ownership: nothing is kept; *q is the caller's.  Errors: -EINVAL (a
 * label the protocol cannot carry), -ENOMEM, with the message recorded. */
#ifndef CP_PUSH_PROTOCOL_H
#define CP_PUSH_PROTOCOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../labels.h"
#include "../store/store.h"

/* a protocol's settings (--service-label; the spy name Pyroscope shows) */
struct cp_push_opts {
	const char *service_label; /* NULL: comm */
	const char *spy_name;      /* NULL: cprof */
};

struct cp_push_protocol {
	const char *name;      /* --remote-api's value */
	const char *ping_path; /* a GET that says the server answers and takes the token; NULL: none */
	bool service;          /* names a service (Pyroscope's app, OTLP's service.name): takes --service-label */
	bool tenant;           /* takes --tenant (X-Scope-OrgID, as Grafana Pyroscope's multi-tenancy reads it) */
	/* The request target of one append (malloc'ed into *q): "/PATH?QUERY", or a query alone for
	 * cprof's /api/v1/push. */
	int (*target)(const struct cp_push_opts *o, const struct cp_store_append *a, char **q);
	/* The body of append a whose samples are those of part (a's profile, or the
	 * part a->sel picks), malloc'ed into *body; NULL: part as gzipped pprof. */
	int (*encode)(const struct cp_push_opts *o, const struct cp_store_append *a, const struct cp_profile *part,
		      uint8_t **body, size_t *len);
	const char *const *headers; /* sent with each body (Content-Type...), NULL-terminated; NULL: none */
};

/* The table, ending in a row without a name; the first row is the default. */
extern const struct cp_push_protocol cp_push_protocols[];
/* The protocol called name (NULL: the default, cprof's), or NULL. */
const struct cp_push_protocol *cp_push_protocol_find(const char *name);
/* Their names, "a or b", into buf (cut to its size). */
const char *cp_push_protocol_names(char *buf, size_t size);

/* the rows' targets */
int cp_push_target_cprof(const struct cp_push_opts *o, const struct cp_store_append *a, char **q);
int cp_push_target_pyroscope(const struct cp_push_opts *o, const struct cp_store_append *a, char **q);
int cp_push_target_otlp(const struct cp_push_opts *o, const struct cp_store_append *a, char **q);

/* The service an append is pushed as: the value of its label o->service_label (comm when NULL), else
 * of service_name, job or comm, else "cprof" (Pyroscope's app name, OTLP's service.name). */
const char *cp_push_service(const struct cp_push_opts *o, const struct cp_store_append *a);

/* OTLP (otlp.c): append a, the samples of p (a's profile or its part), as an
 * ExportProfilesServiceRequest of opentelemetry-proto v1.11.0, gzipped, into
 * *body (malloc'ed); the encoding is described at the top of otlp.c.  0,
 * -EOVERFLOW (more than OTLP's 32-bit indices hold), -ENOMEM. */
int cp_otlp_encode(const struct cp_push_opts *o, const struct cp_store_append *a, const struct cp_profile *p,
		   uint8_t **body, size_t *len);
/* its headers: Content-Type application/x-protobuf, Content-Encoding gzip */
extern const char *const cp_push_otlp_headers[];
/* The OpenTelemetry attribute name of a cprof label name (service_name ->
 * service.name, ...; pid -> process.pid, ...), else the name itself. */
const char *cp_otlp_attribute_name(const char *label);

/* The name= of a push to Pyroscope's /ingest for a series of service `app` with labels (n of
 * them): "app{service_name=app,k=v,...}", service_name first and given explicitly (an app name
 * with a dot would otherwise lose its last part to the type suffix), a label of the same name left
 * out.  Pyroscope's name syntax has no escapes: ',', '{' and '}' in a value (and in app) become
 * '_'.  Label names must be ones cp_pyro_label_name takes (series label names are); the server's
 * parser, cp_pyro_name_parse (lib/ingest/protocol.h), reads it back.  *out malloc'ed; 0 or
 * -ENOMEM. */
int cp_pyro_name_format(const char *app, const struct cp_kv *labels, size_t n, char **out);

#endif

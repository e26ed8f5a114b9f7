/* SPDX-License-Identifier: MIT */
/* Pushing as OTLP (opentelemetry-proto v1.11.0, proto/otlp/): one append is
 * an ExportProfilesServiceRequest, POSTed gzipped to /v1development/profiles;
 * the inverse of what lib/ingest/otlp.c takes.  One ResourceProfiles whose
 * resource attributes are service.name (the series' service_name label, or
 * the service cp_push_service names: --service-label's label, comm, ...) and
 * the other series labels (node -> host.name, container -> container.id, pod
 * -> k8s.pod.name, others as they are), one ScopeProfiles (scope "cprof"), and one Profile per sample
 * type of the profile (an OTLP Profile has one), all sharing the dictionary:
 * its string table is the profile's (string 0 is ""), function, mapping and
 * location i are the profile's id i, stack i + 1 its stack i, each table's
 * entry 0 the zero value; attribute 1 + i the profile's label i (pid ->
 * process.pid, thread_id -> thread.id, thread_name -> thread.name, numeric
 * labels as integers with their unit), after them the mappings' build ids
 * (process.executable.build_id.gnu).  A sample with value 0 in a type is left
 * out of that type's Profile.  samples/count with a period of cpu/nanoseconds
 * next to a cpu/nanoseconds type (Go's CPU profiles) goes with period 0 (its
 * sibling keeps it): with one, receivers take it for the eBPF profiler's CPU
 * samples, counts to be multiplied by the period, and store it twice as CPU time. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "gzip.h"
#include "profile.h"
#include "push/protocol.h"
#include "selector.h"
#include "util.h"
#include "opentelemetry/proto/collector/profiles/v1development/profiles_service.pb-c.h"

typedef Opentelemetry__Proto__Collector__Profiles__V1development__ExportProfilesServiceRequest Req;
typedef Opentelemetry__Proto__Profiles__V1development__ProfilesDictionary Dict;
typedef Opentelemetry__Proto__Profiles__V1development__ResourceProfiles RP;
typedef Opentelemetry__Proto__Profiles__V1development__ScopeProfiles SP;
typedef Opentelemetry__Proto__Profiles__V1development__Profile Prof;
typedef Opentelemetry__Proto__Profiles__V1development__ValueType VT;
typedef Opentelemetry__Proto__Profiles__V1development__Sample Sample;
typedef Opentelemetry__Proto__Profiles__V1development__Stack Stack;
typedef Opentelemetry__Proto__Profiles__V1development__Location Loc;
typedef Opentelemetry__Proto__Profiles__V1development__Line Line;
typedef Opentelemetry__Proto__Profiles__V1development__Mapping Mapping;
typedef Opentelemetry__Proto__Profiles__V1development__Function Func;
typedef Opentelemetry__Proto__Profiles__V1development__KeyValueAndUnit KVU;
typedef Opentelemetry__Proto__Resource__V1__Resource Resource;
typedef Opentelemetry__Proto__Common__V1__InstrumentationScope Scope;
typedef Opentelemetry__Proto__Common__V1__AnyValue AnyValue;
typedef Opentelemetry__Proto__Common__V1__KeyValue KeyValue;

/* cprof's label names and their OpenTelemetry attribute names (lib/ingest/otlp.c's, the other way) */
static const char *const series_names[][2] = {
	{ "service_name", "service.name" }, { "node", "host.name" }, { "container", "container.id" },
	{ "pod", "k8s.pod.name" },
};
static const char *const sample_names[][2] = {
	{ "pid", "process.pid" }, { "thread_id", "thread.id" }, { "thread_name", "thread.name" },
};
#define NSAMPLE_NAMES (sizeof(sample_names) / sizeof(sample_names[0]))
#define BUILD_ID_KEY "process.executable.build_id.gnu"

const char *cp_otlp_attribute_name(const char *label)
{
	for (size_t i = 0; i < sizeof(series_names) / sizeof(series_names[0]); i++)
		if (!strcmp(label, series_names[i][0]))
			return series_names[i][1];
	for (size_t i = 0; i < NSAMPLE_NAMES; i++)
		if (!strcmp(label, sample_names[i][0]))
			return sample_names[i][1];
	return label;
}

/* everything the request points to, freed at once */
struct enc {
	char **strs;
	Func *fn;
	Func **fnp;
	Mapping *mp;
	Mapping **mpp;
	Loc *loc;
	Loc **locp;
	Line *ln;
	Line **lnp;
	Stack *st;
	Stack **stp;
	int32_t *stidx;
	KVU *kvu;
	KVU **kvup;
	AnyValue *av;
	int32_t *mattr, *sattr;
	Prof *pr;
	Prof **prp;
	VT *vt;
	Sample *sa;
	Sample **sap;
	KeyValue *rkv;
	KeyValue **rkvp;
	AnyValue *rav;
};

static void enc_free(struct enc *e)
{
	free(e->strs);
	free(e->fn);
	free(e->fnp);
	free(e->mp);
	free(e->mpp);
	free(e->loc);
	free(e->locp);
	free(e->ln);
	free(e->lnp);
	free(e->st);
	free(e->stp);
	free(e->stidx);
	free(e->kvu);
	free(e->kvup);
	free(e->av);
	free(e->mattr);
	free(e->sattr);
	free(e->pr);
	free(e->prp);
	free(e->vt);
	free(e->sa);
	free(e->sap);
	free(e->rkv);
	free(e->rkvp);
	free(e->rav);
}

static bool is_type(const struct cp_profile *p, const struct cp_valuetype *vt, const char *type, const char *unit)
{
	return !strcmp(cp_profile_string(p, vt->type), type) && !strcmp(cp_profile_string(p, vt->unit), unit);
}

int cp_otlp_encode(const struct cp_push_opts *o, const struct cp_store_append *a, const struct cp_profile *p,
		   uint8_t **body, size_t *len)
{
	static const int32_t none = 0;
	struct enc e = { 0 };
	Req req = OPENTELEMETRY__PROTO__COLLECTOR__PROFILES__V1DEVELOPMENT__EXPORT_PROFILES_SERVICE_REQUEST__INIT;
	Dict d = OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__PROFILES_DICTIONARY__INIT;
	RP rp = OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__RESOURCE_PROFILES__INIT, *rpp = &rp;
	SP sp = OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__SCOPE_PROFILES__INIT, *spp = &sp;
	Resource res = OPENTELEMETRY__PROTO__RESOURCE__V1__RESOURCE__INIT;
	Scope scope = OPENTELEMETRY__PROTO__COMMON__V1__INSTRUMENTATION_SCOPE__INIT;
	size_t nstr = p->strs.n, nbuild = 0, nattr, nsel = 0, k;
	int32_t extra[NSAMPLE_NAMES], build_key;
	int64_t t = a->time_ns ? a->time_ns : p->time_nanos ? p->time_nanos : cp_now_ns();
	int64_t dur = a->end_ns > t ? a->end_ns - t : p->duration_nanos;
	bool has_cpu = false;
	uint8_t *raw = NULL;
	size_t rlen;
	int err = 0;

	*body = NULL;
	*len = 0;
	if (!nstr || *cp_profile_string(p, 0))
		return cp_error(EINVAL, "the profile's string 0 is not \"\"");
	if (nstr + NSAMPLE_NAMES + 1 > INT32_MAX || p->nlabels + p->nmappings + 1 > INT32_MAX ||
	    (size_t)p->nstacks + 1 > INT32_MAX || p->nlocations >= INT32_MAX || p->nfunctions >= INT32_MAX)
		return cp_error(EOVERFLOW, "the profile is too large for OTLP's 32-bit indices");
	for (k = 0; k < p->nmappings; k++)
		nbuild += p->mappings[k].build_id != 0;
	nattr = 1 + p->nlabels + nbuild;
	e.strs = calloc(nstr + NSAMPLE_NAMES + 1, sizeof(*e.strs));
	e.fn = calloc(p->nfunctions + 1, sizeof(*e.fn));
	e.fnp = calloc(p->nfunctions + 1, sizeof(*e.fnp));
	e.mp = calloc(p->nmappings + 1, sizeof(*e.mp));
	e.mpp = calloc(p->nmappings + 1, sizeof(*e.mpp));
	e.mattr = calloc(p->nmappings + 1, sizeof(*e.mattr));
	e.loc = calloc(p->nlocations + 1, sizeof(*e.loc));
	e.locp = calloc(p->nlocations + 1, sizeof(*e.locp));
	e.ln = calloc(p->nlines + 1, sizeof(*e.ln));
	e.lnp = calloc(p->nlines + 1, sizeof(*e.lnp));
	e.st = calloc((size_t)p->nstacks + 1, sizeof(*e.st));
	e.stp = calloc((size_t)p->nstacks + 1, sizeof(*e.stp));
	e.stidx = calloc(p->nstack_locs + 1, sizeof(*e.stidx));
	e.kvu = calloc(nattr, sizeof(*e.kvu));
	e.kvup = calloc(nattr, sizeof(*e.kvup));
	e.av = calloc(nattr, sizeof(*e.av));
	e.sattr = calloc(p->nlabels + 1, sizeof(*e.sattr));
	e.pr = calloc(p->ntypes + 1, sizeof(*e.pr));
	e.prp = calloc(p->ntypes + 1, sizeof(*e.prp));
	e.vt = calloc(2 * p->ntypes + 1, sizeof(*e.vt));
	e.sa = calloc((size_t)p->nsamples * (p->ntypes ? p->ntypes : 1) + 1, sizeof(*e.sa));
	e.sap = calloc((size_t)p->nsamples * (p->ntypes ? p->ntypes : 1) + 1, sizeof(*e.sap));
	e.rkv = calloc(a->nlabels + 1, sizeof(*e.rkv));
	e.rkvp = calloc(a->nlabels + 1, sizeof(*e.rkvp));
	e.rav = calloc(a->nlabels + 1, sizeof(*e.rav));
	if (!e.strs || !e.fn || !e.fnp || !e.mp || !e.mpp || !e.mattr || !e.loc || !e.locp || !e.ln || !e.lnp || !e.st ||
	    !e.stp || !e.stidx || !e.kvu || !e.kvup || !e.av || !e.sattr || !e.pr || !e.prp || !e.vt || !e.sa || !e.sap ||
	    !e.rkv || !e.rkvp || !e.rav) {
		err = cp_error(ENOMEM, "out of memory");
		goto out;
	}

	/* strings: the profile's, then the attribute names it has not */
	for (k = 0; k < nstr; k++)
		e.strs[k] = (char *)cp_profile_string(p, (uint32_t)k);
	for (k = 0; k < NSAMPLE_NAMES; k++) {
		extra[k] = (int32_t)nstr;
		e.strs[nstr++] = (char *)sample_names[k][1];
	}
	build_key = (int32_t)nstr;
	e.strs[nstr++] = BUILD_ID_KEY;
	d.string_table = e.strs;
	d.n_string_table = nstr;

	/* attributes: 0 the zero one, 1 + i label i, then the build ids */
	for (k = 0; k < nattr; k++) {
		opentelemetry__proto__profiles__v1development__key_value_and_unit__init(&e.kvu[k]);
		opentelemetry__proto__common__v1__any_value__init(&e.av[k]);
		e.kvup[k] = &e.kvu[k];
	}
	for (k = 0; k < p->nlabels; k++) {
		const struct cp_label *l = &p->labels[k];
		KVU *kv = &e.kvu[1 + k];
		const char *key = cp_profile_string(p, l->key);

		kv->key_strindex = (int32_t)l->key;
		for (size_t j = 0; j < NSAMPLE_NAMES; j++)
			if (!strcmp(key, sample_names[j][0]))
				kv->key_strindex = extra[j];
		kv->value = &e.av[1 + k];
		if (l->str) {
			kv->value->value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE_STRINDEX;
			kv->value->string_value_strindex = (int32_t)l->str;
		} else {
			kv->value->value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_INT_VALUE;
			kv->value->int_value = l->num;
			kv->unit_strindex = (int32_t)l->num_unit;
		}
	}
	d.attribute_table = e.kvup;
	d.n_attribute_table = nattr;

	/* functions, mappings, locations: id i at i, 0 the zero value */
	for (k = 0; k <= p->nfunctions; k++) {
		opentelemetry__proto__profiles__v1development__function__init(&e.fn[k]);
		e.fnp[k] = &e.fn[k];
		if (!k)
			continue;
		e.fn[k].name_strindex = (int32_t)p->functions[k - 1].name;
		e.fn[k].system_name_strindex = (int32_t)p->functions[k - 1].system_name;
		e.fn[k].filename_strindex = (int32_t)p->functions[k - 1].filename;
		e.fn[k].start_line = p->functions[k - 1].start_line;
	}
	d.function_table = e.fnp;
	d.n_function_table = p->nfunctions + 1;
	nbuild = 0;
	for (k = 0; k <= p->nmappings; k++) {
		const struct cp_mapping *m = k ? &p->mappings[k - 1] : NULL;

		opentelemetry__proto__profiles__v1development__mapping__init(&e.mp[k]);
		e.mpp[k] = &e.mp[k];
		if (!m)
			continue;
		e.mp[k].memory_start = m->start;
		e.mp[k].memory_limit = m->limit;
		e.mp[k].file_offset = m->offset;
		e.mp[k].filename_strindex = (int32_t)m->filename;
		if (m->build_id) {
			KVU *kv = &e.kvu[1 + p->nlabels + nbuild];

			kv->key_strindex = build_key;
			kv->value = &e.av[1 + p->nlabels + nbuild];
			kv->value->value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE_STRINDEX;
			kv->value->string_value_strindex = (int32_t)m->build_id;
			e.mattr[k] = (int32_t)(1 + p->nlabels + nbuild++);
			e.mp[k].attribute_indices = &e.mattr[k];
			e.mp[k].n_attribute_indices = 1;
		}
	}
	d.mapping_table = e.mpp;
	d.n_mapping_table = p->nmappings + 1;
	for (k = 0; k < p->nlines; k++) {
		opentelemetry__proto__profiles__v1development__line__init(&e.ln[k]);
		e.ln[k].function_index = (int32_t)p->lines[k].function;
		e.ln[k].line = p->lines[k].line;
		e.ln[k].column = p->lines[k].column;
		e.lnp[k] = &e.ln[k];
	}
	for (k = 0; k <= p->nlocations; k++) {
		const struct cp_location *l = k ? cp_profile_loc(p, (uint32_t)k) : NULL;

		opentelemetry__proto__profiles__v1development__location__init(&e.loc[k]);
		e.locp[k] = &e.loc[k];
		if (!l)
			continue;
		e.loc[k].mapping_index = (int32_t)l->mapping;
		e.loc[k].address = l->address;
		e.loc[k].lines = &e.lnp[l->line_off];
		e.loc[k].n_lines = l->nlines;
	}
	d.location_table = e.locp;
	d.n_location_table = p->nlocations + 1;

	/* stacks: i + 1 is the profile's i, leaf first as cprof's */
	for (k = 0; k < p->nstack_locs; k++)
		e.stidx[k] = (int32_t)p->stack_locs[k];
	for (k = 0; k <= p->nstacks; k++) {
		opentelemetry__proto__profiles__v1development__stack__init(&e.st[k]);
		e.stp[k] = &e.st[k];
		if (!k)
			continue;
		e.st[k].location_indices = &e.stidx[p->stacks[k - 1].off];
		e.st[k].n_location_indices = p->stacks[k - 1].len;
	}
	d.stack_table = e.stp;
	d.n_stack_table = (size_t)p->nstacks + 1;
	for (k = 0; k < p->nlabels; k++)
		e.sattr[k] = (int32_t)(1 + k);

	/* one profile per sample type */
	for (k = 0; k < p->ntypes; k++)
		has_cpu |= is_type(p, &p->sample_types[k], "cpu", "nanoseconds");
	for (k = 0; k < p->ntypes; k++) {
		Prof *pr = &e.pr[k];
		VT *st = &e.vt[2 * k], *pt = &e.vt[2 * k + 1];

		opentelemetry__proto__profiles__v1development__profile__init(pr);
		opentelemetry__proto__profiles__v1development__value_type__init(st);
		opentelemetry__proto__profiles__v1development__value_type__init(pt);
		e.prp[k] = pr;
		st->type_strindex = (int32_t)p->sample_types[k].type;
		st->unit_strindex = (int32_t)p->sample_types[k].unit;
		pr->sample_type = st;
		pt->type_strindex = (int32_t)p->period_type.type;
		pt->unit_strindex = (int32_t)p->period_type.unit;
		pr->period_type = pt;
		pr->period = p->period;
		if (has_cpu && is_type(p, &p->sample_types[k], "samples", "count") &&
		    is_type(p, &p->period_type, "cpu", "nanoseconds"))
			pr->period = 0;
		pr->time_unix_nano = t > 0 ? (uint64_t)t : 0;
		pr->duration_nano = dur > 0 ? (uint64_t)dur : 0;
		pr->samples = &e.sap[nsel];
		for (uint32_t i = 0; i < p->nsamples; i++) {
			const struct cp_sample *s = &p->samples[i];
			Sample *o = &e.sa[nsel];

			if (!cp_profile_values(p, i)[k])
				continue;
			opentelemetry__proto__profiles__v1development__sample__init(o);
			o->stack_index = (int32_t)s->stack + 1;
			o->values = (int64_t *)&cp_profile_values(p, i)[k];
			o->n_values = 1;
			o->attribute_indices = (int32_t *)&none;
			if (s->labels < p->nlabelsets) {
				o->attribute_indices = &e.sattr[p->labelsets[s->labels].off];
				o->n_attribute_indices = p->labelsets[s->labels].len;
			}
			e.sap[nsel++] = o;
			pr->n_samples++;
		}
	}

	/* the resource: service.name (the series' service_name, or the service --service-label or comm
	 * names, as a push to Pyroscope names its app), then the other series labels */
	for (k = 0; k <= a->nlabels; k++) {
		size_t i = res.n_attributes;
		const char *key = "service.name", *value = NULL;

		if (k == 0) {
			for (size_t j = 0; !o->service_label && j < a->nlabels; j++)
				if (!strcmp(a->labels[j].name, "service_name"))
					value = a->labels[j].value;
			if (!value)
				value = cp_push_service(o, a);
		} else if (strcmp(a->labels[k - 1].name, "service_name")) {
			key = cp_otlp_attribute_name(a->labels[k - 1].name);
			value = a->labels[k - 1].value;
		} else {
			continue;
		}
		opentelemetry__proto__common__v1__key_value__init(&e.rkv[i]);
		opentelemetry__proto__common__v1__any_value__init(&e.rav[i]);
		e.rkv[i].key = (char *)key;
		e.rav[i].value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE;
		e.rav[i].string_value = (char *)value;
		e.rkv[i].value = &e.rav[i];
		e.rkvp[i] = &e.rkv[i];
		res.n_attributes++;
	}
	res.attributes = e.rkvp;
	scope.name = "cprof";
	sp.scope = &scope;
	sp.profiles = e.prp;
	sp.n_profiles = p->ntypes;
	rp.resource = &res;
	rp.scope_profiles = &spp;
	rp.n_scope_profiles = 1;
	req.resource_profiles = &rpp;
	req.n_resource_profiles = 1;
	req.dictionary = &d;

	rlen = protobuf_c_message_get_packed_size(&req.base);
	if (!(raw = malloc(rlen ? rlen : 1))) {
		err = cp_error(ENOMEM, "out of memory");
		goto out;
	}
	protobuf_c_message_pack(&req.base, raw);
	err = cp_gzip(raw, rlen, body, len);
	if (err)
		err = cp_error(-err, "compressing an OTLP request");
out:
	free(raw);
	enc_free(&e);
	return err;
}

const char *const cp_push_otlp_headers[] = { "Content-Type: application/x-protobuf", "Content-Encoding: gzip", NULL };

int cp_push_target_otlp(const struct cp_push_opts *o, const struct cp_store_append *a, char **q)
{
	(void)o;
	(void)a;
	if (!(*q = strdup("/v1development/profiles")))
		return cp_error(ENOMEM, "out of memory");
	return 0;
}

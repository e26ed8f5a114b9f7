/* SPDX-License-Identifier: MIT */
/* OTLP profiles (lib/ingest/otlp.c): requests packed by protobuf-c's code of
 * the pinned .proto files, decoded into a batch: types, values, labels,
 * dictionary indices, and the bounds; and cprof's own encoder
 * (lib/push/otlp.c) decoded back: same types, totals, labels, frames. */
#include <check.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode_limits.h"
#include "error.h"
#include "ingest/protocol.h"
#include "gzip.h"
#include "profile.h"
#include "push/protocol.h"
#include "opentelemetry/proto/collector/profiles/v1development/profiles_service.pb-c.h"

typedef Opentelemetry__Proto__Common__V1__AnyValue AnyValue;
typedef Opentelemetry__Proto__Common__V1__KeyValue KeyValue;

/* a request of one resource, one profile of samples/count, period cpu 10 ns
 * (or TYPE/nanoseconds when type is given), whose sample 0 has stack
 * `stack`; n samples of value 2 and 3 alternately */
struct req {
	Opentelemetry__Proto__Collector__Profiles__V1development__ExportProfilesServiceRequest r;
	Opentelemetry__Proto__Profiles__V1development__ProfilesDictionary d;
	Opentelemetry__Proto__Profiles__V1development__ResourceProfiles rp, *rps[1];
	Opentelemetry__Proto__Resource__V1__Resource res;
	KeyValue kv[3], *kvs[3];
	AnyValue av[3], sv[3];
	Opentelemetry__Proto__Profiles__V1development__ScopeProfiles sp, *sps[1];
	Opentelemetry__Proto__Profiles__V1development__Profile p, *ps[1];
	Opentelemetry__Proto__Profiles__V1development__ValueType st, pt;
	Opentelemetry__Proto__Profiles__V1development__Sample *samples;
	Opentelemetry__Proto__Profiles__V1development__Sample **sampp;
	int64_t vals[2];
	int32_t sattrs[2];
	Opentelemetry__Proto__Profiles__V1development__Stack stk[2], *stks[2];
	int32_t locidx[2];
	Opentelemetry__Proto__Profiles__V1development__Location loc[3], *locs[3];
	Opentelemetry__Proto__Profiles__V1development__Line line[3], *lines[3];
	Opentelemetry__Proto__Profiles__V1development__Function fn[3], *fns[3];
	Opentelemetry__Proto__Profiles__V1development__KeyValueAndUnit at[3], *ats[3];
	char *strs[9];
};

static uint8_t *pack(size_t nsamples, int32_t stack, const char *type, size_t *len)
{
	struct req *q = calloc(1, sizeof(*q));
	static char *const strs[] = { "", "samples", "count", "cpu", "nanoseconds", "main", "work", "process.pid",
				      "thread.name" };
	static const char *const rkeys[] = { "service.name", "host.name", "k8s.pod.name" };
	static const char *const rvals[] = { "svc", "h1", "pod-1" };
	uint8_t *buf;
	size_t i;

	ck_assert_ptr_nonnull(q);
	opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__init(&q->r);
	opentelemetry__proto__profiles__v1development__profiles_dictionary__init(&q->d);
	memcpy(q->strs, strs, sizeof(strs));
	q->d.string_table = q->strs;
	q->d.n_string_table = 9;
	for (i = 0; i < 3; i++) {
		opentelemetry__proto__profiles__v1development__function__init(&q->fn[i]);
		opentelemetry__proto__profiles__v1development__line__init(&q->line[i]);
		opentelemetry__proto__profiles__v1development__location__init(&q->loc[i]);
		opentelemetry__proto__profiles__v1development__key_value_and_unit__init(&q->at[i]);
		opentelemetry__proto__common__v1__any_value__init(&q->sv[i]);
		q->fns[i] = &q->fn[i];
		q->locs[i] = &q->loc[i];
		q->ats[i] = &q->at[i];
		if (!i)
			continue;
		q->fn[i].name_strindex = (int32_t)(4 + i); /* main, work */
		q->line[i].function_index = (int32_t)i;
		q->line[i].line = (int64_t)i * 10;
		q->lines[i] = &q->line[i];
		q->loc[i].lines = &q->lines[i];
		q->loc[i].n_lines = 1;
		q->loc[i].address = 0x1000 * i;
	}
	q->sv[1].value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_INT_VALUE;
	q->sv[1].int_value = 42;
	q->at[1].key_strindex = 7;
	q->at[1].value = &q->sv[1];
	q->sv[2].value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE_STRINDEX;
	q->sv[2].string_value_strindex = 6; /* "work" */
	q->at[2].key_strindex = 8;
	q->at[2].value = &q->sv[2];
	q->d.function_table = q->fns;
	q->d.n_function_table = 3;
	q->d.location_table = q->locs;
	q->d.n_location_table = 3;
	q->d.attribute_table = q->ats;
	q->d.n_attribute_table = 3;
	for (i = 0; i < 2; i++) {
		opentelemetry__proto__profiles__v1development__stack__init(&q->stk[i]);
		q->stks[i] = &q->stk[i];
	}
	q->locidx[0] = 2; /* work <- main, leaf first */
	q->locidx[1] = 1;
	q->stk[1].location_indices = q->locidx;
	q->stk[1].n_location_indices = 2;
	q->d.stack_table = q->stks;
	q->d.n_stack_table = 2;
	q->r.dictionary = &q->d;

	opentelemetry__proto__resource__v1__resource__init(&q->res);
	for (i = 0; i < 3; i++) {
		opentelemetry__proto__common__v1__key_value__init(&q->kv[i]);
		opentelemetry__proto__common__v1__any_value__init(&q->av[i]);
		q->av[i].value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE;
		q->av[i].string_value = (char *)rvals[i];
		q->kv[i].key = (char *)rkeys[i];
		q->kv[i].value = &q->av[i];
		q->kvs[i] = &q->kv[i];
	}
	q->res.attributes = q->kvs;
	q->res.n_attributes = 3;
	opentelemetry__proto__profiles__v1development__resource_profiles__init(&q->rp);
	q->rp.resource = &q->res;
	opentelemetry__proto__profiles__v1development__scope_profiles__init(&q->sp);
	opentelemetry__proto__profiles__v1development__profile__init(&q->p);
	opentelemetry__proto__profiles__v1development__value_type__init(&q->st);
	opentelemetry__proto__profiles__v1development__value_type__init(&q->pt);
	if (type) {
		q->strs[1] = (char *)type;
		q->strs[2] = "nanoseconds";
	}
	q->st.type_strindex = 1;
	q->st.unit_strindex = 2;
	q->pt.type_strindex = 3;
	q->pt.unit_strindex = 4;
	q->p.sample_type = &q->st;
	q->p.period_type = &q->pt;
	q->p.period = 10;
	q->p.time_unix_nano = 1700000000000000000ULL;
	q->p.duration_nano = 10000000000ULL;
	q->samples = calloc(nsamples, sizeof(*q->samples));
	q->sampp = calloc(nsamples, sizeof(*q->sampp));
	q->vals[0] = 2;
	q->vals[1] = 3;
	q->sattrs[0] = 1;
	q->sattrs[1] = 2;
	for (i = 0; i < nsamples; i++) {
		opentelemetry__proto__profiles__v1development__sample__init(&q->samples[i]);
		q->samples[i].stack_index = i ? 1 : stack;
		q->samples[i].values = &q->vals[i % 2];
		q->samples[i].n_values = 1;
		q->samples[i].attribute_indices = q->sattrs;
		q->samples[i].n_attribute_indices = 2;
		q->sampp[i] = &q->samples[i];
	}
	q->p.samples = q->sampp;
	q->p.n_samples = nsamples;
	q->ps[0] = &q->p;
	q->sp.profiles = q->ps;
	q->sp.n_profiles = 1;
	q->sps[0] = &q->sp;
	q->rp.scope_profiles = q->sps;
	q->rp.n_scope_profiles = 1;
	q->rps[0] = &q->rp;
	q->r.resource_profiles = q->rps;
	q->r.n_resource_profiles = 1;
	*len = opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__get_packed_size(&q->r);
	buf = malloc(*len + 1);
	opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__pack(&q->r, buf);
	free(q->samples);
	free(q->sampp);
	free(q);
	return buf;
}

static const char *label(const struct cp_store_append *a, const char *name)
{
	for (size_t i = 0; i < a->nlabels; i++)
		if (!strcmp(a->labels[i].name, name))
			return a->labels[i].value;
	return NULL;
}

START_TEST(test_cpu)
{
	struct cp_ingest_batch b = { 0 };
	size_t len;
	uint8_t *buf = pack(4, 1, NULL, &len);
	const struct cp_profile *p;
	char type[256];

	ck_assert_int_eq(cp_otlp_decode(buf, len, &b), 0);
	ck_assert_uint_eq(b.n, 1);
	ck_assert_uint_eq(b.profiles, 1);
	ck_assert_str_eq(b.a[0].name, "process_cpu");
	p = b.a[0].profile;
	cp_store_type_name(p, 0, b.a[0].name, type, sizeof(type));
	ck_assert_str_eq(type, "process_cpu:cpu:nanoseconds:cpu:nanoseconds:delta"); /* as every cpu type is stored */
	/* (2 + 3 + 2 + 3) samples x 10 ns, all of one stack and label set */
	ck_assert_int_eq(cp_profile_total(p, 0), 100);
	ck_assert_uint_eq(p->nsamples, 1);
	ck_assert_int_eq(b.a[0].time_ns, 1700000000000000000LL);
	ck_assert_int_eq(p->duration_nanos, 10000000000LL);
	ck_assert_str_eq(label(&b.a[0], "service_name"), "svc");
	ck_assert_str_eq(label(&b.a[0], "node"), "h1");
	ck_assert_str_eq(label(&b.a[0], "pod"), "pod-1");
	/* the sample's labels: process.pid (an int) and thread.name (a string of the table) */
	ck_assert_uint_eq(p->labelsets[p->samples[0].labels].len, 2);
	for (uint32_t i = 0; i < 2; i++) {
		const struct cp_label *l = &p->labels[p->labelsets[p->samples[0].labels].off + i];
		const char *k = cp_profile_string(p, l->key), *v = cp_profile_string(p, l->str);

		ck_assert(!strcmp(k, "pid") ? !strcmp(v, "42") : !strcmp(k, "thread_name") && !strcmp(v, "work"));
	}
	/* the stack, leaf first: work <- main */
	ck_assert_uint_eq(p->stacks[p->samples[0].stack].len, 2);
	{
		const struct cp_location *l = cp_profile_loc(p, p->stack_locs[p->stacks[p->samples[0].stack].off]);

		ck_assert_str_eq(cp_profile_string(p, p->functions[p->lines[l->line_off].function - 1].name), "work");
	}
	cp_ingest_batch_release(&b);
	free(buf);
}
END_TEST

START_TEST(test_other_type)
{
	struct cp_ingest_batch b = { 0 };
	size_t len;
	uint8_t *buf = pack(2, 1, "alloc_space", &len);

	ck_assert_int_eq(cp_otlp_decode(buf, len, &b), 0);
	ck_assert_uint_eq(b.n, 1);
	ck_assert_ptr_null(b.a[0].name); /* named by the store */
	ck_assert_int_eq(cp_profile_total(b.a[0].profile, 0), 5); /* no period applied */
	cp_ingest_batch_release(&b);
	free(buf);
}
END_TEST

START_TEST(test_bad_index)
{
	struct cp_ingest_batch b = { 0 };
	size_t len;
	uint8_t *buf = pack(2, 7, NULL, &len);

	ck_assert_int_eq(cp_otlp_decode(buf, len, &b), -EINVAL);
	ck_assert_msg(strstr(cp_errmsg(EINVAL), "stack 7 is not in the stack table"), "%s", cp_errmsg(EINVAL));
	ck_assert_uint_eq(b.n, 0);
	cp_ingest_batch_release(&b);
	free(buf);
	buf = pack(2, -1, NULL, &len);
	ck_assert_int_eq(cp_otlp_decode(buf, len, &b), -EINVAL);
	cp_ingest_batch_release(&b);
	free(buf);
}
END_TEST

START_TEST(test_limits)
{
	struct cp_decode_limits lim = { 0 };
	struct cp_ingest_batch b = { 0 };
	size_t len, i;
	uint8_t *buf = pack(5, 1, NULL, &len), deep[400];

	lim.max_samples = 4;
	cp_decode_limits_set(&lim);
	ck_assert_int_eq(cp_otlp_decode(buf, len, &b), -EFBIG);
	lim.max_samples = 0;
	cp_decode_limits_set(&lim);
	ck_assert_int_eq(cp_otlp_decode(buf, len, &b), 0);
	cp_ingest_batch_release(&b);
	free(buf);
	/* AnyValue nested in arrays without end: resource_profiles{resource{attributes{value{array{values{...}}}}}} */
	for (i = 0; i + 2 <= sizeof(deep); i += 2) {
		deep[i] = i % 4 ? 0x0a : 0x2a; /* AnyValue.array_value = 5, ArrayValue.values = 1 */
		deep[i + 1] = (uint8_t)(sizeof(deep) - i - 2 > 127 ? 127 : sizeof(deep) - i - 2);
	}
	ck_assert_int_eq(cp_otlp_decode(deep, sizeof(deep), &b), -EINVAL);
	/* truncated and empty */
	ck_assert_int_eq(cp_otlp_decode((const uint8_t *)"\x0a\x05\x01", 3, &b), -EINVAL);
	ck_assert_int_eq(cp_otlp_decode((const uint8_t *)"", 0, &b), 0);
	ck_assert_uint_eq(b.n, 0);
	cp_ingest_batch_release(&b);
}
END_TEST

/* a Go-like CPU profile (samples/count and cpu/nanoseconds, period cpu 10 ms)
 * with labels, a mapping with a build id, pushed as OTLP and decoded back */
static const char *sample_label(const struct cp_profile *p, uint32_t s, const char *name)
{
	const struct cp_span *ls = &p->labelsets[p->samples[s].labels];
	static char num[32];

	for (uint32_t i = 0; i < ls->len; i++) {
		const struct cp_label *l = &p->labels[ls->off + i];

		if (strcmp(cp_profile_string(p, l->key), name))
			continue;
		if (l->str)
			return cp_profile_string(p, l->str);
		snprintf(num, sizeof(num), "%lld", (long long)l->num);
		return num;
	}
	return NULL;
}

START_TEST(test_encode_round_trip)
{
	struct cp_profile *p = cp_profile_new();
	struct cp_function f = { 0 };
	struct cp_mapping m = { 0 };
	struct cp_line ln = { 0 };
	struct cp_label lab[3] = { { 0 } };
	struct cp_ingest_batch b = { 0 };
	static const struct cp_kv series[] = { { "service_name", "svc" }, { "node", "h1" }, { "region", "eu" } };
	struct cp_store_append a = { 0 };
	uint32_t locs[2], st[2], ls[2];
	int64_t v[2];
	uint8_t *body = NULL, *raw = NULL;
	size_t len = 0, rlen = 0;
	int found = 0;

	ck_assert_ptr_nonnull(p);
	ck_assert_int_eq(cp_profile_add_sample_type(p, "samples", "count"), 0);
	ck_assert_int_eq(cp_profile_add_sample_type(p, "cpu", "nanoseconds"), 0);
	ck_assert_int_eq(cp_profile_set_period_type(p, "cpu", "nanoseconds", 10000000), 0);
	p->time_nanos = 1700000000000000000LL;
	p->duration_nanos = 10000000000LL;
	m.start = 0x400000;
	m.limit = 0x800000;
	m.filename = (uint32_t)cp_profile_str(p, "/bin/app");
	m.build_id = (uint32_t)cp_profile_str(p, "abcdef");
	ck_assert_int_eq(cp_profile_mapping(p, &m), 1);
	for (int i = 0; i < 2; i++) {
		f.name = (uint32_t)cp_profile_str(p, i ? "main" : "work");
		f.filename = (uint32_t)cp_profile_str(p, "app.c");
		ln.function = (uint32_t)cp_profile_function(p, &f);
		ln.line = 10 + i;
		locs[i] = (uint32_t)cp_profile_location(p, 1, 0x401000 + 0x10 * (uint64_t)i, &ln, 1, false);
	}
	st[0] = (uint32_t)cp_profile_stack(p, locs, 2); /* work <- main */
	st[1] = (uint32_t)cp_profile_stack(p, locs + 1, 1);
	lab[0] = (struct cp_label){ (uint32_t)cp_profile_str(p, "pid"), 0, 42, 0 };
	lab[1] = (struct cp_label){ (uint32_t)cp_profile_str(p, "thread_name"), (uint32_t)cp_profile_str(p, "worker"), 0, 0 };
	lab[2] = (struct cp_label){ (uint32_t)cp_profile_str(p, "span"), (uint32_t)cp_profile_str(p, "s1"), 0, 0 };
	ls[0] = (uint32_t)cp_profile_labelset(p, lab, 3);
	ls[1] = (uint32_t)cp_profile_labelset(p, lab + 2, 1);
	v[0] = 3, v[1] = 30000000;
	ck_assert_int_eq(cp_profile_add_sample(p, st[0], ls[0], v), 0);
	v[0] = 2, v[1] = 20000000;
	ck_assert_int_eq(cp_profile_add_sample(p, st[1], ls[1], v), 0);
	v[0] = 0, v[1] = 5; /* no count: left out of samples/count */
	ck_assert_int_eq(cp_profile_add_sample(p, st[1], ls[0], v), 0);

	a.profile = p;
	a.labels = series;
	a.nlabels = 3;
	ck_assert_int_eq(cp_otlp_encode(&(struct cp_push_opts){ 0 }, &a, p, &body, &len), 0);
	ck_assert(cp_is_gzip(body, len));
	ck_assert_int_eq(cp_gunzip(body, len, 1 << 26, &raw, &rlen), 0);
	ck_assert_int_eq(cp_otlp_decode(raw, rlen, &b), 0);
	ck_assert_uint_eq(b.n, 2); /* one per sample type */
	for (size_t i = 0; i < b.n; i++) {
		const struct cp_profile *q = b.a[i].profile;
		const char *t = cp_profile_string(q, q->sample_types[0].type);
		bool cpu = !strcmp(t, "cpu");

		found |= cpu ? 1 : 2;
		ck_assert_str_eq(cp_profile_string(q, q->sample_types[0].unit), cpu ? "nanoseconds" : "count");
		ck_assert_str_eq(cp_profile_string(q, q->period_type.type), "cpu");
		ck_assert_int_eq(q->period, cpu ? 10000000 : 0); /* not read as the eBPF profiler's counts */
		ck_assert_int_eq(cp_profile_total(q, 0), cp_profile_total(p, cpu ? 1 : 0));
		ck_assert_uint_eq(q->nsamples, cpu ? 3 : 2);
		ck_assert_int_eq(b.a[i].time_ns, 1700000000000000000LL);
		ck_assert_int_eq(q->duration_nanos, 10000000000LL);
		ck_assert_str_eq(label(&b.a[i], "service_name"), "svc");
		ck_assert_str_eq(label(&b.a[i], "node"), "h1");
		ck_assert_str_eq(label(&b.a[i], "region"), "eu");
		for (uint32_t s = 0; s < q->nsamples; s++) {
			const struct cp_span *sk = &q->stacks[q->samples[s].stack];
			const struct cp_location *l = cp_profile_loc(q, q->stack_locs[sk->off]);
			const char *sp = sample_label(q, s, "span");

			ck_assert_str_eq(sp, "s1");
			if (sk->len == 2) { /* the first sample: its leaf, its labels, its mapping */
				ck_assert_str_eq(cp_profile_string(q, q->functions[q->lines[l->line_off].function - 1].name),
						 "work");
				ck_assert_int_eq(q->lines[l->line_off].line, 10);
				ck_assert_uint_eq(l->address, 0x401000);
				ck_assert_str_eq(cp_profile_string(q, q->mappings[l->mapping - 1].build_id), "abcdef");
				ck_assert_str_eq(cp_profile_string(q, q->mappings[l->mapping - 1].filename), "/bin/app");
				ck_assert_str_eq(sample_label(q, s, "pid"), "42");
				ck_assert_str_eq(sample_label(q, s, "thread_name"), "worker");
			}
		}
	}
	ck_assert_int_eq(found, 3);
	cp_ingest_batch_release(&b);
	free(raw);
	free(body);
	cp_profile_free(p);
}
END_TEST

static Suite *otlp_suite(void)
{
	Suite *s = suite_create("otlp");
	TCase *tc = tcase_create("decode");

	tcase_add_test(tc, test_cpu);
	tcase_add_test(tc, test_other_type);
	tcase_add_test(tc, test_bad_index);
	tcase_add_test(tc, test_limits);
	tcase_add_test(tc, test_encode_round_trip);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(otlp_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

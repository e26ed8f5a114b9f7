/* SPDX-License-Identifier: MIT */
/* pprof decode/encode (lib/pprof.c) and format sniffing and loading
 * (lib/load.c): round trips, hand-made protobuf bytes, malformed input,
 * gzip limits and the real fixtures. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "decode_limits.h"
#include "error.h"
#include "folded.h"
#include "load.h"
#include "pprof.h"
#include "profile.h"
#include "profile.pb-c.h"
#include "util.h"
#include "testutil.h"

/* ---- a tiny protobuf writer ---- */

struct pbw {
	uint8_t d[8192];
	size_t n;
};

static void w_raw(struct pbw *w, const void *p, size_t n)
{
	ck_assert_uint_le(w->n + n, sizeof(w->d));
	memcpy(w->d + w->n, p, n);
	w->n += n;
}

static void w_varint(struct pbw *w, uint64_t v)
{
	uint8_t b;

	do {
		b = v & 0x7f;
		v >>= 7;
		if (v)
			b |= 0x80;
		w_raw(w, &b, 1);
	} while (v);
}

static void w_key(struct pbw *w, unsigned field, unsigned wt)
{
	w_varint(w, (uint64_t)field << 3 | wt);
}

static void w_uint(struct pbw *w, unsigned field, uint64_t v)
{
	w_key(w, field, 0);
	w_varint(w, v);
}

static void w_int(struct pbw *w, unsigned field, int64_t v)
{
	w_uint(w, field, (uint64_t)v); /* int64: two's complement, 10 bytes if negative */
}

static void w_bytes(struct pbw *w, unsigned field, const void *p, size_t n)
{
	w_key(w, field, 2);
	w_varint(w, n);
	w_raw(w, p, n);
}

static void w_str(struct pbw *w, unsigned field, const char *s)
{
	w_bytes(w, field, s, strlen(s));
}

static void w_msg(struct pbw *w, unsigned field, const struct pbw *sub)
{
	w_bytes(w, field, sub->d, sub->n);
}

/* A repeated varint field, packed (one length-delimited run) or not. */
static void w_repeated(struct pbw *w, unsigned field, const uint64_t *v, size_t n, bool packed)
{
	size_t i;

	if (packed) {
		struct pbw run = { .n = 0 };

		for (i = 0; i < n; i++)
			w_varint(&run, v[i]);
		w_msg(w, field, &run);
	} else {
		for (i = 0; i < n; i++)
			w_uint(w, field, v[i]);
	}
}

/* Profile fields (profile.proto) */
enum { P_SAMPLE_TYPE = 1, P_SAMPLE, P_MAPPING, P_LOCATION, P_FUNCTION, P_STRING, P_DROP, P_KEEP, P_TIME,
       P_DURATION, P_PERIOD_TYPE, P_PERIOD, P_COMMENT, P_DEFAULT_TYPE, P_DOC_URL };

static void w_strings(struct pbw *w, const char *const *s)
{
	for (; *s; s++)
		w_str(w, P_STRING, *s);
}

static void w_valuetype(struct pbw *w, unsigned field, int64_t type, int64_t unit)
{
	struct pbw m = { .n = 0 };

	w_int(&m, 1, type);
	w_int(&m, 2, unit);
	w_msg(w, field, &m);
}

static void w_function(struct pbw *w, uint64_t id, int64_t name)
{
	struct pbw m = { .n = 0 };

	w_uint(&m, 1, id);
	w_int(&m, 2, name);
	w_int(&m, 3, name);
	w_msg(w, P_FUNCTION, &m);
}

static void w_mapping(struct pbw *w, uint64_t id, uint64_t start, uint64_t limit, int64_t file)
{
	struct pbw m = { .n = 0 };

	w_uint(&m, 1, id);
	w_uint(&m, 2, start);
	w_uint(&m, 3, limit);
	w_int(&m, 5, file);
	w_msg(w, P_MAPPING, &m);
}

/* A location with one line calling function fn (0: no line). */
static void w_location(struct pbw *w, uint64_t id, uint64_t mapping, uint64_t addr, uint64_t fn)
{
	struct pbw m = { .n = 0 }, line = { .n = 0 };

	w_uint(&m, 1, id);
	if (mapping)
		w_uint(&m, 2, mapping);
	if (addr)
		w_uint(&m, 3, addr);
	if (fn) {
		w_uint(&line, 1, fn);
		w_int(&line, 2, 42);
		w_msg(&m, 4, &line);
	}
	w_msg(w, P_LOCATION, &m);
}

static void w_sample(struct pbw *w, const uint64_t *locs, size_t nl, const int64_t *vals, size_t nv, bool packed)
{
	struct pbw m = { .n = 0 };
	uint64_t v[8];
	size_t i;

	ck_assert_uint_le(nv, 8);
	for (i = 0; i < nv; i++)
		v[i] = (uint64_t)vals[i];
	w_repeated(&m, 1, locs, nl, packed);
	w_repeated(&m, 2, v, nv, packed);
	w_msg(w, P_SAMPLE, &m);
}

static const char *const base_strings[] = { "", "samples", "count", "cpu", "nanoseconds", "main", "work", NULL };

/* The common head: strings, sample types samples/count and cpu/nanoseconds,
 * period type, functions main (1) and work (2), locations 1 -> main and
 * 2 -> work. */
static void w_base(struct pbw *w)
{
	w_strings(w, base_strings);
	w_valuetype(w, P_SAMPLE_TYPE, 1, 2);
	w_valuetype(w, P_SAMPLE_TYPE, 3, 4);
	w_valuetype(w, P_PERIOD_TYPE, 3, 4);
	w_int(w, P_PERIOD, 10000000);
	w_function(w, 1, 5);
	w_function(w, 2, 6);
	w_location(w, 1, 0, 0, 1);
	w_location(w, 2, 0, 0, 2);
}

/* A complete small profile: base plus main;work {1,10} twice and main {3,30}. */
static void w_small(struct pbw *w, bool packed)
{
	static const uint64_t mw[2] = { 2, 1 }, m[1] = { 1 };
	static const int64_t v1[2] = { 1, 10 }, v2[2] = { 2, 20 }, v3[2] = { 3, 30 };

	w_base(w);
	w_sample(w, mw, 2, v1, 2, packed);
	w_sample(w, m, 1, v3, 2, packed);
	w_sample(w, mw, 2, v2, 2, packed);
}

static struct cp_profile *decode_ok(const void *data, size_t len)
{
	struct cp_profile *p;

	cp_error_clear();
	p = cp_pprof_decode(data, len);
	ck_assert_msg(p != NULL, "decode failed: %s", cp_errmsg(errno));
	return p;
}

/* Decoding must fail with EINVAL and a message containing `what`. */
static void decode_fails(const void *data, size_t len, const char *what)
{
	struct cp_profile *p;

	cp_error_clear();
	errno = 0;
	p = cp_pprof_decode(data, len);
	ck_assert_msg(p == NULL, "decoding succeeded, expected an error about '%s'", what);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_contains(cp_errmsg(EINVAL), what);
}

/* ---- comparing profiles by content (string ids may differ) ---- */

#define S(p, id) cp_profile_string((p), (id))

static void assert_same(const struct cp_profile *a, const struct cp_profile *b)
{
	uint32_t i, j;

	ck_assert_uint_eq(a->ntypes, b->ntypes);
	for (i = 0; i < a->ntypes; i++) {
		ck_assert_str_eq(S(a, a->sample_types[i].type), S(b, b->sample_types[i].type));
		ck_assert_str_eq(S(a, a->sample_types[i].unit), S(b, b->sample_types[i].unit));
	}
	ck_assert_str_eq(S(a, a->period_type.type), S(b, b->period_type.type));
	ck_assert_str_eq(S(a, a->period_type.unit), S(b, b->period_type.unit));
	ck_assert_int_eq(a->period, b->period);
	ck_assert_int_eq(a->time_nanos, b->time_nanos);
	ck_assert_int_eq(a->duration_nanos, b->duration_nanos);
	ck_assert_str_eq(S(a, a->default_sample_type), S(b, b->default_sample_type));
	ck_assert_str_eq(S(a, a->drop_frames), S(b, b->drop_frames));
	ck_assert_str_eq(S(a, a->keep_frames), S(b, b->keep_frames));
	ck_assert_str_eq(S(a, a->doc_url), S(b, b->doc_url));
	ck_assert_uint_eq(a->ncomments, b->ncomments);
	for (i = 0; i < a->ncomments; i++)
		ck_assert_str_eq(S(a, a->comments[i]), S(b, b->comments[i]));

	ck_assert_uint_eq(a->nmappings, b->nmappings);
	for (i = 0; i < a->nmappings; i++) {
		const struct cp_mapping *x = &a->mappings[i], *y = &b->mappings[i];

		ck_assert_uint_eq(x->start, y->start);
		ck_assert_uint_eq(x->limit, y->limit);
		ck_assert_uint_eq(x->offset, y->offset);
		ck_assert_str_eq(S(a, x->filename), S(b, y->filename));
		ck_assert_str_eq(S(a, x->build_id), S(b, y->build_id));
		ck_assert_int_eq(x->has_functions, y->has_functions);
		ck_assert_int_eq(x->has_filenames, y->has_filenames);
		ck_assert_int_eq(x->has_line_numbers, y->has_line_numbers);
		ck_assert_int_eq(x->has_inline_frames, y->has_inline_frames);
	}
	ck_assert_uint_eq(a->nfunctions, b->nfunctions);
	for (i = 0; i < a->nfunctions; i++) {
		const struct cp_function *x = &a->functions[i], *y = &b->functions[i];

		ck_assert_str_eq(S(a, x->name), S(b, y->name));
		ck_assert_str_eq(S(a, x->system_name), S(b, y->system_name));
		ck_assert_str_eq(S(a, x->filename), S(b, y->filename));
		ck_assert_int_eq(x->start_line, y->start_line);
	}
	ck_assert_uint_eq(a->nlocations, b->nlocations);
	for (i = 1; i <= a->nlocations; i++) {
		const struct cp_location *x = cp_profile_loc(a, i), *y = cp_profile_loc(b, i);

		ck_assert_uint_eq(x->mapping, y->mapping);
		ck_assert_uint_eq(x->address, y->address);
		ck_assert_int_eq(x->is_folded, y->is_folded);
		ck_assert_uint_eq(x->nlines, y->nlines);
		for (j = 0; j < x->nlines; j++) {
			const struct cp_line *lx = &a->lines[x->line_off + j], *ly = &b->lines[y->line_off + j];

			ck_assert_uint_eq(lx->function, ly->function);
			ck_assert_int_eq(lx->line, ly->line);
			ck_assert_int_eq(lx->column, ly->column);
		}
	}
	ck_assert_uint_eq(a->nsamples, b->nsamples);
	for (i = 0; i < a->nsamples; i++) {
		const struct cp_span *sx = &a->stacks[a->samples[i].stack], *sy = &b->stacks[b->samples[i].stack];
		const struct cp_span *lx = &a->labelsets[a->samples[i].labels], *ly = &b->labelsets[b->samples[i].labels];

		ck_assert_uint_eq(sx->len, sy->len);
		for (j = 0; j < sx->len; j++)
			ck_assert_uint_eq(a->stack_locs[sx->off + j], b->stack_locs[sy->off + j]);
		for (j = 0; j < a->ntypes; j++)
			ck_assert_int_eq(cp_profile_values(a, i)[j], cp_profile_values(b, i)[j]);
		ck_assert_uint_eq(lx->len, ly->len);
		/* label sets are sorted by string id, which may differ: match by key */
		for (j = 0; j < lx->len; j++) {
			const struct cp_label *l = &a->labels[lx->off + j];
			uint32_t k;
			bool found = false;

			for (k = 0; k < ly->len && !found; k++) {
				const struct cp_label *m = &b->labels[ly->off + k];

				found = !strcmp(S(a, l->key), S(b, m->key)) && !strcmp(S(a, l->str), S(b, m->str)) &&
					l->num == m->num && !strcmp(S(a, l->num_unit), S(b, m->num_unit));
			}
			ck_assert_msg(found, "label %s missing after the round trip", S(a, l->key));
		}
	}
}

/* A profile with a bit of everything pprof has. */
static struct cp_profile *rich_profile(void)
{
	struct cp_profile *p = cp_profile_new();
	struct cp_mapping m1 = { 0x400000, 0x500000, 0, 0, 0, true, true, true, false };
	struct cp_mapping m2 = { 0x7f0000000000, 0x7f0000200000, 0x1000, 0, 0, false, false, false, true };
	struct cp_function fmain = { 0, 0, 0, 10 }, finner = { 0, 0, 0, 3 }, fouter = { 0, 0, 0, 25 };
	struct cp_line l1[2] = { { 0, 5, 2 }, { 0, 30, 0 } }, l2 = { 0, 12, 0 };
	struct cp_label thread, bytes, retries;
	uint32_t mid1, mid2, loc1, loc2, loc3, stack[2];
	int64_t v[2];

#define STR(s) ((uint32_t)cp_profile_str(p, (s)))
	ck_assert_int_eq(cp_profile_add_sample_type(p, "samples", "count"), 0);
	ck_assert_int_eq(cp_profile_add_sample_type(p, "cpu", "nanoseconds"), 0);
	ck_assert_int_eq(cp_profile_set_period_type(p, "cpu", "nanoseconds", 10000000), 0);
	p->time_nanos = 1700000000123456789LL;
	p->duration_nanos = 2000000000;
	p->default_sample_type = STR("cpu");
	p->drop_frames = STR("runtime\\..*");
	p->keep_frames = STR("main");
	p->doc_url = STR("https://example.org/profile-doc");
	p->comments = calloc(2, sizeof(*p->comments));
	ck_assert_ptr_nonnull(p->comments);
	p->comments[0] = STR("first comment");
	p->comments[1] = STR("second: with unicode \xc3\xa9");
	p->ncomments = 2;
	m1.filename = STR("/usr/bin/app");
	m1.build_id = STR("b1d0f00d");
	m2.filename = STR("/lib/x86_64-linux-gnu/libc.so.6");
	mid1 = (uint32_t)cp_profile_mapping(p, &m1);
	mid2 = (uint32_t)cp_profile_mapping(p, &m2);
	fmain.name = fmain.system_name = STR("main");
	fmain.filename = STR("main.c");
	finner.name = STR("inner");
	finner.system_name = STR("_Z5innerv");
	finner.filename = STR("inner.h");
	fouter.name = fouter.system_name = STR("outer");
	fouter.filename = STR("outer.c");
	l2.function = (uint32_t)cp_profile_function(p, &fmain);
	l1[0].function = (uint32_t)cp_profile_function(p, &finner);
	l1[1].function = (uint32_t)cp_profile_function(p, &fouter);
	loc1 = (uint32_t)cp_profile_location(p, mid1, 0x401000, l1, 2, false);
	loc2 = (uint32_t)cp_profile_location(p, mid1, 0x402000, &l2, 1, false);
	loc3 = (uint32_t)cp_profile_location(p, mid2, 0x7f0000001234, NULL, 0, true);
	thread = (struct cp_label){ STR("thread"), STR("worker"), 0, 0 };
	bytes = (struct cp_label){ STR("bytes"), 0, 4096, STR("bytes") };
	retries = (struct cp_label){ STR("retries"), 0, -3, 0 };
#undef STR
	{
		struct cp_label two[2] = { thread, bytes };

		stack[0] = loc1;
		stack[1] = loc2;
		v[0] = 1;
		v[1] = 10000000;
		ck_assert_int_eq(cp_profile_add_sample(p, (uint32_t)cp_profile_stack(p, stack, 2),
						       (uint32_t)cp_profile_labelset(p, two, 2), v), 0);
	}
	stack[0] = loc3;
	v[0] = 2;
	v[1] = 20000000;
	ck_assert_int_eq(cp_profile_add_sample(p, (uint32_t)cp_profile_stack(p, stack, 2), 0, v), 0);
	v[0] = 3;
	v[1] = 30000000;
	ck_assert_int_eq(cp_profile_add_sample(p, (uint32_t)cp_profile_stack(p, &loc2, 1),
					       (uint32_t)cp_profile_labelset(p, &retries, 1), v), 0);
	/* a function no sample uses is kept too */
	fmain.name = fmain.system_name = (uint32_t)cp_profile_str(p, "unused");
	ck_assert_int_eq(cp_profile_function(p, &fmain), 4);
	return p;
}

static char fixture_path[PATH_MAX];

static const char *fixture(const char *name)
{
	const char *srcdir = getenv("srcdir");

	ck_assert_int_lt(snprintf(fixture_path, sizeof(fixture_path), "%s/tests/fixtures/%s",
				  srcdir && *srcdir ? srcdir : ".", name),
			 (int)sizeof(fixture_path));
	return fixture_path;
}

static void read_fixture(const char *name, uint8_t **data, size_t *len)
{
	int err = cp_read_file(fixture(name), CP_PPROF_MAX_SIZE, data, len);

	ck_assert_msg(err == 0, "cannot read %s: %s", fixture_path, cp_errmsg(err));
}

/* ---- round trips ---- */

static void round_trip(int gzip)
{
	struct cp_profile *p = rich_profile(), *q;
	uint8_t *out = NULL;
	size_t len = 0;

	ck_assert_int_eq(cp_pprof_encode(p, gzip, &out, &len), 0);
	ck_assert_uint_gt(len, 0);
	ck_assert_int_eq(cp_is_gzip(out, len), gzip);
	q = decode_ok(out, len);
	assert_same(p, q);
	/* spot checks, in case both sides were wrong the same way */
	ck_assert_str_eq(S(q, q->mappings[1].filename), "/lib/x86_64-linux-gnu/libc.so.6");
	ck_assert(q->mappings[1].has_inline_frames);
	ck_assert(!q->mappings[1].has_functions);
	ck_assert(q->mappings[0].has_line_numbers);
	ck_assert_str_eq(S(q, q->mappings[0].build_id), "b1d0f00d");
	ck_assert_uint_eq(cp_profile_loc(q, 1)->nlines, 2);
	ck_assert_str_eq(S(q, q->functions[q->lines[cp_profile_loc(q, 1)->line_off].function - 1].system_name),
			 "_Z5innerv");
	ck_assert(cp_profile_loc(q, 3)->is_folded);
	ck_assert_int_eq(cp_profile_sample_index(q, NULL), 1);
	ck_assert_int_eq(cp_profile_total(q, 1), 60000000);
	ck_assert_int_eq(q->time_nanos, 1700000000123456789LL);
	ck_assert_str_eq(S(q, q->comments[1]), "second: with unicode \xc3\xa9");
	free(out);
	cp_profile_free(q);
	cp_profile_free(p);
}

START_TEST(test_round_trip_gzip)
{
	round_trip(1);
}
END_TEST

START_TEST(test_round_trip_raw)
{
	round_trip(0);
}
END_TEST

START_TEST(test_encode_ids)
{
	struct cp_profile *p = rich_profile();
	Perftools__Profiles__Profile *pb;
	uint8_t *out = NULL;
	size_t len = 0, i;

	ck_assert_int_eq(cp_pprof_encode(p, 0, &out, &len), 0);
	pb = perftools__profiles__profile__unpack(NULL, len, out);
	ck_assert_ptr_nonnull(pb);
	ck_assert_uint_eq(pb->n_string_table, p->strs.n);
	ck_assert_str_eq(pb->string_table[0], "");
	ck_assert_uint_eq(pb->n_mapping, 2);
	for (i = 0; i < pb->n_mapping; i++)
		ck_assert_uint_eq(pb->mapping[i]->id, i + 1);
	ck_assert_uint_eq(pb->n_function, 4);
	for (i = 0; i < pb->n_function; i++)
		ck_assert_uint_eq(pb->function[i]->id, i + 1);
	ck_assert_uint_eq(pb->n_location, 3);
	for (i = 0; i < pb->n_location; i++) {
		ck_assert_uint_eq(pb->location[i]->id, i + 1);
		ck_assert_uint_ge(pb->location[i]->mapping_id, 1);
		ck_assert_uint_le(pb->location[i]->mapping_id, 2);
	}
	ck_assert_uint_eq(pb->location[0]->n_line, 2);
	ck_assert_uint_eq(pb->location[0]->line[0]->function_id, 2); /* inner, the callee first */
	ck_assert_uint_eq(pb->location[0]->line[1]->function_id, 3);
	ck_assert_uint_eq(pb->n_sample, 3);
	ck_assert_uint_eq(pb->sample[0]->n_location_id, 2);
	ck_assert_uint_eq(pb->sample[0]->location_id[0], 1);
	ck_assert_uint_eq(pb->sample[0]->n_label, 2);
	/* numeric labels carry their unit; string labels carry no number */
	for (i = 0; i < pb->sample[0]->n_label; i++) {
		const Perftools__Profiles__Label *l = pb->sample[0]->label[i];

		if (!strcmp(pb->string_table[l->key], "bytes")) {
			ck_assert_int_eq(l->num, 4096);
			ck_assert_str_eq(pb->string_table[l->num_unit], "bytes");
			ck_assert_int_eq(l->str, 0);
		} else {
			ck_assert_str_eq(pb->string_table[l->key], "thread");
			ck_assert_str_eq(pb->string_table[l->str], "worker");
			ck_assert_int_eq(l->num, 0);
		}
	}
	ck_assert_int_eq(pb->sample[2]->label[0]->num, -3);
	ck_assert_str_eq(pb->string_table[pb->default_sample_type], "cpu");
	ck_assert_str_eq(pb->string_table[pb->period_type->unit], "nanoseconds");
	ck_assert_int_eq(pb->period, 10000000);
	ck_assert_uint_eq(pb->n_comment, 2);
	perftools__profiles__profile__free_unpacked(pb, NULL);
	free(out);
	cp_profile_free(p);
}
END_TEST

START_TEST(test_encode_empty)
{
	/* a profile with sample types and no samples encodes and decodes */
	struct cp_profile *p = cp_profile_new(), *q;
	uint8_t *out = NULL;
	size_t len = 0;

	ck_assert_int_eq(cp_profile_add_sample_type(p, "samples", "count"), 0);
	ck_assert_int_eq(cp_pprof_encode(p, 1, &out, &len), 0);
	q = decode_ok(out, len);
	ck_assert_uint_eq(q->nsamples, 0);
	ck_assert_uint_eq(q->ntypes, 1);
	free(out);
	cp_profile_free(q);
	cp_profile_free(p);
}
END_TEST

/* ---- hand-made bytes ---- */

static void check_small(const struct cp_profile *p)
{
	struct cp_frame *frames = NULL;
	size_t cap = 0;
	uint32_t i;
	bool seen_mw = false, seen_m = false;

	ck_assert_uint_eq(p->ntypes, 2);
	ck_assert_str_eq(S(p, p->sample_types[1].type), "cpu");
	ck_assert_int_eq(p->period, 10000000);
	ck_assert_uint_eq(p->nsamples, 2);
	ck_assert_int_eq(cp_profile_total(p, 0), 6);
	ck_assert_int_eq(cp_profile_total(p, 1), 60);
	for (i = 0; i < p->nsamples; i++) {
		int n = cp_profile_frames(p, p->samples[i].stack, &frames, &cap);

		if (n == 2) {
			ck_assert_str_eq(S(p, frames[0].name), "work"); /* the leaf */
			ck_assert_str_eq(S(p, frames[1].name), "main");
			ck_assert_int_eq(frames[0].line, 42);
			ck_assert_int_eq(cp_profile_values(p, i)[1], 30);
			seen_mw = true;
		} else {
			ck_assert_int_eq(n, 1);
			ck_assert_str_eq(S(p, frames[0].name), "main");
			ck_assert_int_eq(cp_profile_values(p, i)[0], 3);
			seen_m = true;
		}
	}
	ck_assert(seen_mw && seen_m);
	free(frames);
}

START_TEST(test_decode_packed_unpacked)
{
	struct pbw packed = { .n = 0 }, unpacked = { .n = 0 };
	struct cp_profile *a, *b;

	w_small(&packed, true);
	w_small(&unpacked, false);
	/* really two encodings */
	ck_assert_uint_ne(packed.n, unpacked.n);
	a = decode_ok(packed.d, packed.n);
	b = decode_ok(unpacked.d, unpacked.n);
	check_small(a);
	check_small(b);
	assert_same(a, b);
	cp_profile_free(a);
	cp_profile_free(b);
}
END_TEST

START_TEST(test_decode_mixed_packing)
{
	/* location ids packed, values unpacked, in one sample */
	struct pbw w = { .n = 0 }, s = { .n = 0 };
	static const uint64_t locs[2] = { 2, 1 }, vals[2] = { 4, 40 };
	struct cp_profile *p;

	w_base(&w);
	w_repeated(&s, 1, locs, 2, true);
	w_repeated(&s, 2, vals, 2, false);
	w_msg(&w, P_SAMPLE, &s);
	p = decode_ok(w.d, w.n);
	ck_assert_uint_eq(p->nsamples, 1);
	ck_assert_int_eq(cp_profile_values(p, 0)[0], 4);
	ck_assert_int_eq(cp_profile_values(p, 0)[1], 40);
	ck_assert_uint_eq(p->stacks[p->samples[0].stack].len, 2);
	cp_profile_free(p);
}
END_TEST

START_TEST(test_decode_sparse_ids)
{
	/* ids neither dense nor in order: functions 7 and 3, mapping 5,
	 * locations 20 and 10 */
	struct pbw w = { .n = 0 };
	static const uint64_t locs[2] = { 20, 10 };
	static const int64_t vals[2] = { 5, 50 };
	struct cp_profile *p;
	struct cp_frame *frames = NULL;
	Perftools__Profiles__Profile *pb;
	uint8_t *out = NULL;
	size_t cap = 0, len = 0, i;
	int n;

	w_strings(&w, base_strings);
	w_valuetype(&w, P_SAMPLE_TYPE, 1, 2);
	w_valuetype(&w, P_SAMPLE_TYPE, 3, 4);
	w_function(&w, 7, 5);                   /* main */
	w_function(&w, 3, 6);                   /* work */
	w_mapping(&w, 5, 0x1000, 0x2000, 6);
	w_location(&w, 20, 5, 0x1010, 3);       /* work, in mapping 5 */
	w_location(&w, 10, 0, 0, 7);            /* main */
	w_sample(&w, locs, 2, vals, 2, true);
	p = decode_ok(w.d, w.n);
	ck_assert_uint_eq(p->nsamples, 1);
	n = cp_profile_frames(p, p->samples[0].stack, &frames, &cap);
	ck_assert_int_eq(n, 2);
	ck_assert_str_eq(S(p, frames[0].name), "work");
	ck_assert_str_eq(S(p, frames[1].name), "main");
	ck_assert_uint_eq(cp_profile_loc(p, frames[0].location)->mapping, 1);
	ck_assert_uint_eq(cp_profile_loc(p, frames[0].location)->address, 0x1010);
	ck_assert_int_eq(cp_profile_values(p, 0)[1], 50);
	free(frames);

	/* written back with ids 1..N */
	ck_assert_int_eq(cp_pprof_encode(p, 0, &out, &len), 0);
	pb = perftools__profiles__profile__unpack(NULL, len, out);
	ck_assert_ptr_nonnull(pb);
	for (i = 0; i < pb->n_function; i++)
		ck_assert_uint_eq(pb->function[i]->id, i + 1);
	for (i = 0; i < pb->n_location; i++)
		ck_assert_uint_eq(pb->location[i]->id, i + 1);
	ck_assert_uint_eq(pb->n_mapping, 1);
	ck_assert_uint_eq(pb->mapping[0]->id, 1);
	ck_assert_uint_eq(pb->location[0]->mapping_id, 1);
	perftools__profiles__profile__free_unpacked(pb, NULL);
	free(out);
	cp_profile_free(p);
}
END_TEST

START_TEST(test_decode_labels)
{
	/* labels: string, numeric with unit, numeric without, and one with
	 * neither (dropped, as pprof does) */
	static const char *const strs[] = { "", "samples", "count", "thread", "main", "bytes", "depth", "nothing", NULL };
	struct pbw w = { .n = 0 }, s = { .n = 0 }, l = { .n = 0 };
	static const uint64_t vals[1] = { 1 };
	struct cp_profile *p;
	const struct cp_span *ls;
	uint32_t i, found = 0;

	w_strings(&w, strs);
	w_valuetype(&w, P_SAMPLE_TYPE, 1, 2);
	w_repeated(&s, 2, vals, 1, true);
	w_int(&l, 1, 3);
	w_int(&l, 2, 4);
	w_msg(&s, 3, &l);
	l.n = 0;
	w_int(&l, 1, 5);
	w_int(&l, 3, 512);
	w_int(&l, 4, 5);
	w_msg(&s, 3, &l);
	l.n = 0;
	w_int(&l, 1, 6);
	w_int(&l, 3, -7);
	w_msg(&s, 3, &l);
	l.n = 0;
	w_int(&l, 1, 7);
	w_msg(&s, 3, &l);
	w_msg(&w, P_SAMPLE, &s);
	p = decode_ok(w.d, w.n);
	ck_assert_uint_eq(p->nsamples, 1);
	ls = &p->labelsets[p->samples[0].labels];
	ck_assert_uint_eq(ls->len, 3);
	for (i = 0; i < ls->len; i++) {
		const struct cp_label *lab = &p->labels[ls->off + i];
		const char *key = S(p, lab->key);

		if (!strcmp(key, "thread")) {
			ck_assert_str_eq(S(p, lab->str), "main");
			found |= 1;
		} else if (!strcmp(key, "bytes")) {
			ck_assert_int_eq(lab->num, 512);
			ck_assert_str_eq(S(p, lab->num_unit), "bytes");
			ck_assert_uint_eq(lab->str, 0);
			found |= 2;
		} else {
			ck_assert_str_eq(key, "depth");
			ck_assert_int_eq(lab->num, -7);
			ck_assert_uint_eq(lab->num_unit, 0);
			found |= 4;
		}
	}
	ck_assert_uint_eq(found, 7);
	cp_profile_free(p);
}
END_TEST

START_TEST(test_decode_mapping_dedup)
{
	/* two mappings of one file (same size and offset, different starts):
	 * one mapping, the second one's addresses rebased onto the first */
	static const char *const strs[] = { "", "samples", "count", "/lib/libfoo.so", NULL };
	static const uint64_t l1[1] = { 1 }, l2[1] = { 2 };
	static const int64_t v1[1] = { 3 }, v2[1] = { 4 };
	struct pbw w = { .n = 0 };
	struct cp_profile *p;

	w_strings(&w, strs);
	w_valuetype(&w, P_SAMPLE_TYPE, 1, 2);
	w_mapping(&w, 1, 0x400000, 0x402000, 3);
	w_mapping(&w, 2, 0x7f0000, 0x7f2000, 3);
	w_location(&w, 1, 1, 0x400100, 0);
	w_location(&w, 2, 2, 0x7f0100, 0);
	w_sample(&w, l1, 1, v1, 1, true);
	w_sample(&w, l2, 1, v2, 1, true);
	p = decode_ok(w.d, w.n);
	ck_assert_uint_eq(p->nmappings, 1);
	ck_assert_uint_eq(p->nlocations, 1);
	ck_assert_uint_eq(cp_profile_loc(p, 1)->address, 0x400100);
	ck_assert_uint_eq(p->nsamples, 1);
	ck_assert_int_eq(cp_profile_values(p, 0)[0], 7);
	cp_profile_free(p);
}
END_TEST

/* ---- malformed input ---- */

START_TEST(test_malformed_wire)
{
	static const uint8_t ffs[11] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
	uint8_t bad_varint[12], beyond[4] = { 0x32, 0x10, 'a', 'b' };
	struct pbw w = { .n = 0 };

	decode_fails("", 0, "empty");
	decode_fails(ffs, sizeof(ffs), "not a pprof profile");
	/* a valid key, then a varint that never ends within 10 bytes */
	bad_varint[0] = (P_TIME << 3) | 0;
	memcpy(bad_varint + 1, ffs, sizeof(ffs));
	decode_fails(bad_varint, sizeof(bad_varint), "not a pprof profile");
	/* a string whose length runs past the end */
	decode_fails(beyond, sizeof(beyond), "not a pprof profile");
	/* a valid profile cut short */
	w_small(&w, true);
	decode_fails(w.d, w.n - 3, "not a pprof profile");
	/* a group wire type (3), which proto3 has not */
	beyond[0] = (P_TIME << 3) | 3;
	decode_fails(beyond, 1, "not a pprof profile");
}
END_TEST

START_TEST(test_malformed_strings)
{
	static const char *const bad0[] = { "x", "samples", "count", NULL };
	static const char *const ok[] = { "", "samples", "count", NULL };
	struct pbw w = { .n = 0 }, s = { .n = 0 }, l = { .n = 0 };
	static const uint64_t v[1] = { 1 };

	/* string_table[0] must be "" */
	w_strings(&w, bad0);
	w_valuetype(&w, P_SAMPLE_TYPE, 1, 2);
	decode_fails(w.d, w.n, "string table");
	/* no string table at all */
	w.n = 0;
	w_int(&w, P_PERIOD, 5);
	decode_fails(w.d, w.n, "string table");

	/* a sample type index past the table */
	w.n = 0;
	w_strings(&w, ok);
	w_valuetype(&w, P_SAMPLE_TYPE, 1, 9);
	decode_fails(w.d, w.n, "string");
	ck_assert_contains(cp_errmsg(EINVAL), "9");
	/* a function name past the table */
	w.n = 0;
	w_strings(&w, ok);
	w_valuetype(&w, P_SAMPLE_TYPE, 1, 2);
	w_function(&w, 1, 99);
	decode_fails(w.d, w.n, "string 99");
	/* a negative label key */
	w.n = 0;
	w_strings(&w, ok);
	w_valuetype(&w, P_SAMPLE_TYPE, 1, 2);
	w_repeated(&s, 2, v, 1, true);
	w_int(&l, 1, -1);
	w_int(&l, 2, 1);
	w_msg(&s, 3, &l);
	w_msg(&w, P_SAMPLE, &s);
	decode_fails(w.d, w.n, "string -1");
	/* a comment past the table */
	w.n = 0;
	w_strings(&w, ok);
	w_valuetype(&w, P_SAMPLE_TYPE, 1, 2);
	w_int(&w, P_COMMENT, 3);
	decode_fails(w.d, w.n, "string");
}
END_TEST

START_TEST(test_malformed_references)
{
	static const uint64_t missing[2] = { 2, 9 }, zero[1] = { 0 };
	static const int64_t v2[2] = { 1, 1 }, v1[1] = { 1 }, v3[3] = { 1, 2, 3 };
	struct pbw w = { .n = 0 };

	/* a sample refers to a location that is not there */
	w_base(&w);
	w_sample(&w, missing, 2, v2, 2, true);
	decode_fails(w.d, w.n, "location");
	ck_assert_contains(cp_errmsg(EINVAL), "9");
	/* location id 0 in a sample */
	w.n = 0;
	w_base(&w);
	w_sample(&w, zero, 1, v2, 2, false);
	decode_fails(w.d, w.n, "location");
	/* a location refers to a missing function */
	w.n = 0;
	w_base(&w);
	w_location(&w, 3, 0, 0, 77);
	decode_fails(w.d, w.n, "function 77");
	/* a location refers to a missing mapping */
	w.n = 0;
	w_base(&w);
	w_location(&w, 3, 4, 0x1000, 1);
	decode_fails(w.d, w.n, "mapping 4");
	/* a sample with too few or too many values */
	w.n = 0;
	w_base(&w);
	w_sample(&w, missing, 1, v1, 1, true);
	decode_fails(w.d, w.n, "values");
	w.n = 0;
	w_base(&w);
	w_sample(&w, missing, 1, v3, 3, false);
	decode_fails(w.d, w.n, "3 values");
}
END_TEST

START_TEST(test_malformed_ids)
{
	struct pbw w = { .n = 0 };

	/* two functions with id 1 */
	w_base(&w);
	w_function(&w, 1, 6);
	decode_fails(w.d, w.n, "duplicate function id 1");
	/* two locations with id 2, not in order */
	w.n = 0;
	w_base(&w);
	w_location(&w, 5, 0, 0, 1);
	w_location(&w, 2, 0, 0, 1);
	decode_fails(w.d, w.n, "duplicate location id 2");
	/* two mappings with one id */
	w.n = 0;
	w_base(&w);
	w_mapping(&w, 3, 0x1000, 0x2000, 5);
	w_mapping(&w, 3, 0x3000, 0x4000, 6);
	decode_fails(w.d, w.n, "duplicate mapping id 3");
	/* id 0 */
	w.n = 0;
	w_base(&w);
	w_location(&w, 0, 0, 0, 1);
	decode_fails(w.d, w.n, "id 0");
}
END_TEST

START_TEST(test_malformed_no_types)
{
	struct pbw w = { .n = 0 };

	w_strings(&w, base_strings);
	w_function(&w, 1, 5);
	decode_fails(w.d, w.n, "no sample types");
}
END_TEST

/* ---- gzip ---- */

START_TEST(test_gzip_truncated)
{
	uint8_t *data = NULL;
	size_t len = 0;

	read_fixture("cpu-before.pb.gz", &data, &len);
	ck_assert(cp_is_gzip(data, len));
	decode_fails(data, len / 2, "truncated");
	decode_fails(data, 10, "truncated");  /* the header only */
	decode_fails(data, len - 4, "truncated"); /* without the size */
	decode_fails(data, 2, "truncated");   /* the magic only */
	free(data);
}
END_TEST

START_TEST(test_gzip_corrupt)
{
	uint8_t *data = NULL;
	size_t len = 0;

	read_fixture("cpu-before.pb.gz", &data, &len);
	data[2] = 7; /* an unknown compression method */
	decode_fails(data, len, "corrupt gzip");
	data[2] = 8;
	data[len - 6] ^= 0x55; /* the CRC */
	decode_fails(data, len, "corrupt gzip");
	data[len - 6] ^= 0x55;
	data[len - 2] ^= 0x01; /* the length */
	decode_fails(data, len, "corrupt gzip");
	data[len - 2] ^= 0x01;
	cp_profile_free(decode_ok(data, len)); /* undamaged again */
	free(data);
}
END_TEST

START_TEST(test_gzip_trailing_garbage)
{
	uint8_t *data = NULL, *more;
	size_t len = 0;

	read_fixture("cpu-before.pb.gz", &data, &len);
	more = realloc(data, len + 16);
	ck_assert_ptr_nonnull(more);
	data = more;
	memcpy(data + len, "garbage-garbage!", 16);
	decode_fails(data, len + 16, "after the end");
	decode_fails(data, len + 1, "after the end");
	free(data);
}
END_TEST

START_TEST(test_gzip_concatenated)
{
	struct pbw w = { .n = 0 };
	uint8_t *a = NULL, *b = NULL, *c = NULL, *all, *out = NULL;
	size_t la, lb, lc, cut1, cut2, outlen;
	struct cp_profile *p, *q;

	w_small(&w, true);
	cut1 = w.n / 3;
	cut2 = 2 * w.n / 3;
	ck_assert_int_eq(cp_gzip(w.d, cut1, &a, &la), 0);
	ck_assert_int_eq(cp_gzip(w.d + cut1, cut2 - cut1, &b, &lb), 0);
	ck_assert_int_eq(cp_gzip(w.d + cut2, w.n - cut2, &c, &lc), 0);
	all = malloc(la + lb + lc);
	ck_assert_ptr_nonnull(all);
	memcpy(all, a, la);
	memcpy(all + la, b, lb);
	memcpy(all + la + lb, c, lc);
	ck_assert_int_eq(cp_gunzip(all, la + lb + lc, 1 << 20, &out, &outlen), 0);
	ck_assert_uint_eq(outlen, w.n);
	ck_assert_mem_eq(out, w.d, w.n);
	free(out);
	p = decode_ok(all, la + lb + lc);
	q = decode_ok(w.d, w.n);
	check_small(p);
	assert_same(p, q);
	/* an empty member on its own is fine too */
	free(c);
	ck_assert_int_eq(cp_gzip("", 0, &out, &outlen), 0);
	ck_assert_int_eq(cp_gunzip(out, outlen, 1 << 20, &c, &lc), 0);
	ck_assert_uint_eq(lc, 0);
	free(c);
	free(out);
	free(all);
	free(a);
	free(b);
	cp_profile_free(p);
	cp_profile_free(q);
}
END_TEST

START_TEST(test_gunzip_limit)
{
	size_t n = (size_t)2 << 20, zlen = 0, outlen = 0, i;
	uint8_t *zeros = calloc(1, n), *z = NULL, *out = NULL;
	int err;

	ck_assert_ptr_nonnull(zeros);
	ck_assert_int_eq(cp_gzip(zeros, n, &z, &zlen), 0);
	ck_assert_uint_lt(zlen, n / 100); /* it compresses a lot: a small bomb */
	cp_error_clear();
	err = cp_gunzip(z, zlen, (size_t)1 << 20, &out, &outlen);
	ck_assert_int_eq(err, -EFBIG);
	ck_assert_ptr_null(out);
	ck_assert_contains(cp_errmsg(err), "1 MiB");
	/* just below, at and above the size */
	ck_assert_int_eq(cp_gunzip(z, zlen, n - 1, &out, &outlen), -EFBIG);
	ck_assert_int_eq(cp_gunzip(z, zlen, n, &out, &outlen), 0);
	ck_assert_uint_eq(outlen, n);
	for (i = 0; i < n; i++)
		if (out[i])
			break;
	ck_assert_uint_eq(i, n);
	free(out);
	out = NULL;
	ck_assert_int_eq(cp_gunzip(z, zlen, (size_t)4 << 20, &out, &outlen), 0);
	ck_assert_uint_eq(outlen, n);
	free(out);
	free(z);
	free(zeros);
}
END_TEST

START_TEST(test_gzip_round_trip)
{
	size_t n = 300000, i, zlen = 0, outlen = 0;
	uint8_t *buf = malloc(n), *z = NULL, *out = NULL;
	uint32_t x = 12345;

	ck_assert_ptr_nonnull(buf);
	for (i = 0; i < n; i++) {
		x = x * 1103515245 + 12345;
		buf[i] = (uint8_t)(x >> 16);
	}
	ck_assert_int_eq(cp_gzip(buf, n, &z, &zlen), 0);
	ck_assert(cp_is_gzip(z, zlen));
	ck_assert_int_eq(cp_gunzip(z, zlen, n, &out, &outlen), 0);
	ck_assert_uint_eq(outlen, n);
	ck_assert_mem_eq(out, buf, n);
	free(out);
	/* cp_gunzip of something that is not gzip at all */
	ck_assert_int_eq(cp_gunzip(buf, 100, n, &out, &outlen), -EINVAL);
	free(z);
	free(buf);
	ck_assert(!cp_is_gzip("\x1f", 1));
	ck_assert(!cp_is_gzip("", 0));
	ck_assert(cp_is_gzip("\x1f\x8b", 2));
}
END_TEST

/* ---- fixtures and loading ---- */

START_TEST(test_fixture_cpu)
{
	uint8_t *data = NULL, *out = NULL;
	size_t len = 0, outlen = 0;
	struct cp_profile *p, *q;
	uint32_t i;
	bool alpha = false;
	int cpu;

	read_fixture("cpu-before.pb.gz", &data, &len);
	p = decode_ok(data, len);
	ck_assert_uint_eq(p->ntypes, 2);
	ck_assert_str_eq(S(p, p->sample_types[0].type), "samples");
	ck_assert_str_eq(S(p, p->sample_types[0].unit), "count");
	ck_assert_str_eq(S(p, p->sample_types[1].type), "cpu");
	ck_assert_str_eq(S(p, p->sample_types[1].unit), "nanoseconds");
	ck_assert_str_eq(S(p, p->period_type.type), "cpu");
	ck_assert_int_gt(p->period, 0);
	ck_assert_int_gt(p->time_nanos, 0);
	for (i = 0; i < p->nfunctions; i++)
		alpha |= !strcmp(S(p, p->functions[i].name), "main.alpha");
	ck_assert(alpha);
	cpu = cp_profile_sample_index(p, "cpu");
	ck_assert_int_eq(cpu, 1);
	ck_assert_int_gt(cp_profile_total(p, cpu), 0);
	/* samples count and cpu agree: cpu = samples * period */
	ck_assert_int_eq(cp_profile_total(p, 1), cp_profile_total(p, 0) * p->period);
	ck_assert_uint_gt(p->nmappings, 0);

	/* through the encoder and back: the same profile */
	ck_assert_int_eq(cp_pprof_encode(p, 1, &out, &outlen), 0);
	q = decode_ok(out, outlen);
	assert_same(p, q);
	cp_profile_free(q);
	free(out);

	/* the same through cp_profile_decode and cp_profile_load */
	q = cp_profile_decode(data, len);
	ck_assert_ptr_nonnull(q);
	assert_same(p, q);
	cp_profile_free(q);
	q = cp_profile_load(fixture("cpu-before.pb.gz"));
	ck_assert_ptr_nonnull(q);
	assert_same(p, q);
	cp_profile_free(q);
	cp_profile_free(p);
	free(data);
}
END_TEST

START_TEST(test_fixture_heap)
{
	struct cp_profile *p = cp_profile_load(fixture("heap.pb.gz"));
	uint32_t i;
	bool big = false;

	ck_assert_msg(p != NULL, "%s", cp_errmsg(errno));
	ck_assert_uint_eq(p->ntypes, 4);
	ck_assert_int_eq(cp_profile_sample_index(p, "inuse_space"), 3);
	ck_assert_int_eq(cp_profile_sample_index(p, "alloc_objects/count"), 0);
	ck_assert_str_eq(S(p, p->sample_types[3].unit), "bytes");
	ck_assert_int_ge(cp_profile_total(p, 3), 4194304);
	for (i = 0; i < p->nfunctions; i++)
		big |= !strcmp(S(p, p->functions[i].name), "main.allocBig");
	ck_assert(big);
	cp_profile_free(p);
}
END_TEST

START_TEST(test_sniff)
{
	static const char folded[] = "main;work 12\r\nmain\t3\n";
	struct pbw w = { .n = 0 };
	uint8_t *z = NULL;
	size_t zlen = 0;
	struct cp_profile *p;

	ck_assert_int_eq(cp_sniff_format(folded, strlen(folded)), CP_FORMAT_FOLDED);
	ck_assert_int_eq(cp_sniff_format("caf\xc3\xa9;na\xc3\xafve 1\n", 15), CP_FORMAT_FOLDED);
	ck_assert_int_eq(cp_sniff_format("a\0b 1\n", 6), CP_FORMAT_PPROF);
	ck_assert_int_eq(cp_sniff_format("", 0), CP_FORMAT_PPROF);
	w_small(&w, true);
	ck_assert_int_eq(cp_sniff_format(w.d, w.n), CP_FORMAT_PPROF);

	/* cp_profile_decode picks the decoder */
	p = cp_profile_decode(folded, strlen(folded));
	ck_assert_ptr_nonnull(p);
	ck_assert_uint_eq(p->ntypes, 1);
	ck_assert_str_eq(S(p, p->sample_types[0].type), "samples");
	ck_assert_int_eq(cp_profile_total(p, 0), 15);
	cp_profile_free(p);
	p = cp_profile_decode(w.d, w.n);
	ck_assert_ptr_nonnull(p);
	check_small(p);
	cp_profile_free(p);
	/* gzipped folded text too */
	ck_assert_int_eq(cp_gzip(folded, strlen(folded), &z, &zlen), 0);
	p = cp_profile_decode(z, zlen);
	ck_assert_ptr_nonnull(p);
	ck_assert_int_eq(cp_profile_total(p, 0), 15);
	cp_profile_free(p);
	free(z);
	/* folded errors come through */
	errno = 0;
	ck_assert_ptr_null(cp_profile_decode("main;f 1\nnot a count\n", 21));
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_contains(cp_errmsg(EINVAL), "line 2");
}
END_TEST

START_TEST(test_load_errors)
{
	char path[] = "/tmp/cprof-load-XXXXXX";
	int fd;
	struct cp_profile *p;

	errno = 0;
	p = cp_profile_load("/nonexistent/dir/prof.pb.gz");
	ck_assert_ptr_null(p);
	ck_assert_int_eq(errno, ENOENT);
	ck_assert_contains(cp_errmsg(ENOENT), "/nonexistent/dir/prof.pb.gz");

	fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, "a;b 1\nbroken\n", 13), 13);
	close(fd);
	errno = 0;
	p = cp_profile_load(path);
	ck_assert_ptr_null(p);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_contains(cp_errmsg(EINVAL), path);
	ck_assert_contains(cp_errmsg(EINVAL), "line 2");

	/* a damaged pprof file: the message names the file and the reason */
	fd = open(path, O_WRONLY | O_TRUNC);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, "\x1f\x8b\x08\x00", 4), 4);
	close(fd);
	errno = 0;
	p = cp_profile_load(path);
	ck_assert_ptr_null(p);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_contains(cp_errmsg(EINVAL), path);
	ck_assert_contains(cp_errmsg(EINVAL), "truncated");
	unlink(path);
}
END_TEST

/* ---- decoding into a profile, loading many ---- */

/* A canonical text of p: header fields and the folded stacks of every
 * value index (ids and entity order left aside). */
static char *canonical(const struct cp_profile *p)
{
	char *buf = NULL;
	size_t len = 0, i;
	FILE *f = open_memstream(&buf, &len);

	ck_assert_ptr_nonnull(f);
	fprintf(f, "period=%lld time=%lld duration=%lld period_type=%s/%s default=%s\n", (long long)p->period,
		(long long)p->time_nanos, (long long)p->duration_nanos, S(p, p->period_type.type),
		S(p, p->period_type.unit), S(p, p->default_sample_type));
	for (i = 0; i < p->ncomments; i++)
		fprintf(f, "comment %s\n", S(p, p->comments[i]));
	for (i = 0; i < p->ntypes; i++) {
		fprintf(f, "== %s/%s total %lld\n", S(p, p->sample_types[i].type), S(p, p->sample_types[i].unit),
			(long long)cp_profile_total(p, (int)i));
		ck_assert_int_eq(cp_folded_write(f, p, (int)i, false), 0);
	}
	ck_assert_int_eq(fclose(f), 0);
	return buf;
}

static char *path_of(const char *name)
{
	char *s = strdup(fixture(name));

	ck_assert_ptr_nonnull(s);
	return s;
}

START_TEST(test_decode_into)
{
	uint8_t *before = NULL, *after = NULL, *heap = NULL;
	size_t lb = 0, la = 0, lh = 0;
	struct cp_profile *dst, *a, *b, *ref;
	char *x, *y;
	int err;

	read_fixture("cpu-before.pb.gz", &before, &lb);
	read_fixture("cpu-after.pb.gz", &after, &la);
	read_fixture("heap.pb.gz", &heap, &lh);
	a = decode_ok(before, lb);
	b = decode_ok(after, la);
	ref = cp_profile_copy(a, NULL);
	ck_assert_ptr_nonnull(ref);
	ck_assert_int_eq(cp_profile_merge(ref, b, NULL), 0);

	/* into an empty profile: the same as decoding */
	dst = cp_profile_new();
	ck_assert_int_eq(cp_pprof_decode_into(dst, before, lb), 0);
	x = canonical(dst);
	y = canonical(a);
	ck_assert_str_eq(x, y);
	free(x);
	free(y);
	/* a second file: the same as merging the decoded profiles */
	ck_assert_int_eq(cp_pprof_decode_into(dst, after, la), 0);
	x = canonical(dst);
	y = canonical(ref);
	ck_assert_str_eq(x, y);
	free(x);
	free(y);
	ck_assert_int_eq(dst->duration_nanos, a->duration_nanos + b->duration_nanos);
	ck_assert_int_eq(cp_profile_total(dst, 1), cp_profile_total(a, 1) + cp_profile_total(b, 1));
	ck_assert_uint_eq(dst->nmappings, a->nmappings); /* the same binary: mappings merged */

	/* an incompatible file is refused, naming both types */
	cp_error_clear();
	err = cp_pprof_decode_into(dst, heap, lh);
	ck_assert_int_eq(err, -EINVAL);
	ck_assert_contains(cp_errmsg(err), "incompatible");
	ck_assert_contains(cp_errmsg(err), "cpu/nanoseconds");
	ck_assert_contains(cp_errmsg(err), "space/bytes");
	/* and so is garbage */
	ck_assert_int_eq(cp_pprof_decode_into(dst, before, lb / 2), -EINVAL);
	ck_assert_contains(cp_errmsg(EINVAL), "truncated");
	ck_assert_int_eq(cp_pprof_decode_into(dst, "", 0), -EINVAL);

	cp_profile_free(dst);
	cp_profile_free(ref);
	cp_profile_free(a);
	cp_profile_free(b);
	free(before);
	free(after);
	free(heap);
}
END_TEST

START_TEST(test_decode_into_zero_samples)
{
	/* all-zero samples: kept when decoding, dropped when merging (pprof) */
	static const uint64_t m[1] = { 1 }, mw[2] = { 2, 1 };
	static const int64_t zero[2] = { 0, 0 }, some[2] = { 1, 10 };
	struct pbw w = { .n = 0 };
	struct cp_profile *p;

	w_base(&w);
	w_sample(&w, m, 1, zero, 2, true);
	w_sample(&w, mw, 2, some, 2, true);
	p = decode_ok(w.d, w.n);
	ck_assert_uint_eq(p->nsamples, 2);
	ck_assert_int_eq(cp_pprof_decode_into(p, w.d, w.n), 0);
	ck_assert_uint_eq(p->nsamples, 2);
	ck_assert_int_eq(cp_profile_total(p, 1), 20);
	ck_assert_int_eq(p->period, 10000000);
	cp_profile_free(p);
}
END_TEST

START_TEST(test_load_many)
{
	char *paths[5], *x = NULL, *y;
	struct cp_profile *ref, *q, *p;
	int i, threads[] = { 1, 2, 3, 0, 64 };

	paths[0] = path_of("cpu-before.pb.gz");
	paths[1] = path_of("cpu-after.pb.gz");
	paths[2] = path_of("cpu-short.pb.gz");
	paths[3] = path_of("cpu-before.pb.gz");
	paths[4] = path_of("cpu-after.pb.gz");
	/* the reference: one after the other */
	ref = cp_profile_load(paths[0]);
	ck_assert_ptr_nonnull(ref);
	for (i = 1; i < 5; i++) {
		q = cp_profile_load(paths[i]);
		ck_assert_ptr_nonnull(q);
		ck_assert_int_eq(cp_profile_merge(ref, q, NULL), 0);
		cp_profile_free(q);
	}
	y = canonical(ref);
	for (i = 0; i < (int)(sizeof(threads) / sizeof(threads[0])); i++) {
		p = cp_profile_load_many(paths, 5, threads[i]);
		ck_assert_msg(p != NULL, "%d threads: %s", threads[i], cp_errmsg(errno));
		x = canonical(p);
		ck_assert_msg(!strcmp(x, y), "%d threads: the merge differs", threads[i]);
		free(x);
		cp_profile_free(p);
	}
	/* one file: that file */
	p = cp_profile_load_many(paths + 2, 1, 4);
	ck_assert_ptr_nonnull(p);
	q = cp_profile_load(paths[2]);
	x = canonical(p);
	free(y);
	y = canonical(q);
	ck_assert_str_eq(x, y);
	free(x);
	free(y);
	cp_profile_free(p);
	cp_profile_free(q);
	cp_profile_free(ref);
	for (i = 0; i < 5; i++)
		free(paths[i]);
}
END_TEST

START_TEST(test_load_many_errors)
{
	char *paths[4], folded1[] = "/tmp/cprof-f1-XXXXXX", folded2[] = "/tmp/cprof-f2-XXXXXX";
	struct cp_profile *p;
	int fd, t;

	paths[0] = path_of("cpu-before.pb.gz");
	paths[1] = path_of("cpu-after.pb.gz");
	paths[2] = path_of("heap.pb.gz");
	paths[3] = strdup("/nonexistent/missing.pb.gz");
	for (t = 1; t <= 2; t++) {
		/* incompatible, in the first or the second run of files: the
		 * message names the file and the first file */
		char *bad_first[4] = { paths[0], paths[2], paths[1], paths[0] };
		char *bad_last[4] = { paths[0], paths[1], paths[0], paths[2] };
		char *missing[4] = { paths[0], paths[1], paths[3], paths[1] };
		char *two_errors[4] = { paths[0], paths[3], paths[1], paths[2] };

		errno = 0;
		p = cp_profile_load_many(bad_first, 4, t);
		ck_assert_ptr_null(p);
		ck_assert_int_eq(errno, EINVAL);
		ck_assert_contains(cp_errmsg(EINVAL), "cannot merge");
		ck_assert_contains(cp_errmsg(EINVAL), "heap.pb.gz");
		ck_assert_contains(cp_errmsg(EINVAL), "cpu-before.pb.gz");
		ck_assert_contains(cp_errmsg(EINVAL), "incompatible");
		errno = 0;
		p = cp_profile_load_many(bad_last, 4, t);
		ck_assert_ptr_null(p);
		ck_assert_int_eq(errno, EINVAL);
		ck_assert_contains(cp_errmsg(EINVAL), "heap.pb.gz");
		ck_assert_contains(cp_errmsg(EINVAL), "incompatible");
		/* a missing file: named, with the reason */
		errno = 0;
		p = cp_profile_load_many(missing, 4, t);
		ck_assert_ptr_null(p);
		ck_assert_int_eq(errno, ENOENT);
		ck_assert_contains(cp_errmsg(ENOENT), "/nonexistent/missing.pb.gz");
		/* two bad files: the first one in the list is reported */
		errno = 0;
		p = cp_profile_load_many(two_errors, 4, t);
		ck_assert_ptr_null(p);
		ck_assert_int_eq(errno, ENOENT);
		ck_assert_contains(cp_errmsg(ENOENT), "missing.pb.gz");
	}
	errno = 0;
	ck_assert_ptr_null(cp_profile_load_many(paths, 0, 1));
	ck_assert_int_eq(errno, EINVAL);

	/* folded files merge with each other (one plain, one gzipped) */
	fd = mkstemp(folded1);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, "main;a 2\nmain;b 3\n", 18), 18);
	close(fd);
	{
		uint8_t *z = NULL;
		size_t zlen = 0;

		ck_assert_int_eq(cp_gzip("main;a 5\nmain;c 1\n", 18, &z, &zlen), 0);
		fd = mkstemp(folded2);
		ck_assert_int_ge(fd, 0);
		ck_assert_int_eq(write(fd, z, zlen), (ssize_t)zlen);
		close(fd);
		free(z);
	}
	{
		char *fp[4] = { folded1, folded2, folded1, folded2 };

		for (t = 1; t <= 2; t++) {
			char *out;

			p = cp_profile_load_many(fp, 4, t);
			ck_assert_msg(p != NULL, "%s", cp_errmsg(errno));
			out = canonical(p);
			ck_assert_contains(out, "total 22\nmain;a 14\nmain;b 6\nmain;c 2\n");
			free(out);
			cp_profile_free(p);
		}
		/* folded (samples/count) after a CPU profile: incompatible */
		fp[0] = paths[0];
		errno = 0;
		ck_assert_ptr_null(cp_profile_load_many(fp, 2, 1));
		ck_assert_int_eq(errno, EINVAL);
		ck_assert_contains(cp_errmsg(EINVAL), folded2);
	}
	unlink(folded1);
	unlink(folded2);
	for (t = 0; t < 4; t++)
		free(paths[t]);
}
END_TEST

/* ---- limits on what decoding may take (lib/decode_limits.h) ---- */

static void limits(size_t max_decompressed, size_t max_samples, size_t max_locations, const char *setting)
{
	cp_decode_limits_set(&(struct cp_decode_limits){ .max_decompressed = max_decompressed, .max_samples = max_samples,
							  .max_locations = max_locations, .setting = setting });
}

static void limits_reset(void)
{
	limits(0, 0, 0, NULL);
	ck_assert_uint_eq(cp_decode_limits()->max_samples, CP_DECODE_MAX_SAMPLES);
}

static void folded_ok(const char *text)
{
	struct cp_profile *p = cp_folded_decode(text, strlen(text));

	ck_assert_msg(p != NULL, "'%.40s' refused: %s", text, cp_errmsg(errno));
	cp_profile_free(p);
}

/* err, and the profile freed if it decoded */
static int decode_err(const void *d, size_t n)
{
	struct cp_profile *p;

	cp_error_clear();
	p = cp_pprof_decode(d, n);
	if (p) {
		cp_profile_free(p);
		return 0;
	}
	return -errno;
}

START_TEST(test_limit_samples)
{
	static const uint64_t loc[1] = { 1 };
	static const int64_t v[2] = { 1, 10 };
	struct pbw w = { .n = 0 };
	size_t i;

	limits(0, 5, 0, NULL);
	w_base(&w);
	for (i = 0; i < 5; i++)
		w_sample(&w, loc, 1, v, 2, true);
	ck_assert_int_eq(decode_err(w.d, w.n), 0);
	w_sample(&w, loc, 1, v, 2, true);
	ck_assert_int_eq(decode_err(w.d, w.n), -EFBIG);
	ck_assert_contains(cp_errmsg(EFBIG), "over 5 samples");
	/* folded: a line is a sample */
	folded_ok("a 1\nb 1\nc 1\nd 1\n# not one\n\ne 1\n");
	errno = 0;
	ck_assert_ptr_null(cp_folded_decode("a 1\nb 1\nc 1\nd 1\ne 1\nf 1\n", 24));
	ck_assert_int_eq(errno, EFBIG);
	ck_assert_contains(cp_errmsg(EFBIG), "over 5 samples (lines)");
	limits_reset();
}
END_TEST

START_TEST(test_limit_locations)
{
	struct pbw w = { .n = 0 };
	uint64_t id;
	char text[64];

	limits(0, 0, 4, NULL);
	w_base(&w); /* locations 1 and 2 */
	w_location(&w, 3, 0, 0, 1);
	w_location(&w, 4, 0, 0, 2);
	ck_assert_int_eq(decode_err(w.d, w.n), 0);
	for (id = 5; id < 8; id++)
		w_location(&w, id, 0, 0, 1);
	ck_assert_int_eq(decode_err(w.d, w.n), -EFBIG);
	ck_assert_contains(cp_errmsg(EFBIG), "over 4 locations");
	/* folded: distinct frames, however often they come */
	snprintf(text, sizeof(text), "a;b;c;d 1\nd;c;b;a 2\n");
	folded_ok(text);
	errno = 0;
	snprintf(text, sizeof(text), "a;b;c;d 1\nd;c;b;a;e 2\n");
	ck_assert_ptr_null(cp_folded_decode(text, strlen(text)));
	ck_assert_int_eq(errno, EFBIG);
	ck_assert_contains(cp_errmsg(EFBIG), "over 4 distinct frames");
	limits_reset();
}
END_TEST

/* The gzip bomb of the hostile-input report: a header, then a million and
 * one empty Sample records (2 bytes each, 128 bytes each once unpacked).
 * Refused by counting, before protobuf-c allocates anything for them. */
START_TEST(test_limit_empty_samples)
{
	struct pbw w = { .n = 0 };
	size_t n = CP_DECODE_MAX_SAMPLES + 1, len, zlen = 0;
	uint8_t *d, *z = NULL;

	limits_reset();
	w_base(&w);
	len = w.n + 2 * n;
	ck_assert_ptr_nonnull(d = malloc(len));
	memcpy(d, w.d, w.n);
	for (size_t i = 0; i < n; i++) {
		d[w.n + 2 * i] = P_SAMPLE << 3 | 2;
		d[w.n + 2 * i + 1] = 0;
	}
	ck_assert_int_eq(decode_err(d, len), -EFBIG);
	ck_assert_contains(cp_errmsg(EFBIG), "over 1000000 samples");
	ck_assert_int_eq(cp_gzip(d, len, &z, &zlen), 0);
	ck_assert_uint_lt(zlen, len / 50);
	ck_assert_int_eq(decode_err(z, zlen), -EFBIG);
	ck_assert_contains(cp_errmsg(EFBIG), "over 1000000 samples");
	/* the same through the loaders of cprof import and query -i */
	errno = 0;
	ck_assert_ptr_null(cp_profile_decode(z, zlen));
	ck_assert_int_eq(errno, EFBIG);
	free(z);
	free(d);
}
END_TEST

/* What the records of a profile take once unpacked is bounded too: a few
 * bytes of empty labels, or of unknown fields, cost far more in memory. */
START_TEST(test_limit_unpacked_size)
{
	static const uint64_t loc[1] = { 1 };
	static const int64_t v[2] = { 1, 10 };
	struct pbw w = { .n = 0 }, sample = { .n = 0 }, run = { .n = 0 };
	size_t i;

	limits(16 << 10, 0, 0, "--max-decompressed");
	w_base(&w);
	w_sample(&w, loc, 1, v, 2, true);
	ck_assert_int_eq(decode_err(w.d, w.n), 0); /* a small profile takes a few KiB */
	/* one sample with 3000 empty labels: 6 KB on the wire */
	w_repeated(&sample, 1, loc, 1, true);
	w_repeated(&sample, 2, (const uint64_t *)v, 2, true);
	for (i = 0; i < 3000; i++)
		w_bytes(&sample, 3, "", 0);
	w_msg(&w, P_SAMPLE, &sample);
	ck_assert_int_eq(decode_err(w.d, w.n), -EFBIG);
	ck_assert_contains(cp_errmsg(EFBIG), "decoding the profile would take over 32768 bytes");
	ck_assert_contains(cp_errmsg(EFBIG), "--max-decompressed");
	/* 2000 unknown fields (field 99, a varint: 3 bytes each) */
	w.n = 0;
	w_base(&w);
	for (i = 0; i < 2000; i++)
		w_uint(&run, 99, 1);
	w_raw(&w, run.d, run.n);
	ck_assert_int_eq(decode_err(w.d, w.n), -EFBIG);
	ck_assert_contains(cp_errmsg(EFBIG), "would take over");
	limits_reset();
}
END_TEST

START_TEST(test_limit_decompressed)
{
	size_t n = (size_t)2 << 20, zlen = 0, outlen = 0;
	uint8_t *zeros = calloc(1, n), *z = NULL, *out = NULL;

	ck_assert_ptr_nonnull(zeros);
	ck_assert_int_eq(cp_gzip(zeros, n, &z, &zlen), 0);
	limits((size_t)1 << 20, 0, 0, "--max-decompressed");
	ck_assert_int_eq(cp_gunzip_limited(z, zlen, &out, &outlen), -EFBIG);
	ck_assert_ptr_null(out);
	ck_assert_str_eq(cp_errmsg(EFBIG), "the decompressed body is over 1 MiB (--max-decompressed)");
	ck_assert_int_eq(decode_err(z, zlen), -EFBIG);
	errno = 0;
	ck_assert_ptr_null(cp_profile_decode(z, zlen));
	ck_assert_int_eq(errno, EFBIG);
	limits((size_t)2 << 20, 0, 0, NULL);
	ck_assert_int_eq(cp_gunzip_limited(z, zlen, &out, &outlen), 0);
	ck_assert_uint_eq(outlen, n);
	free(out);
	limits((size_t)2 << 20 >> 1, 0, 0, NULL);
	ck_assert_int_eq(cp_gunzip_limited(z, zlen, &out, &outlen), -EFBIG);
	ck_assert_contains(cp_errmsg(EFBIG), "over 1 MiB (the most a profile may inflate to)");
	limits_reset();
	free(z);
	free(zeros);
}
END_TEST

/* folded: the frames of the stacks kept take 8 bytes each at most, within
 * twice max_decompressed */
START_TEST(test_limit_folded_frames)
{
	size_t n = 3000, i;
	char *text = malloc(2 * n + 8);

	ck_assert_ptr_nonnull(text);
	for (i = 0; i < n; i++)
		memcpy(text + 2 * i, "a;", 2);
	memcpy(text + 2 * n - 1, " 1\n", 3);
	limits(16 << 10, 0, 0, NULL); /* 4096 frames */
	text[2 * n + 2] = 0;
	folded_ok(text);
	limits(8 << 10, 0, 0, NULL); /* 2048 frames */
	errno = 0;
	ck_assert_ptr_null(cp_folded_decode(text, 2 * n + 2));
	ck_assert_int_eq(errno, EFBIG);
	ck_assert_contains(cp_errmsg(EFBIG), "decoding the profile would take over");
	limits_reset();
	free(text);
}
END_TEST

/* the threads inflating at once share max_inflating: while others hold
 * part of it, a body that would pass it fails with EBUSY; alone, it goes */
START_TEST(test_limit_inflating)
{
	size_t n = (size_t)2 << 20, zlen = 0, outlen = 0;
	uint8_t *zeros = calloc(1, n), *z = NULL, *out = NULL;

	ck_assert_ptr_nonnull(zeros);
	ck_assert_int_eq(cp_gzip(zeros, n, &z, &zlen), 0);
	cp_decode_limits_set(&(struct cp_decode_limits){ .max_decompressed = (size_t)4 << 20,
							  .max_inflating = (size_t)3 << 20,
							  .setting = "--max-decompressed" });
	ck_assert_int_eq(cp_inflate_reserve((ptrdiff_t)3 << 19, 0), 0); /* another thread holds 1.5 MiB */
	ck_assert_int_eq(cp_gunzip_limited(z, zlen, &out, &outlen), -EBUSY);
	ck_assert_ptr_null(out);
	ck_assert_str_eq(cp_errmsg(EBUSY), "the bodies being decompressed now take 3 MiB already "
					   "(--max-decompressed): send it again later");
	errno = 0;
	ck_assert_ptr_null(cp_profile_decode(z, zlen));
	ck_assert_int_eq(errno, EBUSY);
	ck_assert_int_eq(cp_inflate_reserve(-((ptrdiff_t)3 << 19), 0), 0); /* it is done */
	ck_assert_int_eq(cp_gunzip_limited(z, zlen, &out, &outlen), 0);
	ck_assert_uint_eq(outlen, n);
	free(out);
	/* everything reserved was given back: the whole budget is free again */
	ck_assert_int_eq(cp_inflate_reserve((ptrdiff_t)3 << 20, 0), 0);
	ck_assert_int_eq(cp_inflate_reserve(1, 0), -EBUSY);
	ck_assert_int_eq(cp_inflate_reserve(-((ptrdiff_t)3 << 20), 0), 0);
	/* alone, a body may take more than the budget (up to max_decompressed) */
	cp_decode_limits_set(&(struct cp_decode_limits){ .max_decompressed = (size_t)4 << 20,
							  .max_inflating = (size_t)1 << 20 });
	ck_assert_int_eq(cp_gunzip_limited(z, zlen, &out, &outlen), 0);
	free(out);
	limits_reset();
	free(z);
	free(zeros);
}
END_TEST

static Suite *pprof_suite(void)
{
	Suite *s = suite_create("pprof");
	TCase *rt = tcase_create("round-trip"), *hand = tcase_create("hand-made"),
	      *bad = tcase_create("malformed"), *gz = tcase_create("gzip"), *load = tcase_create("load"),
	      *lim = tcase_create("limits");

	tcase_add_test(rt, test_round_trip_gzip);
	tcase_add_test(rt, test_round_trip_raw);
	tcase_add_test(rt, test_encode_ids);
	tcase_add_test(rt, test_encode_empty);
	suite_add_tcase(s, rt);

	tcase_add_test(hand, test_decode_packed_unpacked);
	tcase_add_test(hand, test_decode_mixed_packing);
	tcase_add_test(hand, test_decode_sparse_ids);
	tcase_add_test(hand, test_decode_labels);
	tcase_add_test(hand, test_decode_mapping_dedup);
	suite_add_tcase(s, hand);

	tcase_add_test(bad, test_malformed_wire);
	tcase_add_test(bad, test_malformed_strings);
	tcase_add_test(bad, test_malformed_references);
	tcase_add_test(bad, test_malformed_ids);
	tcase_add_test(bad, test_malformed_no_types);
	suite_add_tcase(s, bad);

	tcase_add_test(gz, test_gzip_truncated);
	tcase_add_test(gz, test_gzip_corrupt);
	tcase_add_test(gz, test_gzip_trailing_garbage);
	tcase_add_test(gz, test_gzip_concatenated);
	tcase_add_test(gz, test_gunzip_limit);
	tcase_add_test(gz, test_gzip_round_trip);
	suite_add_tcase(s, gz);

	tcase_add_test(load, test_fixture_cpu);
	tcase_add_test(load, test_fixture_heap);
	tcase_add_test(load, test_sniff);
	tcase_add_test(load, test_load_errors);
	tcase_add_test(load, test_decode_into);
	tcase_add_test(load, test_decode_into_zero_samples);
	tcase_add_test(load, test_load_many);
	tcase_add_test(load, test_load_many_errors);
	suite_add_tcase(s, load);

	tcase_add_test(lim, test_limit_samples);
	tcase_add_test(lim, test_limit_locations);
	tcase_add_test(lim, test_limit_empty_samples);
	tcase_add_test(lim, test_limit_unpacked_size);
	tcase_add_test(lim, test_limit_decompressed);
	tcase_add_test(lim, test_limit_folded_frames);
	tcase_add_test(lim, test_limit_inflating);
	suite_add_tcase(s, lim);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(pprof_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

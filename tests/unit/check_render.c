/* SPDX-License-Identifier: MIT */
/* Renderers and their aggregations: lib/render/units.c, tree.c, top.c,
 * json.c, diffstat.c's tests of a diff's frames (and one smoke test of
 * flame.c, which check_flame.c covers). */
#include <check.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "folded.h"
#include "profile.h"
#include "render/diffstat.h"
#include "render/render.h"
#include "render/tree.h"
#include "render/units.h"
#include "testutil.h"

/* ---- helpers ---- */

/* A profile from folded text; optionally relabelled with another sample
 * type/unit (the values stay as written). */
static struct cp_profile *folded(const char *text, const char *type, const char *unit)
{
	struct cp_profile *p = cp_folded_decode(text, strlen(text));

	ck_assert_msg(p != NULL, "%s", cp_errmsg(errno));
	if (type) {
		p->sample_types[0].type = (uint32_t)cp_profile_str(p, type);
		p->sample_types[0].unit = (uint32_t)cp_profile_str(p, unit);
	}
	return p;
}

/* Output of a renderer into a string. */
struct capture {
	FILE *f;
	char *buf;
	size_t len;
};

static FILE *cap_open(struct capture *c)
{
	c->buf = NULL;
	c->len = 0;
	c->f = open_memstream(&c->buf, &c->len);
	ck_assert_ptr_nonnull(c->f);
	return c->f;
}

static char *cap_close(struct capture *c)
{
	ck_assert_int_eq(fclose(c->f), 0);
	return c->buf;
}

/* The node at "a;b;c" from the root, or UINT32_MAX. */
static uint32_t node_at(const struct cp_tree *t, const char *path)
{
	char buf[256], *save = NULL, *name;
	uint32_t node = 0, c;

	snprintf(buf, sizeof(buf), "%s", path);
	for (name = strtok_r(buf, ";", &save); name; name = strtok_r(NULL, ";", &save)) {
		for (c = t->nodes[node].child; c && strcmp(cp_tree_name(t, c), name); c = t->nodes[c].sibling)
			;
		if (!c)
			return UINT32_MAX;
		node = c;
	}
	return node;
}

static const char *children(const struct cp_tree *t, uint32_t node, char *out, size_t len)
{
	size_t used = 0;
	uint32_t c;

	out[0] = '\0';
	for (c = t->nodes[node].child; c; c = t->nodes[c].sibling)
		used += (size_t)snprintf(out + used, len - used, "%s%s", used ? "," : "", cp_tree_name(t, c));
	return out;
}

#define ck_node(t, path, side, tot, slf)                                                          \
	do {                                                                                       \
		uint32_t n_ = node_at((t), (path));                                                \
		ck_assert_msg(n_ != UINT32_MAX, "no node %s", (path));                            \
		ck_assert_int_eq((t)->nodes[n_].total[side], (tot));                               \
		ck_assert_int_eq((t)->nodes[n_].self[side], (slf));                                \
	} while (0)

static const struct cp_fn_row *row_named(const struct cp_fn_table *t, const char *name)
{
	uint32_t i;

	for (i = 0; i < t->nrows; i++)
		if (!strcmp(cp_strtab_get(&t->names, t->rows[i].name), name))
			return &t->rows[i];
	return NULL;
}

static const char abc[] = "a;b;c 3\na;b 2\na;d 1\n";

/* ---- units ---- */

START_TEST(test_format_value)
{
	char buf[32];

	ck_assert_str_eq(cp_format_value(1500000000, "nanoseconds", buf, sizeof(buf)), "1.50s");
	ck_assert_str_eq(cp_format_value(10000000, "nanoseconds", buf, sizeof(buf)), "10ms");
	ck_assert_str_eq(cp_format_value(0, "nanoseconds", buf, sizeof(buf)), "0");
	ck_assert_str_eq(cp_format_value(999, "nanoseconds", buf, sizeof(buf)), "999ns");
	ck_assert_str_eq(cp_format_value(1500, "nanoseconds", buf, sizeof(buf)), "1.50us");
	ck_assert_str_eq(cp_format_value(90000000000LL, "nanoseconds", buf, sizeof(buf)), "1.50mins");
	ck_assert_str_eq(cp_format_value(7200000000000LL, "nanoseconds", buf, sizeof(buf)), "2hrs");
	ck_assert_str_eq(cp_format_value(-1500000000, "nanoseconds", buf, sizeof(buf)), "-1.50s");
	ck_assert_str_eq(cp_format_value(1500, "microseconds", buf, sizeof(buf)), "1.50ms");
	ck_assert_str_eq(cp_format_value(250, "milliseconds", buf, sizeof(buf)), "250ms");
	ck_assert_str_eq(cp_format_value(3, "seconds", buf, sizeof(buf)), "3s");
	ck_assert_str_eq(cp_format_value(2048, "bytes", buf, sizeof(buf)), "2kB");
	ck_assert_str_eq(cp_format_value(3 * 1024 * 1024, "bytes", buf, sizeof(buf)), "3MB");
	ck_assert_str_eq(cp_format_value(512, "bytes", buf, sizeof(buf)), "512B");
	ck_assert_str_eq(cp_format_value(1536, "bytes", buf, sizeof(buf)), "1.50kB");
	ck_assert_str_eq(cp_format_value(5LL << 30, "bytes", buf, sizeof(buf)), "5GB");
	ck_assert_str_eq(cp_format_value(2LL << 40, "bytes", buf, sizeof(buf)), "2TB");
	ck_assert_str_eq(cp_format_value(0, "bytes", buf, sizeof(buf)), "0");
	ck_assert_str_eq(cp_format_value(42, "count", buf, sizeof(buf)), "42");
	ck_assert_str_eq(cp_format_value(1234567, "count", buf, sizeof(buf)), "1234567");
	ck_assert_str_eq(cp_format_value(-5, "count", buf, sizeof(buf)), "-5");
	ck_assert_str_eq(cp_format_value(42, NULL, buf, sizeof(buf)), "42");
	ck_assert_str_eq(cp_format_value(42, "widgets", buf, sizeof(buf)), "42");
}
END_TEST

START_TEST(test_format_scaled)
{
	struct cp_unit_scale s = cp_unit_scale_for(1500000000, "nanoseconds");
	char buf[32];

	ck_assert_str_eq(s.suffix, "s");
	ck_assert_double_eq_tol(s.div, 1e9, 1e-3);
	/* every value of a table in the unit of its largest */
	ck_assert_str_eq(cp_format_scaled(10000000, s, buf, sizeof(buf)), "0.01s");
	ck_assert_str_eq(cp_format_scaled(1000000000, s, buf, sizeof(buf)), "1s");
	ck_assert_str_eq(cp_format_scaled(1, s, buf, sizeof(buf)), "0"); /* rounds to nothing */
	ck_assert_str_eq(cp_format_scaled(-1, s, buf, sizeof(buf)), "0"); /* not "-0" */
	s = cp_unit_scale_for(10, "count");
	ck_assert_str_eq(s.suffix, "");
	ck_assert_str_eq(cp_format_scaled(10, s, buf, sizeof(buf)), "10");
	s = cp_unit_scale_for(-3 * 1024 * 1024, "bytes"); /* by magnitude */
	ck_assert_str_eq(s.suffix, "MB");
	s = cp_unit_scale_for(0, "bytes");
	ck_assert_str_eq(s.suffix, "B");
}
END_TEST

START_TEST(test_format_percent)
{
	char buf[32];

	ck_assert_str_eq(cp_format_percent(0, 100, buf, sizeof(buf)), "0%");
	ck_assert_str_eq(cp_format_percent(5, 0, buf, sizeof(buf)), "0%");
	ck_assert_str_eq(cp_format_percent(0, 0, buf, sizeof(buf)), "0%");
	ck_assert_str_eq(cp_format_percent(7, 7, buf, sizeof(buf)), "100%");
	ck_assert_str_eq(cp_format_percent(1, 3, buf, sizeof(buf)), "33.33%");
	ck_assert_str_eq(cp_format_percent(1, 2, buf, sizeof(buf)), "50.00%");
	ck_assert_str_eq(cp_format_percent(-1, 4, buf, sizeof(buf)), "-25.00%");
}
END_TEST

/* ---- the call tree ---- */

START_TEST(test_tree)
{
	struct cp_profile *p = folded(abc, NULL, NULL);
	struct cp_tree *t = cp_tree_new();
	char buf[128];

	ck_assert_ptr_nonnull(t);
	ck_assert_int_eq(cp_tree_add(t, p, 0, 0, false), 0);
	ck_assert_uint_eq(t->nnodes, 5);
	ck_assert_uint_eq(t->max_depth, 3);
	ck_assert_int_eq(t->nodes[0].total[0], 6);
	ck_assert_int_eq(t->nodes[0].self[0], 0);
	ck_assert_uint_eq(t->nodes[0].depth, 0);
	ck_node(t, "a", 0, 6, 0);
	ck_node(t, "a;b", 0, 5, 2);
	ck_node(t, "a;b;c", 0, 3, 3);
	ck_node(t, "a;d", 0, 1, 1);
	ck_assert_uint_eq(node_at(t, "b"), UINT32_MAX);
	ck_assert_uint_eq(t->nodes[node_at(t, "a;b;c")].depth, 3);
	ck_assert_uint_eq(t->nodes[node_at(t, "a;b;c")].parent, node_at(t, "a;b"));
	/* side 1 untouched */
	ck_assert_int_eq(t->nodes[0].total[1], 0);
	ck_assert_int_eq(t->nodes[node_at(t, "a;b")].total[1], 0);
	/* children by name once sorted */
	ck_assert_int_eq(cp_tree_sort(t), 0);
	ck_assert_str_eq(children(t, node_at(t, "a"), buf, sizeof(buf)), "b,d");
	ck_assert_str_eq(children(t, 0, buf, sizeof(buf)), "a");
	ck_node(t, "a;b;c", 0, 3, 3); /* sorting moves no values */
	cp_tree_free(t);
	cp_profile_free(p);
}
END_TEST

START_TEST(test_tree_sort_order)
{
	struct cp_profile *p = folded("r;zeta 1\nr;alpha 1\nr;mid 1\nr;Beta 1\nr;alpha;y 1\nr;alpha;x 1\n", NULL, NULL);
	struct cp_tree *t = cp_tree_new();
	char buf[128];

	ck_assert_int_eq(cp_tree_add(t, p, 0, 0, false), 0);
	ck_assert_int_eq(cp_tree_sort(t), 0);
	ck_assert_str_eq(children(t, node_at(t, "r"), buf, sizeof(buf)), "Beta,alpha,mid,zeta");
	ck_assert_str_eq(children(t, node_at(t, "r;alpha"), buf, sizeof(buf)), "x,y");
	ck_node(t, "r", 0, 6, 0);
	ck_node(t, "r;alpha", 0, 3, 1);
	cp_tree_free(t);
	cp_profile_free(p);
}
END_TEST

START_TEST(test_tree_invert)
{
	struct cp_profile *p = folded(abc, NULL, NULL);
	struct cp_tree *t = cp_tree_new();
	char buf[128];

	ck_assert_int_eq(cp_tree_add(t, p, 0, 0, true), 0);
	ck_assert_int_eq(cp_tree_sort(t), 0);
	ck_assert_int_eq(t->nodes[0].total[0], 6);
	ck_assert_str_eq(children(t, 0, buf, sizeof(buf)), "b,c,d");
	ck_node(t, "c", 0, 3, 0);
	ck_node(t, "c;b", 0, 3, 0);
	ck_node(t, "c;b;a", 0, 3, 3);
	ck_node(t, "b", 0, 2, 0);
	ck_node(t, "b;a", 0, 2, 2);
	ck_node(t, "d;a", 0, 1, 1);
	ck_assert_uint_eq(t->max_depth, 3);
	ck_assert_uint_eq(t->nnodes, 8);
	cp_tree_free(t);
	cp_profile_free(p);
}
END_TEST

START_TEST(test_tree_two_sides)
{
	struct cp_profile *before = folded(abc, NULL, NULL), *after = folded("a;b;c 1\na;e 4\n", NULL, NULL);
	struct cp_tree *t = cp_tree_new();

	ck_assert_int_eq(cp_tree_add(t, before, 0, 0, false), 0);
	ck_assert_int_eq(cp_tree_add(t, after, 0, 1, false), 0);
	ck_assert_int_eq(t->nodes[0].total[0], 6);
	ck_assert_int_eq(t->nodes[0].total[1], 5);
	ck_node(t, "a;b;c", 0, 3, 3);
	ck_node(t, "a;b;c", 1, 1, 1);
	ck_node(t, "a;b", 1, 1, 0);
	ck_node(t, "a;d", 1, 0, 0);
	ck_node(t, "a;e", 0, 0, 0);
	ck_node(t, "a;e", 1, 4, 4);
	ck_node(t, "a", 1, 5, 0);
	ck_assert_uint_eq(t->nnodes, 6); /* a;b;c shared, e added */
	cp_tree_free(t);
	cp_profile_free(before);
	cp_profile_free(after);
}
END_TEST

START_TEST(test_tree_value_index)
{
	/* the value index chooses the column; zero values add nothing */
	struct cp_profile *p = cp_profile_new();
	struct cp_function f = { 0, 0, 0, 0 };
	struct cp_line line = { 0, 0, 0 };
	int64_t v1[2] = { 2, 0 }, v2[2] = { 0, 7 };
	uint32_t loc;
	struct cp_tree *t0 = cp_tree_new(), *t1 = cp_tree_new();

	ck_assert_int_eq(cp_profile_add_sample_type(p, "objects", "count"), 0);
	ck_assert_int_eq(cp_profile_add_sample_type(p, "space", "bytes"), 0);
	f.name = (uint32_t)cp_profile_str(p, "small");
	line.function = (uint32_t)cp_profile_function(p, &f);
	loc = (uint32_t)cp_profile_location(p, 0, 0, &line, 1, false);
	ck_assert_int_eq(cp_profile_add_sample(p, (uint32_t)cp_profile_stack(p, &loc, 1), 0, v1), 0);
	f.name = (uint32_t)cp_profile_str(p, "big");
	line.function = (uint32_t)cp_profile_function(p, &f);
	loc = (uint32_t)cp_profile_location(p, 0, 0, &line, 1, false);
	ck_assert_int_eq(cp_profile_add_sample(p, (uint32_t)cp_profile_stack(p, &loc, 1), 0, v2), 0);
	ck_assert_int_eq(cp_tree_add(t0, p, 0, 0, false), 0);
	ck_assert_int_eq(cp_tree_add(t1, p, 1, 0, false), 0);
	ck_assert_int_eq(t0->nodes[0].total[0], 2);
	ck_assert_uint_eq(t0->nnodes, 2);
	ck_node(t0, "small", 0, 2, 2);
	ck_assert_int_eq(t1->nodes[0].total[0], 7);
	ck_assert_uint_eq(t1->nnodes, 2);
	ck_node(t1, "big", 0, 7, 7);
	cp_tree_free(t0);
	cp_tree_free(t1);
	cp_profile_free(p);
}
END_TEST

/* ---- the function table ---- */

START_TEST(test_fn_table)
{
	struct cp_profile *p = folded(abc, NULL, NULL);
	struct cp_fn_table *t = cp_fn_table_new();
	const struct cp_fn_row *r;

	ck_assert_ptr_nonnull(t);
	ck_assert_int_eq(cp_fn_table_add(t, p, 0, 0), 0);
	ck_assert_int_eq(t->total[0], 6);
	ck_assert_int_eq(t->total[1], 0);
	ck_assert_uint_eq(t->nrows, 4);
	r = row_named(t, "a");
	ck_assert_ptr_nonnull(r);
	ck_assert_int_eq(r->flat[0], 0);
	ck_assert_int_eq(r->cum[0], 6);
	r = row_named(t, "b");
	ck_assert_int_eq(r->flat[0], 2);
	ck_assert_int_eq(r->cum[0], 5);
	r = row_named(t, "c");
	ck_assert_int_eq(r->flat[0], 3);
	ck_assert_int_eq(r->cum[0], 3);
	r = row_named(t, "d");
	ck_assert_int_eq(r->flat[0], 1);
	ck_assert_int_eq(r->cum[0], 1);
	cp_fn_table_free(t);
	cp_profile_free(p);
}
END_TEST

START_TEST(test_fn_table_recursion)
{
	struct cp_profile *p = folded("a;b;a 2\na;c 1\na;a;a;a 4\n", NULL, NULL);
	struct cp_fn_table *t = cp_fn_table_new();
	const struct cp_fn_row *r;

	ck_assert_int_eq(cp_fn_table_add(t, p, 0, 0), 0);
	ck_assert_int_eq(t->total[0], 7);
	r = row_named(t, "a");
	ck_assert_int_eq(r->flat[0], 6);
	ck_assert_int_eq(r->cum[0], 7); /* once per sample, not per frame */
	r = row_named(t, "b");
	ck_assert_int_eq(r->flat[0], 0);
	ck_assert_int_eq(r->cum[0], 2);
	r = row_named(t, "c");
	ck_assert_int_eq(r->flat[0], 1);
	ck_assert_int_eq(r->cum[0], 1);
	/* a second profile on side 1 */
	cp_profile_free(p);
	p = folded("a;b 10\n", NULL, NULL);
	ck_assert_int_eq(cp_fn_table_add(t, p, 0, 1), 0);
	ck_assert_int_eq(t->total[1], 10);
	r = row_named(t, "b");
	ck_assert_int_eq(r->flat[1], 10);
	ck_assert_int_eq(r->cum[1], 10);
	ck_assert_int_eq(r->cum[0], 2);
	r = row_named(t, "a");
	ck_assert_int_eq(r->flat[1], 0);
	ck_assert_int_eq(r->cum[1], 10);
	ck_assert_uint_eq(t->nrows, 3);
	cp_fn_table_free(t);
	cp_profile_free(p);
}
END_TEST

/* ---- top ---- */

struct top_row {
	char flat[32], flatp[32], sump[32], cum[32], cump[32], name[128];
};

/* Parses the rows after the column header; returns their count. */
static int top_rows(const char *out, struct top_row *rows, int max)
{
	const char *s = strstr(out, "cum%\n");
	int n = 0;

	ck_assert_ptr_nonnull(s);
	s += 5;
	while (*s && n < max) {
		const char *eol = strchr(s, '\n');
		char line[512];
		size_t len = eol ? (size_t)(eol - s) : strlen(s);

		ck_assert_uint_lt(len, sizeof(line));
		memcpy(line, s, len);
		line[len] = '\0';
		ck_assert_int_eq(sscanf(line, "%31s %31s %31s %31s %31s %127[^\n]", rows[n].flat, rows[n].flatp, rows[n].sump,
					rows[n].cum, rows[n].cump, rows[n].name),
				 6);
		n++;
		s = eol ? eol + 1 : s + len;
	}
	return n;
}

#define ck_row(r, fl, flp, smp, cu, cup, nm)                                                       \
	do {                                                                                       \
		ck_assert_str_eq((r).flat, fl);                                                    \
		ck_assert_str_eq((r).flatp, flp);                                                  \
		ck_assert_str_eq((r).sump, smp);                                                   \
		ck_assert_str_eq((r).cum, cu);                                                     \
		ck_assert_str_eq((r).cump, cup);                                                   \
		ck_assert_str_eq((r).name, nm);                                                    \
	} while (0)

START_TEST(test_render_top)
{
	struct cp_profile *p = folded("main;work;alpha 50\nmain;work;beta 30\nmain;gc 20\n", NULL, NULL);
	struct cp_table_opts o = { 0 };
	struct capture c;
	struct top_row rows[10];
	char *out;

	ck_assert_int_eq(cp_render_table(cap_open(&c), p, 0, &o), 0);
	out = cap_close(&c);
	ck_assert_contains(out, "Type: samples\n");
	ck_assert_contains(out, "Showing nodes accounting for 100, 100% of 100 total\n");
	ck_assert_ptr_null(strstr(out, "Showing top"));
	ck_assert_int_eq(top_rows(out, rows, 10), 5);
	/* by flat, then cum, then name */
	ck_row(rows[0], "50", "50.00%", "50.00%", "50", "50.00%", "alpha");
	ck_row(rows[1], "30", "30.00%", "80.00%", "30", "30.00%", "beta");
	ck_row(rows[2], "20", "20.00%", "100%", "20", "20.00%", "gc");
	ck_row(rows[3], "0", "0%", "100%", "100", "100%", "main");
	ck_row(rows[4], "0", "0%", "100%", "80", "80.00%", "work");
	free(out);

	o.limit = 2;
	ck_assert_int_eq(cp_render_table(cap_open(&c), p, 0, &o), 0);
	out = cap_close(&c);
	ck_assert_contains(out, "Showing nodes accounting for 80, 80.00% of 100 total\n");
	ck_assert_contains(out, "Showing top 2 nodes out of 5\n");
	ck_assert_int_eq(top_rows(out, rows, 10), 2);
	ck_row(rows[1], "30", "30.00%", "80.00%", "30", "30.00%", "beta");
	free(out);

	/* a limit above the count shows all, without the line */
	o.limit = 50;
	ck_assert_int_eq(cp_render_table(cap_open(&c), p, 0, &o), 0);
	out = cap_close(&c);
	ck_assert_ptr_null(strstr(out, "Showing top"));
	ck_assert_int_eq(top_rows(out, rows, 10), 5);
	free(out);
	/* NULL options: all rows */
	ck_assert_int_eq(cp_render_table(cap_open(&c), p, 0, NULL), 0);
	out = cap_close(&c);
	ck_assert_int_eq(top_rows(out, rows, 10), 5);
	free(out);
	cp_profile_free(p);
}
END_TEST

START_TEST(test_render_top_units)
{
	struct cp_profile *p = folded("main;alpha 1000000000\nmain;beta 500000000\n", "cpu", "nanoseconds");
	struct capture c;
	struct top_row rows[10];
	char *out;

	p->duration_nanos = 3000000000LL;
	p->time_nanos = 1700000000000000000LL;
	ck_assert_int_eq(cp_render_table(cap_open(&c), p, 0, NULL), 0);
	out = cap_close(&c);
	ck_assert_contains(out, "Type: cpu\n");
	ck_assert_contains(out, "Time: 2023-11-14 22:13:20 UTC\n");
	ck_assert_contains(out, "Duration: 3s, Total samples = 1.50s (50.00%)\n");
	ck_assert_contains(out, "Showing nodes accounting for 1.50s, 100% of 1.50s total\n");
	ck_assert_int_eq(top_rows(out, rows, 10), 3);
	ck_row(rows[0], "1s", "66.67%", "66.67%", "1s", "66.67%", "alpha");
	ck_row(rows[1], "0.50s", "33.33%", "100%", "0.50s", "33.33%", "beta");
	ck_row(rows[2], "0", "0%", "100%", "1.50s", "100%", "main");
	free(out);
	cp_profile_free(p);
}
END_TEST

START_TEST(test_render_top_write_error)
{
	struct cp_profile *p = folded(abc, NULL, NULL);
	FILE *f = fopen("/dev/full", "w");

	if (f) {
		ck_assert_int_lt(cp_render_table(f, p, 0, NULL), 0);
		fclose(f);
	}
	cp_profile_free(p);
}
END_TEST

/* ---- JSON ---- */

static json_t *child_named(json_t *node, const char *name)
{
	json_t *kids = json_object_get(node, "children"), *k;
	size_t i;

	ck_assert(json_is_array(kids));
	json_array_foreach(kids, i, k)
		if (!strcmp(json_string_value(json_object_get(k, "name")), name))
			return k;
	return NULL;
}

static json_t *render_json(const struct cp_profile *p, bool invert)
{
	struct capture c;
	json_error_t jerr;
	json_t *root;
	char *out;

	ck_assert_int_eq(cp_render_json(cap_open(&c), p, 0, invert), 0);
	out = cap_close(&c);
	root = json_loads(out, 0, &jerr);
	ck_assert_msg(root != NULL, "bad JSON (%s): %s", jerr.text, out);
	free(out);
	return root;
}

START_TEST(test_render_json)
{
	struct cp_profile *p = folded(abc, "cpu", "nanoseconds");
	json_t *root, *top, *tree, *a, *b, *kids;

	p->duration_nanos = 123;
	root = render_json(p, false);
	ck_assert_str_eq(json_string_value(json_object_get(root, "type")), "cpu");
	ck_assert_str_eq(json_string_value(json_object_get(root, "unit")), "nanoseconds");
	ck_assert_int_eq(json_integer_value(json_object_get(root, "total")), 6);
	ck_assert_int_eq(json_integer_value(json_object_get(root, "duration_nanos")), 123);
	ck_assert_uint_eq(json_array_size(json_object_get(root, "sample_types")), 1);
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(json_object_get(root, "sample_types"), 0), "unit")),
			 "nanoseconds");
	top = json_object_get(root, "top");
	ck_assert_uint_eq(json_array_size(top), 4);
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(top, 0), "name")), "c");
	ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(top, 0), "flat")), 3);
	ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(top, 0), "cum")), 3);
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(top, 1), "name")), "b");
	ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(top, 1), "cum")), 5);
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(top, 3), "name")), "a");
	ck_assert(json_is_string(json_object_get(json_array_get(top, 0), "file")));

	tree = json_object_get(root, "tree");
	ck_assert_str_eq(json_string_value(json_object_get(tree, "name")), "root");
	ck_assert_int_eq(json_integer_value(json_object_get(tree, "value")), 6);
	ck_assert_uint_eq(json_array_size(json_object_get(tree, "children")), 1);
	a = child_named(tree, "a");
	ck_assert_ptr_nonnull(a);
	ck_assert_int_eq(json_integer_value(json_object_get(a, "value")), 6);
	kids = json_object_get(a, "children");
	ck_assert_uint_eq(json_array_size(kids), 2);
	/* children in name order */
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(kids, 0), "name")), "b");
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(kids, 1), "name")), "d");
	b = child_named(a, "b");
	ck_assert_int_eq(json_integer_value(json_object_get(b, "value")), 5);
	ck_assert_int_eq(json_integer_value(json_object_get(b, "self")), 2);
	ck_assert_int_eq(json_integer_value(json_object_get(child_named(b, "c"), "self")), 3);
	ck_assert_uint_eq(json_array_size(json_object_get(child_named(b, "c"), "children")), 0);
	json_decref(root);

	/* inverted: the leaves at the top */
	root = render_json(p, true);
	tree = json_object_get(root, "tree");
	ck_assert_uint_eq(json_array_size(json_object_get(tree, "children")), 3);
	ck_assert_int_eq(json_integer_value(json_object_get(child_named(tree, "c"), "value")), 3);
	ck_assert_int_eq(json_integer_value(json_object_get(child_named(child_named(tree, "b"), "a"), "self")), 2);
	json_decref(root);
	cp_profile_free(p);
}
END_TEST

/* Values near the int64 limits (legal in pprof): sums saturate at INT64_MAX / INT64_MIN in the
 * tree, the function table and the JSON (they wrapped to the other sign). */
START_TEST(test_render_json_int64)
{
	struct cp_profile *p = folded("main;a 1\nmain;b 2\nx;a 3\n", NULL, NULL);
	struct cp_profile *n = folded("main;a 1\nmain;b 2\n", NULL, NULL);
	struct cp_fn_table *t = cp_fn_table_new();
	struct cp_diff_opts o = { .unit = "count" };
	json_t *root, *top, *r;
	struct capture c;
	json_error_t jerr;
	char *out;
	size_t i;

	/* folded text takes up to 18 digits: the values are set here */
	p->values[0] = p->values[1] = n->values[0] = n->values[1] = 5000000000000000000LL;
	p->values[2] = INT64_MAX;
	root = render_json(p, false);
	ck_assert_int_eq(json_integer_value(json_object_get(root, "total")), INT64_MAX);
	ck_assert_int_eq(json_integer_value(json_object_get(child_named(json_object_get(root, "tree"), "main"), "value")),
			 INT64_MAX);
	top = json_object_get(root, "top");
	json_array_foreach(top, i, r)
		if (!strcmp(json_string_value(json_object_get(r, "name")), "a"))
			ck_assert_int_eq(json_integer_value(json_object_get(r, "flat")), INT64_MAX);
	json_decref(root);
	for (i = 0; i < n->nsamples; i++) /* and negative ones */
		n->values[i] = -n->values[i];
	root = render_json(n, false);
	ck_assert_int_eq(json_integer_value(json_object_get(root, "total")), INT64_MIN);
	json_decref(root);
	/* a diff from INT64_MAX-ish to negative: the delta saturates too */
	ck_assert_int_eq(cp_fn_table_add(t, p, 0, 0), 0);
	ck_assert_int_eq(cp_fn_table_add(t, n, 0, 1), 0);
	ck_assert_int_eq(cp_render_diff_json(cap_open(&c), t, &o), 0);
	out = cap_close(&c);
	root = json_loads(out, 0, &jerr);
	ck_assert_msg(root != NULL, "bad JSON (%s): %s", jerr.text, out);
	free(out);
	ck_assert_int_eq(json_integer_value(json_object_get(root, "total_before")), INT64_MAX);
	ck_assert_int_eq(json_integer_value(json_object_get(root, "total_after")), INT64_MIN);
	json_array_foreach(json_object_get(root, "rows"), i, r)
		if (!strcmp(json_string_value(json_object_get(r, "name")), "a"))
			ck_assert_int_eq(json_integer_value(json_object_get(r, "delta")), INT64_MIN);
	json_decref(root);
	cp_fn_table_free(t);
	cp_profile_free(p);
	cp_profile_free(n);
}
END_TEST

START_TEST(test_render_json_escaping)
{
	struct cp_profile *p = folded("main;say \"hi\"\\n;caf\xc3\xa9<T> 2\n", NULL, NULL);
	json_t *root = render_json(p, false), *top;

	top = json_object_get(root, "top");
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(top, 0), "name")), "caf\xc3\xa9<T>");
	ck_assert_ptr_nonnull(child_named(child_named(json_object_get(root, "tree"), "main"), "say \"hi\"\\n"));
	json_decref(root);
	cp_profile_free(p);
}
END_TEST

/* ---- diff ---- */

static struct cp_fn_table *diff_table(void)
{
	struct cp_profile *before = folded("main;alpha 300\nmain;beta 200\nmain;gamma 100\n", NULL, NULL);
	struct cp_profile *after = folded("main;alpha 100\nmain;beta 200\nmain;gamma 300\nmain;delta 50\n", NULL, NULL);
	struct cp_fn_table *t = cp_fn_table_new();

	ck_assert_int_eq(cp_fn_table_add(t, before, 0, 0), 0);
	ck_assert_int_eq(cp_fn_table_add(t, after, 0, 1), 0);
	cp_profile_free(before);
	cp_profile_free(after);
	return t;
}

struct diff_row {
	char before[32], after[32], delta[32], deltap[32], nd[32], ndp[32], name[128];
};

static int diff_rows(const char *out, struct diff_row *rows, int max)
{
	const char *s = strstr(out, "norm%\n");
	int n = 0;

	ck_assert_ptr_nonnull(s);
	s += 6;
	while (*s && n < max) {
		const char *eol = strchr(s, '\n');
		char line[512];
		size_t len = eol ? (size_t)(eol - s) : strlen(s);

		memcpy(line, s, len);
		line[len] = '\0';
		ck_assert_int_eq(sscanf(line, "%31s %31s %31s %31s %31s %31s %127[^\n]", rows[n].before, rows[n].after,
					rows[n].delta, rows[n].deltap, rows[n].nd, rows[n].ndp, rows[n].name),
				 7);
		n++;
		s = eol ? eol + 1 : s + len;
	}
	return n;
}

#define ck_drow(r, b, a, d, dp, n, np, nm)                                                         \
	do {                                                                                       \
		ck_assert_str_eq((r).name, nm);                                                    \
		ck_assert_str_eq((r).before, b);                                                   \
		ck_assert_str_eq((r).after, a);                                                    \
		ck_assert_str_eq((r).delta, d);                                                    \
		ck_assert_str_eq((r).deltap, dp);                                                  \
		ck_assert_str_eq((r).nd, n);                                                       \
		ck_assert_str_eq((r).ndp, np);                                                     \
	} while (0)

START_TEST(test_render_diff_table)
{
	struct cp_fn_table *t = diff_table();
	struct cp_diff_opts o = { .unit = "count" };
	struct diff_row rows[10];
	struct capture c;
	char *out;

	ck_assert_int_eq(t->total[0], 600);
	ck_assert_int_eq(t->total[1], 650);
	ck_assert_int_eq(cp_render_diff_table(cap_open(&c), t, &o), 0);
	out = cap_close(&c);
	ck_assert_contains(out, "Before: 600 total   After: 650 total   Change: 50 (+8.33%)\n");
	ck_assert_contains(out, "Sorted by |delta|");
	ck_assert_int_eq(diff_rows(out, rows, 10), 5);
	/* |delta| 200, 200 (ties: larger after-cum first), 50, 0, 0 */
	ck_drow(rows[0], "100", "300", "200", "+200.00%", "192", "+176.92%", "gamma");
	ck_drow(rows[1], "300", "100", "-200", "-66.67%", "-225", "-69.23%", "alpha");
	ck_drow(rows[2], "0", "50", "50", "new", "50", "new", "delta");
	ck_drow(rows[3], "0", "0", "0", "0%", "0", "0%", "main");
	ck_drow(rows[4], "200", "200", "0", "+0.00%", "-17", "-7.69%", "beta");
	free(out);

	/* by the normalised delta: alpha (225) before gamma (191.7), beta (16.7) before main */
	o.normalize = true;
	o.limit = 4;
	ck_assert_int_eq(cp_render_diff_table(cap_open(&c), t, &o), 0);
	out = cap_close(&c);
	ck_assert_contains(out, "Sorted by |norm.delta|");
	ck_assert_contains(out, "Showing top 4 functions out of 5\n");
	ck_assert_int_eq(diff_rows(out, rows, 10), 4);
	ck_assert_str_eq(rows[0].name, "alpha");
	ck_assert_str_eq(rows[1].name, "gamma");
	ck_assert_str_eq(rows[2].name, "delta");
	ck_assert_str_eq(rows[3].name, "beta");
	free(out);
	cp_fn_table_free(t);
}
END_TEST

START_TEST(test_render_diff_json)
{
	struct cp_fn_table *t = diff_table();
	struct cp_diff_opts o = { .unit = "count" };
	struct capture c;
	json_error_t jerr;
	json_t *root, *rows, *r;
	char *out;

	ck_assert_int_eq(cp_render_diff_json(cap_open(&c), t, &o), 0);
	out = cap_close(&c);
	root = json_loads(out, 0, &jerr);
	ck_assert_msg(root != NULL, "bad JSON (%s): %s", jerr.text, out);
	free(out);
	ck_assert_str_eq(json_string_value(json_object_get(root, "unit")), "count");
	ck_assert_int_eq(json_integer_value(json_object_get(root, "total_before")), 600);
	ck_assert_int_eq(json_integer_value(json_object_get(root, "total_after")), 650);
	rows = json_object_get(root, "rows");
	ck_assert_uint_eq(json_array_size(rows), 5);
	r = json_array_get(rows, 0);
	ck_assert_str_eq(json_string_value(json_object_get(r, "name")), "gamma");
	ck_assert_int_eq(json_integer_value(json_object_get(r, "delta")), 200);
	ck_assert_double_eq_tol(json_real_value(json_object_get(r, "delta_pct")), 200.0, 1e-9);
	ck_assert_double_eq_tol(json_real_value(json_object_get(r, "norm_delta")), 300 - 100 * 650.0 / 600, 1e-9);
	ck_assert_double_eq_tol(json_real_value(json_object_get(r, "norm_pct")), 176.923076923, 1e-6);
	r = json_array_get(rows, 1);
	ck_assert_str_eq(json_string_value(json_object_get(r, "name")), "alpha");
	ck_assert_int_eq(json_integer_value(json_object_get(r, "before")), 300);
	ck_assert_int_eq(json_integer_value(json_object_get(r, "after")), 100);
	ck_assert_int_eq(json_integer_value(json_object_get(r, "delta")), -200);
	ck_assert_double_eq_tol(json_real_value(json_object_get(r, "norm_delta")), -225.0, 1e-9);
	/* a function new in after: no percentage (nothing to divide by) */
	r = json_array_get(rows, 2);
	ck_assert_str_eq(json_string_value(json_object_get(r, "name")), "delta");
	ck_assert_int_eq(json_integer_value(json_object_get(r, "before")), 0);
	ck_assert_ptr_null(json_object_get(r, "delta_pct"));
	ck_assert_ptr_null(json_object_get(r, "norm_pct"));
	json_decref(root);

	/* normalised order and a limit */
	o.normalize = true;
	o.limit = 2;
	ck_assert_int_eq(cp_render_diff_json(cap_open(&c), t, &o), 0);
	out = cap_close(&c);
	root = json_loads(out, 0, &jerr);
	ck_assert_ptr_nonnull(root);
	free(out);
	rows = json_object_get(root, "rows");
	ck_assert_uint_eq(json_array_size(rows), 2);
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(rows, 0), "name")), "alpha");
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(rows, 1), "name")), "gamma");
	json_decref(root);
	cp_fn_table_free(t);
}
END_TEST

START_TEST(test_render_diff_units)
{
	/* nanoseconds scaled in the unit of the larger total */
	struct cp_profile *before = folded("main;f 2000000000\n", "cpu", "nanoseconds");
	struct cp_profile *after = folded("main;f 1000000000\nmain;g 500000000\n", "cpu", "nanoseconds");
	struct cp_fn_table *t = cp_fn_table_new();
	struct cp_diff_opts o = { .unit = "nanoseconds" };
	struct diff_row rows[10];
	struct capture c;
	char *out;

	ck_assert_int_eq(cp_fn_table_add(t, before, 0, 0), 0);
	ck_assert_int_eq(cp_fn_table_add(t, after, 0, 1), 0);
	ck_assert_int_eq(cp_render_diff_table(cap_open(&c), t, &o), 0);
	out = cap_close(&c);
	ck_assert_contains(out, "Before: 2s total   After: 1.50s total   Change: -0.50s (-25.00%)\n");
	ck_assert_int_eq(diff_rows(out, rows, 10), 3);
	ck_drow(rows[0], "2s", "1s", "-1s", "-50.00%", "-0.50s", "-33.33%", "f");
	ck_drow(rows[1], "0", "0.50s", "0.50s", "new", "0.50s", "new", "g");
	free(out);
	cp_fn_table_free(t);
	cp_profile_free(before);
	cp_profile_free(after);
}
END_TEST

/* ---- significance by frame (diffstat.h) ---- */

/* 8 intervals a side of 1,000 samples: light and heavy, both calling spin,
 * trade share under hot (light 10% -> 35%, heavy 50% -> 25%), whose total
 * share stays at 60% give or take the intervals' spread; steady has the
 * rest */
#define NIV 8
static void trade(struct cp_profile *iv[2][NIV])
{
	static const int a[2][NIV] = { { -8, 3, 5, -2, 7, -6, 1, 0 }, { 2, -4, 6, -7, 3, 0, -1, 5 } };
	static const int b[2][NIV] = { { 4, -5, 2, 6, -3, -1, -7, 4 }, { -6, 1, 5, -2, 4, -3, 7, -5 } };
	char text[160];

	for (int s = 0; s < 2; s++)
		for (int k = 0; k < NIV; k++) {
			int light = (s ? 350 : 100) + a[s][k], heavy = (s ? 250 : 500) + b[s][k];

			snprintf(text, sizeof(text), "main;hot;light;spin %d\nmain;hot;heavy;spin %d\nmain;steady %d\n", light,
				 heavy, 1000 - light - heavy);
			iv[s][k] = folded(text, NULL, NULL);
		}
}

static void trade_free(struct cp_profile *iv[2][NIV])
{
	for (int s = 0; s < 2; s++)
		for (int k = 0; k < NIV; k++)
			cp_profile_free(iv[s][k]);
}

#define ck_stat(ds, row, kind, is_tested, is_significant)                                            \
	do {                                                                                       \
		const struct cp_fn_stat *s_ = &(ds)->rows[row][kind];                              \
		ck_assert_msg(s_->tested == (is_tested) && s_->significant == (is_significant),    \
			      "row %u %s: tested %d significant %d (q %g, change %g)", (unsigned)(row), \
			      (kind) ? "total" : "self", s_->tested, s_->significant, s_->q,          \
			      s_->share[1] - s_->share[0]);                                          \
	} while (0)

START_TEST(test_diffstat_frames)
{
	struct cp_profile *iv[2][NIV];
	struct cp_tree *t = cp_tree_new();
	struct cp_fn_table *ft = cp_fn_table_new();
	struct cp_diffstat ds, fs;
	struct cp_diffstat_source src;
	const size_t n[2] = { NIV, NIV };
	const int vidx[2] = { 0, 0 };
	uint32_t hot, light, lspin, hspin, heavy, steady;

	trade(iv);
	ck_assert_ptr_nonnull(t);
	ck_assert_ptr_nonnull(ft);
	for (int s = 0; s < 2; s++)
		for (int k = 0; k < NIV; k++) {
			ck_assert_int_eq(cp_tree_add(t, iv[s][k], 0, s, false), 0);
			ck_assert_int_eq(cp_fn_table_add(ft, iv[s][k], 0, s), 0);
		}
	ck_assert_int_eq(cp_tree_sort(t), 0); /* the children's order is the tree's own, not the intervals' */
	hot = node_at(t, "main;hot");
	light = node_at(t, "main;hot;light");
	lspin = node_at(t, "main;hot;light;spin");
	heavy = node_at(t, "main;hot;heavy");
	hspin = node_at(t, "main;hot;heavy;spin");
	steady = node_at(t, "main;steady");
	ck_assert_int_eq(cp_tree_find(t, light, "spin"), lspin);
	ck_assert_int_eq(cp_tree_find(t, hot, "spin"), -1);
	ck_assert_int_eq(cp_tree_find(t, hot, "nosuch"), -1);

	/* by frame, over the intervals: Welch's test per stack prefix */
	cp_diffstat_frames(t, &src);
	ck_assert_uint_eq(src.nrows, t->nnodes);
	ck_assert_int_eq(cp_diffstat_intervals(&src, (struct cp_profile *const *const[2]){ iv[0], iv[1] }, n, vidx, 0, -1,
					       &ds), 0);
	ck_assert_uint_eq(ds.nrows, t->nnodes);
	ck_assert_uint_eq(ds.n[0], NIV);
	ck_assert_uint_eq(ds.n[1], NIV);
	ck_stat(&ds, 0, 1, false, false); /* the root: 100% on both sides */
	ck_stat(&ds, hot, 0, false, false); /* no self */
	ck_stat(&ds, hot, 1, true, false);  /* its total share stays */
	ck_stat(&ds, light, 0, false, false);
	ck_stat(&ds, light, 1, true, true); /* its callee's share moved: its total did */
	ck_stat(&ds, heavy, 1, true, true);
	ck_stat(&ds, lspin, 0, true, true); /* the frames where the samples are */
	ck_stat(&ds, hspin, 0, true, true);
	ck_stat(&ds, steady, 0, true, false);
	ck_assert_double_eq_tol(ds.rows[light][1].share[0], 0.1, 0.002);
	ck_assert_double_eq_tol(ds.rows[light][1].share[1], 0.35, 0.002);
	ck_assert_double_gt(ds.rows[lspin][0].t.delta, 0.2);
	ck_assert_double_lt(ds.rows[hspin][0].t.delta, -0.2);
	ck_assert_uint_eq(ds.nsignificant, 4); /* light, heavy and the spin under each */

	/* by function, the same data: spin's self share is hot's total, which stays */
	cp_diffstat_functions(ft, &src);
	ck_assert_int_eq(cp_diffstat_intervals(&src, (struct cp_profile *const *const[2]){ iv[0], iv[1] }, n, vidx, 0, -1,
					       &fs), 0);
	ck_stat(&fs, cp_fn_table_find(ft, "spin"), 0, true, false);
	ck_stat(&fs, cp_fn_table_find(ft, "light"), 1, true, true);
	cp_diffstat_release(&fs);

	/* by frame, on counts: the sums, 8,000 samples a side */
	cp_diffstat_release(&ds);
	cp_diffstat_frames(t, &src);
	ck_assert_int_eq(cp_diffstat_counts(&src, (const double[2]){ 8000, 8000 }, 0, -1, &ds), 0);
	ck_assert_int_eq(ds.method, CP_DIFFSTAT_COUNTS);
	ck_stat(&ds, hot, 1, true, false);
	ck_stat(&ds, lspin, 0, true, true);
	ck_stat(&ds, light, 1, true, true);
	ck_stat(&ds, steady, 0, true, false);
	cp_diffstat_release(&ds);
	cp_diffstat_release(&ds); /* twice is harmless */

	cp_fn_table_free(ft);
	cp_tree_free(t);
	trade_free(iv);
}
END_TEST

/* an interval's frame that the diff's tree lacks (a filter took it out of
 * the sums) is left out; a side whose intervals hold nothing is -EINVAL */
START_TEST(test_diffstat_frames_filtered)
{
	struct cp_profile *iv[2][NIV], *extra[NIV];
	struct cp_tree *t = cp_tree_new();
	struct cp_diffstat ds;
	struct cp_diffstat_source src;
	const size_t n[2] = { NIV, NIV };
	const int vidx[2] = { 0, 0 };

	trade(iv);
	for (int s = 0; s < 2; s++)
		for (int k = 0; k < NIV; k++)
			ck_assert_int_eq(cp_tree_add(t, iv[s][k], 0, s, false), 0);
	for (int k = 0; k < NIV; k++) { /* before's intervals hold a frame the sums do not */
		ck_assert_int_eq(cp_profile_merge(iv[0][k], extra[k] = folded("main;gc;sweep 100\n", NULL, NULL), NULL), 0);
		cp_profile_free(extra[k]);
	}
	cp_diffstat_frames(t, &src);
	ck_assert_int_eq(cp_diffstat_intervals(&src, (struct cp_profile *const *const[2]){ iv[0], iv[1] }, n, vidx, 0, -1,
					       &ds), 0);
	ck_assert_uint_eq(ds.nrows, t->nnodes);
	ck_assert_int_eq(node_at(t, "main;gc"), UINT32_MAX);
	/* the shares are of the intervals' totals: light's before is 100 of 1,100 */
	ck_assert_double_eq_tol(ds.rows[node_at(t, "main;hot;light")][1].share[0], 100.0 / 1100, 0.002);
	cp_diffstat_release(&ds);
	ck_assert_int_eq(cp_diffstat_intervals(&src, (struct cp_profile *const *const[2]){ iv[0], iv[1] },
					       (const size_t[2]){ NIV, 0 }, vidx, 0, -1, &ds), -EINVAL);
	cp_tree_free(t);
	trade_free(iv);
}
END_TEST

/* cp_render_diff: the flame graph colours each frame by its own tests, the
 * JSON tree carries them */
START_TEST(test_render_diff_frames)
{
	struct cp_profile *iv[2][NIV], *sum[2];
	struct cp_render_diff_opts o = { .min_change = -1, .with_tree = true };
	struct capture c;
	json_error_t jerr;
	json_t *root, *hot, *light;
	char *out, *p;

	trade(iv);
	for (int s = 0; s < 2; s++) {
		sum[s] = folded("", NULL, NULL);
		for (int k = 0; k < NIV; k++)
			ck_assert_int_eq(cp_profile_merge(sum[s], iv[s][k], NULL), 0);
		o.iv[s] = iv[s];
		o.niv[s] = NIV;
	}
	ck_assert_int_eq(cp_render_diff(cap_open(&c), "flamegraph", sum[0], 0, sum[1], 0, &o), 0);
	out = cap_close(&c);
	ck_assert_contains(out, "grey: not significant");
	ck_assert_ptr_nonnull(p = strstr(out, "<title>light ("));
	ck_assert_contains(p, "total share +25.");
	ck_assert_msg(strstr(p, "fill=\"rgb(255,") && strstr(p, "fill=\"rgb(255,") < strchr(p, '\n'), "light is not red: %.300s", p);
	ck_assert_ptr_nonnull(p = strstr(out, "<title>hot ("));
	ck_assert_msg(strstr(p, "fill=\"rgb(221,221,221)\"") && strstr(p, "fill=\"rgb(221,221,221)\"") < strchr(p, '\n'),
		      "hot is not grey: %.300s", p);
	free(out);

	ck_assert_int_eq(cp_render_diff(cap_open(&c), "json", sum[0], 0, sum[1], 0, &o), 0);
	out = cap_close(&c);
	root = json_loads(out, 0, &jerr);
	ck_assert_msg(root != NULL, "bad JSON (%s)", jerr.text);
	free(out);
	hot = json_array_get(json_object_get(json_array_get(json_object_get(json_object_get(root, "tree"), "children"), 0),
					     "children"), 0);
	if (strcmp(json_string_value(json_object_get(hot, "name")), "hot"))
		hot = json_array_get(json_object_get(json_array_get(json_object_get(json_object_get(root, "tree"), "children"), 0),
						     "children"), 1);
	ck_assert_str_eq(json_string_value(json_object_get(hot, "name")), "hot");
	ck_assert_ptr_nonnull(json_object_get(hot, "total_q"));
	ck_assert_ptr_null(json_object_get(hot, "self_q")); /* no self: not tested */
	ck_assert_ptr_null(json_object_get(hot, "significant"));
	light = json_array_get(json_object_get(hot, "children"), 0);
	if (strcmp(json_string_value(json_object_get(light, "name")), "light"))
		light = json_array_get(json_object_get(hot, "children"), 1);
	ck_assert_str_eq(json_string_value(json_object_get(light, "name")), "light");
	ck_assert_str_eq(json_string_value(json_object_get(light, "significant")), "total");
	ck_assert_double_eq_tol(json_real_value(json_object_get(light, "total_change")), 0.25, 0.01);
	ck_assert_double_lt(json_real_value(json_object_get(light, "total_q")), 0.0001);
	json_decref(root);

	/* without the test: the self value's change, no grey */
	o.niv[0] = o.niv[1] = 0;
	ck_assert_int_eq(cp_render_diff(cap_open(&c), "flamegraph", sum[0], 0, sum[1], 0, &o), 0);
	out = cap_close(&c);
	ck_assert_ptr_null(strstr(out, "rgb(221,221,221)"));
	ck_assert_ptr_null(strstr(out, "share"));
	free(out);
	cp_profile_free(sum[0]);
	cp_profile_free(sum[1]);
	trade_free(iv);
}
END_TEST

/* ---- flame graph, once ---- */

START_TEST(test_render_flame_names)
{
	struct cp_profile *p = folded("main;work;alpha 5\nmain;work;beta 3\nmain;gc_sweep 2\n", "cpu", "nanoseconds");
	struct cp_tree *t = cp_tree_new();
	struct cp_flame_opts o = { 0 };
	struct capture c;
	char *out;

	ck_assert_int_eq(cp_tree_add(t, p, 0, 0, false), 0);
	ck_assert_int_eq(cp_tree_sort(t), 0);
	o.title = "My Title";
	o.unit = "nanoseconds";
	ck_assert_int_eq(cp_render_flame(cap_open(&c), t, &o), 0);
	out = cap_close(&c);
	ck_assert_contains(out, "<svg");
	ck_assert_contains(out, "My Title");
	ck_assert_contains(out, "main");
	ck_assert_contains(out, "work");
	ck_assert_contains(out, "alpha");
	ck_assert_contains(out, "beta");
	ck_assert_contains(out, "gc_sweep");
	ck_assert_contains(out, "</svg>");
	free(out);
	cp_tree_free(t);
	cp_profile_free(p);
}
END_TEST


/* nodes with a value above v */
static size_t count_above(json_t *n, json_int_t v)
{
	size_t c = json_integer_value(json_object_get(n, "value")) > v, i;
	json_t *k;

	json_array_foreach(json_object_get(n, "children"), i, k)
		c += count_above(k, v);
	return c;
}

/* walk a JSON tree: count nodes, check each child is no larger than its
 * parent, and note the smallest value kept */
static void walk(json_t *n, json_int_t parent, size_t *count, json_int_t *min)
{
	json_int_t v = json_integer_value(json_object_get(n, "value"));
	json_t *k;
	size_t i;

	ck_assert(v <= parent);
	(*count)++;
	if (v < *min)
		*min = v;
	json_array_foreach(json_object_get(n, "children"), i, k)
		walk(k, v, count, min);
}

START_TEST(test_render_json_max_nodes)
{
	/* a random tree of a few hundred nodes with many equal values */
	char *text = NULL, line[256];
	size_t len = 0, i, count;
	FILE *f = open_memstream(&text, &len);
	uint32_t rng = 12345;
	struct cp_profile *p;
	struct cp_json_opts o = { false, 0, NULL };
	struct capture c;
	json_t *root, *full;
	json_error_t jerr;
	json_int_t min;
	char *out;

	ck_assert_ptr_nonnull(f);
	for (i = 0; i < 400; i++) {
		int d, depth;
		size_t n = 0;

		rng = rng * 1103515245 + 12345;
		depth = 1 + (int)(rng >> 16) % 6;
		for (d = 0; d < depth; d++) {
			rng = rng * 1103515245 + 12345;
			n += (size_t)snprintf(line + n, sizeof(line) - n, "%sf%u", d ? ";" : "", (rng >> 16) % 5);
		}
		rng = rng * 1103515245 + 12345;
		fprintf(f, "%s %u\n", line, 1 + (rng >> 16) % 3);
	}
	ck_assert_int_eq(fclose(f), 0);
	p = folded(text, NULL, NULL);
	free(text);
	full = render_json(p, false);
	count = 0;
	min = INT64_MAX;
	walk(json_object_get(full, "tree"), INT64_MAX, &count, &min);
	ck_assert_uint_gt(count, 100);
	ck_assert_ptr_null(json_object_get(full, "truncated"));
	for (o.max_nodes = 1; o.max_nodes < count; o.max_nodes = o.max_nodes * 3 + 1) {
		size_t kept = 0;
		json_int_t kept_min = INT64_MAX;

		ck_assert_int_eq(cp_render_json_opts(cap_open(&c), p, 0, &o), 0);
		out = cap_close(&c);
		root = json_loads(out, 0, &jerr);
		ck_assert_msg(root != NULL, "bad JSON (%s)", jerr.text);
		free(out);
		walk(json_object_get(root, "tree"), INT64_MAX, &kept, &kept_min);
		/* exactly max nodes, hanging together from the root (walk reaches
		 * only connected nodes), and the largest ones */
		ck_assert_uint_eq(kept, o.max_nodes);
		ck_assert(json_is_true(json_object_get(root, "truncated")));
		ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(root, "tree"), "value")),
				 json_integer_value(json_object_get(json_object_get(full, "tree"), "value")));
		/* no node left out is larger than the smallest one kept */
		ck_assert_uint_le(count_above(json_object_get(full, "tree"), kept_min), o.max_nodes);
		json_decref(root);
	}
	json_decref(full);
	cp_profile_free(p);
}
END_TEST

/* The format table: every row named (and by the API), with a Content-Type and at least one
 * function; a kind finds only its rows; the lists for messages are in the table's order; every
 * row's functions render (pprof gzipped, the others text whose first byte says what it is); an
 * unknown name is -EINVAL naming the formats. */
START_TEST(test_format_table)
{
	struct cp_profile *p = folded(abc, NULL, NULL), *q = folded("a;b;c 1\na;d 4\n", NULL, NULL);
	struct cp_render_diff_opts dopt = { 0 };
	struct cp_render_opts ropt = { 0 };
	struct capture c;
	char names[128], *out;
	size_t n = 0;

	for (const struct cp_render_format *f = cp_render_formats; f->name; f++, n++) {
		struct cp_diff_pair d = { p, p, q, 0, 0 };

		ck_assert_ptr_nonnull(f->api);
		ck_assert_ptr_nonnull(f->mime);
		ck_assert(f->profile || f->diff);
		ck_assert_ptr_eq(cp_render_format_api(f->api, CP_RENDER_PROFILE | CP_RENDER_DIFF), f);
		for (const struct cp_render_format *g = cp_render_formats; g < f; g++)
			ck_assert_str_ne(g->name, f->name);
		for (int k = 0; k < 2; k++) {
			if (!(k ? (void *)f->diff : (void *)f->profile))
				continue;
			ck_assert_int_eq(k ? f->diff(cap_open(&c), &d, &dopt) : f->profile(cap_open(&c), p, 0, &ropt), 0);
			out = cap_close(&c);
			ck_assert_uint_gt(c.len, 10);
			if (f->binary)
				ck_assert(out[0] == (char)0x1f && out[1] == (char)0x8b);
			else
				ck_assert_ptr_null(memchr(out, 0, c.len));
			free(out);
		}
	}
	ck_assert_uint_ge(n, 6);
	ck_assert_ptr_null(cp_render_format_find("table", CP_RENDER_PROFILE));
	ck_assert_ptr_null(cp_render_format_find("top", CP_RENDER_DIFF));
	ck_assert_ptr_null(cp_render_format_find("svg", CP_RENDER_PROFILE));
	ck_assert_str_eq(cp_render_format_api("svg", CP_RENDER_DIFF)->name, "flamegraph");
	ck_assert_str_eq(cp_render_format_names(CP_RENDER_PROFILE, false, NULL, names, sizeof(names)),
			 "top, folded, flamegraph, json or pprof");
	ck_assert_str_eq(cp_render_format_names(CP_RENDER_DIFF, true, "more", names, sizeof(names)),
			 "table, folded, svg, json, pprof or more");
	ck_assert_str_eq(cp_render_format_names(CP_RENDER_DIFF, false, NULL, names, 12), "table, fold");
	ck_assert_int_eq(cp_render_profile(cap_open(&c), "svg", p, 0, NULL), -EINVAL);
	free(cap_close(&c));
	ck_assert_contains(cp_errmsg(EINVAL), "choose top, folded, flamegraph, json or pprof");
	ck_assert_int_eq(cp_render_diff(cap_open(&c), "top", p, 0, q, 0, &dopt), -EINVAL);
	free(cap_close(&c));
	ck_assert_contains(cp_errmsg(EINVAL), "choose table, folded, flamegraph, json or pprof");
	cp_profile_free(p);
	cp_profile_free(q);
}
END_TEST

static Suite *render_suite(void)
{
	Suite *s = suite_create("render");
	TCase *units = tcase_create("units"), *tree = tcase_create("tree"), *top = tcase_create("top"),
	      *json = tcase_create("json"), *diff = tcase_create("diff"), *flame = tcase_create("flame");

	tcase_add_test(units, test_format_value);
	tcase_add_test(units, test_format_scaled);
	tcase_add_test(units, test_format_percent);
	suite_add_tcase(s, units);

	tcase_add_test(tree, test_tree);
	tcase_add_test(tree, test_tree_sort_order);
	tcase_add_test(tree, test_tree_invert);
	tcase_add_test(tree, test_tree_two_sides);
	tcase_add_test(tree, test_tree_value_index);
	tcase_add_test(tree, test_fn_table);
	tcase_add_test(tree, test_fn_table_recursion);
	suite_add_tcase(s, tree);

	tcase_add_test(top, test_render_top);
	tcase_add_test(top, test_render_top_units);
	tcase_add_test(top, test_render_top_write_error);
	suite_add_tcase(s, top);

	tcase_add_test(json, test_render_json);
	tcase_add_test(json, test_render_json_escaping);
	tcase_add_test(json, test_render_json_int64);
	tcase_add_test(json, test_render_json_max_nodes);
	suite_add_tcase(s, json);

	tcase_add_test(diff, test_render_diff_table);
	tcase_add_test(diff, test_render_diff_json);
	tcase_add_test(diff, test_render_diff_units);
	tcase_add_test(diff, test_diffstat_frames);
	tcase_add_test(diff, test_diffstat_frames_filtered);
	tcase_add_test(diff, test_render_diff_frames);
	suite_add_tcase(s, diff);

	tcase_add_test(flame, test_render_flame_names);
	tcase_add_test(flame, test_format_table);
	suite_add_tcase(s, flame);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(render_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

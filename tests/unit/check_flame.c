/* SPDX-License-Identifier: MIT */
/* cp_render_flame on call trees built by hand. */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "render/render.h"

/* A tree built directly: names interned, nodes appended, each new child
 * linked after its last sibling (the order to draw). */
static struct cp_tree *tree_new(void)
{
	struct cp_tree *t = calloc(1, sizeof(*t));

	ck_assert_ptr_nonnull(t);
	ck_assert_int_eq(cp_strtab_init(&t->names), 0);
	t->cap = 64;
	t->nodes = calloc(t->cap, sizeof(*t->nodes));
	ck_assert_ptr_nonnull(t->nodes);
	t->nnodes = 1; /* the root: name 0 (""), its own parent, depth 0 */
	return t;
}

static void tree_free(struct cp_tree *t)
{
	cp_strtab_release(&t->names);
	free(t->nodes);
	free(t);
}

/* Adds a child of parent with side 0 values (total, self) and side 1 values
 * (total1, self1); the root's values are set directly by the tests. */
static uint32_t add4(struct cp_tree *t, uint32_t parent, const char *name, int64_t total,
		     int64_t self, int64_t total1, int64_t self1)
{
	struct cp_tree_node *n;
	uint32_t id = t->nnodes++, *link;
	int64_t s;

	ck_assert_uint_lt(id, t->cap);
	s = cp_strtab_intern(&t->names, name, strlen(name));
	ck_assert_int_ge(s, 0);
	n = &t->nodes[id];
	n->name = (uint32_t)s;
	n->parent = parent;
	n->depth = t->nodes[parent].depth + 1;
	n->total[0] = total;
	n->self[0] = self;
	n->total[1] = total1;
	n->self[1] = self1;
	for (link = &t->nodes[parent].child; *link; link = &t->nodes[*link].sibling)
		;
	*link = id;
	if (n->depth > t->max_depth)
		t->max_depth = n->depth;
	return id;
}

static uint32_t add(struct cp_tree *t, uint32_t parent, const char *name, int64_t total, int64_t self)
{
	return add4(t, parent, name, total, self, 0, 0);
}

static char *render(const struct cp_tree *t, const struct cp_flame_opts *o)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(cp_render_flame(f, t, o), 0);
	ck_assert_int_eq(fclose(f), 0);
	ck_assert_uint_eq(strlen(buf), len);
	return buf;
}

/* The <rect> of the frame whose tooltip starts with "name (" (XML-escaped). */
static const char *frame_rect(const char *svg, const char *name)
{
	char key[256];
	const char *p, *r;

	snprintf(key, sizeof(key), "<g><title>%s (", name);
	p = strstr(svg, key);
	if (!p)
		return NULL;
	ck_assert_ptr_null(strstr(p + 1, key)); /* one frame only */
	r = strstr(p, "<rect ");
	ck_assert_ptr_nonnull(r);
	return r;
}

static double attr(const char *el, const char *name)
{
	char key[64];
	const char *p, *end = strchr(el, '>');

	snprintf(key, sizeof(key), " %s=\"", name);
	p = strstr(el, key);
	ck_assert_msg(p && p < end, "no %s in %.60s", name, el);
	return strtod(p + strlen(key), NULL);
}

static void fill(const char *el, int *r, int *g, int *b)
{
	const char *p = strstr(el, " fill=\"rgb(");

	ck_assert_ptr_nonnull(p);
	ck_assert_int_eq(sscanf(p, " fill=\"rgb(%d,%d,%d)\"", r, g, b), 3);
}

/* The label text of the frame named name. */
static char *label(const char *svg, const char *name)
{
	const char *r = frame_rect(svg, name), *p, *e;

	ck_assert_ptr_nonnull(r);
	p = strstr(r, "<text ");
	ck_assert_ptr_nonnull(p);
	p = strchr(p, '>') + 1;
	e = strstr(p, "</text>");
	ck_assert_ptr_nonnull(e);
	return strndup(p, (size_t)(e - p));
}

static size_t count(const char *s, const char *needle)
{
	size_t n = 0;

	for (; (s = strstr(s, needle)); s++)
		n++;
	return n;
}

static void assert_svg(const char *svg)
{
	size_t n = strlen(svg);

	ck_assert_msg(strncmp(svg, "<?xml ", 6) == 0, "no XML declaration");
	ck_assert_ptr_nonnull(strstr(svg, "<svg "));
	ck_assert_ptr_nonnull(strstr(svg, "xmlns=\"http://www.w3.org/2000/svg\""));
	ck_assert(n > 8 && strcmp(svg + n - 7, "</svg>\n") == 0);
	ck_assert_uint_eq(count(svg, "<g>"), count(svg, "</g>") - 1); /* + the frames group */
	ck_assert_uint_eq(count(svg, "<script"), 1);
	ck_assert_uint_eq(count(svg, "]]>"), 1);
	ck_assert_ptr_nonnull(strstr(svg, "<script type=\"text/ecmascript\"><![CDATA["));
	ck_assert_uint_eq(count(svg, "http"), 1); /* the namespace: no external resources */
	ck_assert_ptr_null(strstr(svg, "href"));
}

/* root 1000 = a 500 (b 250 + c 250) + d 250 + self 250 */
static struct cp_tree *sample(void)
{
	struct cp_tree *t = tree_new();
	uint32_t a;

	t->nodes[0].total[0] = 1000;
	t->nodes[0].self[0] = 250;
	a = add(t, 0, "a", 500, 0);
	add(t, a, "b", 250, 250);
	add(t, a, "c", 250, 250);
	add(t, 0, "d", 250, 250);
	return t;
}

START_TEST(test_structure)
{
	struct cp_tree *t = sample();
	struct cp_flame_opts o = { .unit = "ns" };
	char *svg = render(t, &o);

	assert_svg(svg);
	ck_assert_ptr_nonnull(strstr(svg, " width=\"1200\""));
	ck_assert_ptr_nonnull(strstr(svg, ">Flame Graph</text>"));
	ck_assert_ptr_nonnull(strstr(svg, ">Reset Zoom</text>"));
	ck_assert_ptr_nonnull(strstr(svg, ">Search</text>"));
	ck_assert_ptr_nonnull(strstr(svg, "id=\"details\""));
	ck_assert_ptr_nonnull(strstr(svg, "id=\"matched\""));
	ck_assert_ptr_null(strstr(svg, "no samples"));
	/* five frames, the root shown as "all", tooltips with value and percent */
	ck_assert_uint_eq(count(svg, "<rect "), 6); /* + the background */
	ck_assert_ptr_nonnull(strstr(svg, "<title>all (1us, 100.00%)</title>"));
	ck_assert_ptr_nonnull(strstr(svg, "<title>a (500ns, 50.00%)</title>"));
	ck_assert_ptr_nonnull(strstr(svg, "<title>c (250ns, 25.00%)</title>"));
	free(svg);
	tree_free(t);
}
END_TEST

START_TEST(test_geometry)
{
	struct cp_tree *t = sample();
	struct cp_flame_opts o = { .unit = "ns", .width = 1000 };
	char *svg = render(t, &o);
	const char *all = frame_rect(svg, "all"), *a = frame_rect(svg, "a"), *b = frame_rect(svg, "b"),
		   *c = frame_rect(svg, "c"), *d = frame_rect(svg, "d");

	ck_assert_ptr_nonnull(strstr(svg, " width=\"1000\""));
	ck_assert(all && a && b && c && d);
	/* widths proportional to totals, x the running sum within the parent */
	ck_assert_double_gt(attr(all, "width"), 900);
	ck_assert_double_eq_tol(attr(a, "width"), attr(all, "width") / 2, 1e-3);
	ck_assert_double_eq_tol(attr(b, "width"), attr(all, "width") / 4, 1e-3);
	ck_assert_double_eq_tol(attr(a, "x"), attr(all, "x"), 1e-3);
	ck_assert_double_eq_tol(attr(b, "x"), attr(a, "x"), 1e-3);
	ck_assert_double_eq_tol(attr(c, "x"), attr(b, "x") + attr(b, "width"), 1e-3);
	ck_assert_double_eq_tol(attr(d, "x"), attr(a, "x") + attr(a, "width"), 1e-3);
	/* a flame graph grows upward: children above their parent */
	ck_assert_double_eq_tol(attr(a, "y"), attr(all, "y") - 16, 1e-9);
	ck_assert_double_eq_tol(attr(b, "y"), attr(a, "y") - 16, 1e-9);
	ck_assert_double_eq_tol(attr(d, "y"), attr(a, "y"), 1e-9);
	ck_assert_double_lt(attr(all, "y") + attr(all, "height"), attr(strstr(svg, "<svg "), "height"));
	free(svg);

	o.icicle = true;
	svg = render(t, &o);
	all = frame_rect(svg, "all");
	b = frame_rect(svg, "b");
	ck_assert_double_eq_tol(attr(b, "y"), attr(all, "y") + 32, 1e-9);
	ck_assert_double_eq_tol(attr(b, "width"), attr(all, "width") / 4, 1e-3);
	free(svg);
	tree_free(t);
}
END_TEST

START_TEST(test_escaping)
{
	struct cp_tree *t = tree_new();
	struct cp_flame_opts o = { .title = "<cpu> & \"wall\"", .subtitle = "it's", .unit = "ns" };
	char *svg;

	t->nodes[0].total[0] = 100;
	add(t, 0, "std::vector<int>&", 40, 40);
	add(t, 0, "say \"it's\"", 30, 30);
	add(t, 0, "bad\x01\xff\xc3(x)]]>", 20, 20);
	add(t, 0, "two\tlines\n", 10, 10);
	svg = render(t, &o);
	assert_svg(svg);
	ck_assert_ptr_nonnull(frame_rect(svg, "std::vector&lt;int&gt;&amp;"));
	ck_assert_ptr_nonnull(frame_rect(svg, "say &quot;it&apos;s&quot;"));
	/* invalid UTF-8 and control characters become U+FFFD */
	ck_assert_ptr_nonnull(frame_rect(svg, "bad\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd(x)]]&gt;"));
	ck_assert_ptr_nonnull(frame_rect(svg, "two lines ")); /* whitespace as spaces */
	ck_assert_ptr_nonnull(strstr(svg, ">&lt;cpu&gt; &amp; &quot;wall&quot;</text>"));
	ck_assert_ptr_nonnull(strstr(svg, ">it&apos;s</text>"));
	ck_assert_ptr_null(strstr(svg, "vector<int>"));
	ck_assert_ptr_null(strstr(svg, "\x01"));
	ck_assert_ptr_null(strstr(svg, "\xff"));
	/* the label is escaped the same way */
	free(label(svg, "std::vector&lt;int&gt;&amp;")); /* present */
	ck_assert_ptr_nonnull(strstr(svg, ">std::vector&lt;int&gt;&amp;</text>"));
	free(svg);
	tree_free(t);
}
END_TEST

START_TEST(test_narrow)
{
	struct cp_tree *t = tree_new();
	struct cp_flame_opts o = { .unit = "B" };
	const char *big, *all;
	char *svg;

	/* 1180 px for 1e6: 50 units are 0.059 px, too narrow to draw */
	t->nodes[0].total[0] = 1000000;
	add(t, add(t, 0, "tiny", 50, 0), "tinier", 50, 50);
	add(t, 0, "big", 999950, 999950);
	svg = render(t, &o);
	assert_svg(svg);
	ck_assert_ptr_null(strstr(svg, "tiny"));
	ck_assert_ptr_null(strstr(svg, "tinier"));
	all = frame_rect(svg, "all");
	big = frame_rect(svg, "big");
	ck_assert_ptr_nonnull(big);
	/* ... but its width still counts */
	ck_assert_double_eq_tol(attr(big, "x"), attr(all, "x") + 0.059, 1e-3);
	ck_assert_double_eq_tol(attr(big, "x") + attr(big, "width"), attr(all, "x") + attr(all, "width"),
				2e-3);
	free(svg);
	tree_free(t);
}
END_TEST

START_TEST(test_labels)
{
	struct cp_tree *t = tree_new();
	struct cp_flame_opts o = { .unit = "ns", .width = 1020 };
	char *svg, *l;
	const char *r;

	/* 1000 px drawn: 10 units = 100 px, room for (100 - 6) / 7.08 = 13 characters */
	t->nodes[0].total[0] = 100;
	add(t, 0, "short", 10, 10);
	add(t, 0, "a_rather_long_function_name", 10, 10);
	add(t, 0, "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
		  "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9", 10, 10); /* 14 x e-acute */
	add(t, 0, "narrow", 2, 2); /* 20 px: no room for a label */
	svg = render(t, &o);
	l = label(svg, "short");
	ck_assert_str_eq(l, "short");
	free(l);
	l = label(svg, "a_rather_long_function_name");
	ck_assert_str_eq(l, "a_rather_lo..");
	free(l);
	l = label(svg, "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
		       "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9");
	ck_assert_str_eq(l, "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
			    "\xc3\xa9\xc3\xa9..");
	free(l);
	l = label(svg, "narrow");
	ck_assert_str_eq(l, "");
	free(l);
	r = frame_rect(svg, "narrow");
	ck_assert_double_eq_tol(attr(r, "width"), 20, 1e-3);
	free(svg);
	tree_free(t);
}
END_TEST

START_TEST(test_colours)
{
	struct cp_tree *t = tree_new();
	char *svg;
	const char *p;
	int r, g, b, r2, g2, b2;

	t->nodes[0].total[0] = 100;
	add(t, add(t, 0, "x", 50, 10), "leaf", 40, 40);
	add(t, add(t, 0, "y", 50, 10), "leaf", 40, 40);
	svg = render(t, NULL);
	/* the same name, the same warm colour, wherever and whenever drawn */
	p = strstr(svg, "<title>leaf (");
	ck_assert_ptr_nonnull(p);
	fill(p, &r, &g, &b);
	p = strstr(p + 1, "<title>leaf (");
	ck_assert_ptr_nonnull(p);
	fill(p, &r2, &g2, &b2);
	ck_assert(r == r2 && g == g2 && b == b2);
	ck_assert_int_ge(r, 200);
	ck_assert_int_gt(r, b);
	free(svg);
	svg = render(t, NULL);
	fill(strstr(svg, "<title>leaf ("), &r2, &g2, &b2);
	ck_assert(r == r2 && g == g2 && b == b2);
	free(svg);
	tree_free(t);
}
END_TEST

START_TEST(test_diff)
{
	struct cp_tree *t = tree_new();
	struct cp_flame_opts o = { .diff = true, .unit = "ns", .title = "Diff" };
	const char *all, *grew, *shrank, *same, *gone;
	int r, g, b, r2, g2, b2;
	char *svg;

	/* before 100 = grew 20 + shrank 60 + same 20; after 200 = 100 + 20 + 80 */
	t->nodes[0].total[0] = 100;
	t->nodes[0].total[1] = 200;
	add4(t, 0, "grew", 20, 20, 100, 100);
	add4(t, 0, "shrank", 60, 60, 20, 20);
	add4(t, 0, "same", 20, 20, 80, 80 - 60);
	add4(t, 0, "gone", 5, 5, 0, 0);
	svg = render(t, &o);
	assert_svg(svg);
	all = frame_rect(svg, "all");
	grew = frame_rect(svg, "grew");
	shrank = frame_rect(svg, "shrank");
	same = frame_rect(svg, "same");
	gone = frame_rect(svg, "gone");
	ck_assert(all && grew && shrank && same);
	ck_assert_ptr_null(gone); /* nothing after: no width */
	/* widths from the after side */
	ck_assert_double_eq_tol(attr(grew, "width"), attr(all, "width") / 2, 1e-3);
	ck_assert_double_eq_tol(attr(shrank, "width"), attr(all, "width") / 10, 1e-3);
	/* colour from the self delta: grew +80 is the largest (full red), shrank -40 */
	fill(grew, &r, &g, &b);
	ck_assert_int_gt(r, b);
	ck_assert_int_eq(r, 255);
	fill(shrank, &r2, &g2, &b2);
	ck_assert_int_gt(b2, r2);
	ck_assert_int_eq(b2, 255);
	ck_assert_int_gt(r2, b); /* half the change, paler */
	fill(same, &r, &g, &b);
	ck_assert(r == g && g == b && r >= 240); /* no change: white-ish */
	ck_assert_ptr_nonnull(strstr(svg, "<title>grew (before 20ns, after 100ns, delta +80ns +400.00%"));
	ck_assert_ptr_nonnull(strstr(svg, "<title>shrank (before 60ns, after 20ns, delta -40ns -66.67%"));
	ck_assert_ptr_nonnull(strstr(svg, ">Diff</text>"));
	free(svg);
	tree_free(t);
}
END_TEST

START_TEST(test_empty)
{
	struct cp_tree *t = tree_new();
	char *svg = render(t, NULL);

	assert_svg(svg);
	ck_assert_ptr_nonnull(strstr(svg, ">no samples</text>"));
	ck_assert_ptr_null(strstr(svg, "<g><title>"));
	free(svg);
	tree_free(t);
}
END_TEST

START_TEST(test_write_error)
{
	struct cp_tree *t = sample();
	FILE *f = fopen("/dev/full", "w");
	int err;

	ck_assert_ptr_nonnull(f);
	cp_error_clear();
	err = cp_render_flame(f, t, NULL);
	ck_assert_int_eq(err, -ENOSPC); /* what writing to /dev/full says */
	ck_assert_ptr_nonnull(strstr(cp_errmsg(err), "write error"));
	fclose(f);
	tree_free(t);
}
END_TEST

START_TEST(test_deep)
{
	struct cp_tree *t = tree_new();
	uint32_t n = 0, i;
	char name[16], *svg;

	t->cap = 5001;
	t->nodes = realloc(t->nodes, t->cap * sizeof(*t->nodes));
	ck_assert_ptr_nonnull(t->nodes);
	memset(t->nodes, 0, t->cap * sizeof(*t->nodes));
	t->nodes[0].total[0] = 7;
	for (i = 0; i < 5000; i++) {
		snprintf(name, sizeof(name), "f%u", i);
		n = add(t, n, name, 7, i == 4999 ? 7 : 0);
	}
	ck_assert_uint_eq(t->max_depth, 5000);
	svg = render(t, NULL);
	assert_svg(svg);
	ck_assert_uint_eq(count(svg, "<g><title>"), 5001);
	ck_assert_ptr_nonnull(strstr(svg, "<title>f4999 ("));
	free(svg);
	tree_free(t);
}
END_TEST

static Suite *flame_suite(void)
{
	Suite *s = suite_create("flame");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_structure);
	tcase_add_test(tc, test_geometry);
	tcase_add_test(tc, test_escaping);
	tcase_add_test(tc, test_narrow);
	tcase_add_test(tc, test_labels);
	tcase_add_test(tc, test_colours);
	tcase_add_test(tc, test_diff);
	tcase_add_test(tc, test_empty);
	tcase_add_test(tc, test_write_error);
	tcase_add_test(tc, test_deep);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(flame_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

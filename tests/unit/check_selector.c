/* SPDX-License-Identifier: MIT */
/* lib/selector.c: selectors (Prometheus semantics), durations and times. */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "selector.h"
#include "testutil.h"

#define NS 1000000000LL
#define FULL_CPU "process_cpu:cpu:nanoseconds:cpu:nanoseconds:delta"

/* ---- helpers ---- */

static struct cp_selector *parse_ok(const char *s)
{
	struct cp_selector *sel = NULL;
	int r = cp_selector_parse(s, &sel);

	ck_assert_msg(r == 0, "parsing '%s' failed: %d %s", s, r, cp_errmsg(r));
	ck_assert_ptr_nonnull(sel);
	return sel;
}

/* Parse must fail with -EINVAL; returns the message. */
static const char *parse_err(const char *s)
{
	struct cp_selector *sel = (struct cp_selector *)(uintptr_t)1;
	int r;

	cp_error_clear();
	r = cp_selector_parse(s, &sel);
	ck_assert_msg(r == -EINVAL, "parsing '%s' gave %d, not -EINVAL", s, r);
	ck_assert_ptr_eq(sel, (struct cp_selector *)(uintptr_t)1); /* untouched */
	return cp_errmsg(r);
}

/* Does the selector text match the labels "k=v,k=v" (values without commas)? */
static bool matches(const char *s, const char *labels)
{
	struct cp_selector *sel = parse_ok(s);
	const char *names[16], *values[16];
	char buf[256], *save = NULL, *tok;
	size_t n = 0;
	int r;

	snprintf(buf, sizeof(buf), "%s", labels);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '=');

		ck_assert_ptr_nonnull(eq);
		ck_assert_uint_lt(n, 16);
		*eq = '\0';
		names[n] = tok;
		values[n++] = eq + 1;
	}
	r = cp_selector_match_labels(sel, names, values, n);
	ck_assert_msg(r == 0 || r == 1, "'%s' on %s gave %d: %s", s, labels, r, cp_errmsg(-r));
	cp_selector_free(sel);
	return r == 1;
}

static bool type_matches(const char *s, const char *type)
{
	struct cp_selector *sel = parse_ok(s);
	bool r = cp_selector_match_type(sel, type);

	cp_selector_free(sel);
	return r;
}

static int64_t dur(const char *s)
{
	int64_t ns = -1;
	int r = cp_parse_duration(s, &ns);

	ck_assert_msg(r == 0, "duration '%s' failed: %s", s, cp_errmsg(r));
	return ns;
}

static void dur_err(const char *s)
{
	int64_t ns = 12345;
	int r;

	cp_error_clear();
	r = cp_parse_duration(s, &ns);
	ck_assert_msg(r < 0, "duration '%s' should fail", s);
	ck_assert_msg(r == -EINVAL || r == -ERANGE, "duration '%s': %d", s, r);
	ck_assert_int_eq(ns, 12345);
	ck_assert_contains(cp_errmsg(r), "duration");
}

static const int64_t NOW = 1795000000LL * NS + 123456789; /* 2026-11-18T... */

static int64_t tm_ok(const char *s)
{
	int64_t ns = -1;
	int r = cp_parse_time(s, NOW, &ns);

	ck_assert_msg(r == 0, "time '%s' failed: %s", s, cp_errmsg(r));
	return ns;
}

static void tm_err(const char *s)
{
	int64_t ns = 12345;
	int r;

	cp_error_clear();
	r = cp_parse_time(s, NOW, &ns);
	ck_assert_msg(r < 0, "time '%s' should fail (got %lld)", s, (long long)ns);
	ck_assert_int_eq(ns, 12345);
	ck_assert_msg(strlen(cp_errmsg(r)) > 0, "no message");
}

/* ---- parsing ---- */

START_TEST(test_parse_type_only)
{
	struct cp_selector *sel = parse_ok("process_cpu:cpu:nanoseconds");

	ck_assert_str_eq(sel->type, "process_cpu:cpu:nanoseconds");
	ck_assert_uint_eq(sel->n, 0);
	cp_selector_free(sel);

	sel = parse_ok("  memory:alloc_space  ");
	ck_assert_str_eq(sel->type, "memory:alloc_space");
	ck_assert_uint_eq(sel->n, 0);
	cp_selector_free(sel);

	/* dots and dashes appear in custom names */
	sel = parse_ok("my-app.cpu");
	ck_assert_str_eq(sel->type, "my-app.cpu");
	cp_selector_free(sel);

	sel = parse_ok("");
	ck_assert_ptr_null(sel->type);
	ck_assert_uint_eq(sel->n, 0);
	cp_selector_free(sel);
	cp_selector_free(NULL);
}
END_TEST

START_TEST(test_parse_empty_braces)
{
	struct cp_selector *sel = parse_ok("{}");

	ck_assert_ptr_null(sel->type);
	ck_assert_uint_eq(sel->n, 0);
	ck_assert(cp_selector_match_type(sel, FULL_CPU));
	cp_selector_free(sel);

	sel = parse_ok("cpu{ }");
	ck_assert_str_eq(sel->type, "cpu");
	ck_assert_uint_eq(sel->n, 0);
	cp_selector_free(sel);

	sel = parse_ok("cpu {}");
	ck_assert_str_eq(sel->type, "cpu");
	cp_selector_free(sel);
}
END_TEST

START_TEST(test_parse_operators)
{
	struct cp_selector *sel = parse_ok("process_cpu{comm=\"burn\", pid!=\"1\", host=~\"web.*\", zone!~\"eu-.*\"}");

	ck_assert_str_eq(sel->type, "process_cpu");
	ck_assert_uint_eq(sel->n, 4);
	ck_assert_str_eq(sel->matchers[0].name, "comm");
	ck_assert_str_eq(sel->matchers[0].value, "burn");
	ck_assert_int_eq(sel->matchers[0].op, CP_MATCH_EQ);
	ck_assert_ptr_null(sel->matchers[0].re);
	ck_assert_str_eq(sel->matchers[1].name, "pid");
	ck_assert_str_eq(sel->matchers[1].value, "1");
	ck_assert_int_eq(sel->matchers[1].op, CP_MATCH_NE);
	ck_assert_str_eq(sel->matchers[2].name, "host");
	ck_assert_str_eq(sel->matchers[2].value, "web.*");
	ck_assert_int_eq(sel->matchers[2].op, CP_MATCH_RE);
	ck_assert_ptr_nonnull(sel->matchers[2].re);
	ck_assert_str_eq(sel->matchers[3].name, "zone");
	ck_assert_int_eq(sel->matchers[3].op, CP_MATCH_NRE);
	ck_assert_ptr_nonnull(sel->matchers[3].re);
	cp_selector_free(sel);
}
END_TEST

START_TEST(test_parse_whitespace_and_trailing_comma)
{
	struct cp_selector *sel = parse_ok("\t cpu \t{ \n comm \t = \"a\" ,\n pid != \"2\" , } \n");

	ck_assert_str_eq(sel->type, "cpu");
	ck_assert_uint_eq(sel->n, 2);
	ck_assert_str_eq(sel->matchers[0].name, "comm");
	ck_assert_str_eq(sel->matchers[0].value, "a");
	ck_assert_str_eq(sel->matchers[1].name, "pid");
	ck_assert_int_eq(sel->matchers[1].op, CP_MATCH_NE);
	cp_selector_free(sel);

	sel = parse_ok("{a=\"1\",}");
	ck_assert_ptr_null(sel->type);
	ck_assert_uint_eq(sel->n, 1);
	cp_selector_free(sel);

	/* a newline may separate the type from its braces, as any other blank */
	sel = parse_ok("cpu\n{a=\"1\"}");
	ck_assert_str_eq(sel->type, "cpu");
	ck_assert_uint_eq(sel->n, 1);
	cp_selector_free(sel);

	/* label names: letters, digits (not first), underscores */
	sel = parse_ok("{_x9=\"\", A_b=\"v\"}");
	ck_assert_str_eq(sel->matchers[0].name, "_x9");
	ck_assert_str_eq(sel->matchers[0].value, "");
	ck_assert_str_eq(sel->matchers[1].name, "A_b");
	cp_selector_free(sel);
}
END_TEST

START_TEST(test_parse_quotes_and_escapes)
{
	struct cp_selector *sel = parse_ok("{a='single', b=\"dq \\\"x\\\"\", c='it\\'s', d=\"t\\tn\\nb\\\\\","
					   " e=\"it's\", f='say \"hi\"', g=`raw\\n`}");

	ck_assert_uint_eq(sel->n, 7);
	ck_assert_str_eq(sel->matchers[0].value, "single");
	ck_assert_str_eq(sel->matchers[1].value, "dq \"x\"");
	ck_assert_str_eq(sel->matchers[2].value, "it's");
	ck_assert_str_eq(sel->matchers[3].value, "t\tn\nb\\");
	ck_assert_str_eq(sel->matchers[4].value, "it's");
	ck_assert_str_eq(sel->matchers[5].value, "say \"hi\"");
	ck_assert_str_eq(sel->matchers[6].value, "raw\\n"); /* backquotes: no escapes */
	cp_selector_free(sel);

	/* UTF-8 passes through */
	sel = parse_ok("{comm=\"caf\xc3\xa9\"}");
	ck_assert_str_eq(sel->matchers[0].value, "caf\xc3\xa9");
	cp_selector_free(sel);

	/* a comma or brace inside quotes is text */
	sel = parse_ok("{a=\"x,}y\"}");
	ck_assert_str_eq(sel->matchers[0].value, "x,}y");
	cp_selector_free(sel);
}
END_TEST

START_TEST(test_parse_errors)
{
	const char *m;

	m = parse_err("cpu{comm=\"x\"");
	ck_assert_contains(m, "column 13");
	ck_assert_contains(m, "missing '}'");

	m = parse_err("cpu{comm~\"x\"}");
	ck_assert_contains(m, "column 9");
	ck_assert_contains(m, "=, !=, =~ or !~");

	m = parse_err("cpu{=\"x\"}");
	ck_assert_contains(m, "column 5");
	ck_assert_contains(m, "label name");

	m = parse_err("cpu{a=~\"(\"}");
	ck_assert_contains(m, "column");
	ck_assert_contains(m, "bad regex \"(\"");
	ck_assert_contains(m, "label a");

	m = parse_err("cpu{a!~\"[z-a]\"}");
	ck_assert_contains(m, "bad regex \"[z-a]\"");

	m = parse_err("cpu{comm=\"x}");
	ck_assert_contains(m, "column 10"); /* the opening quote */
	ck_assert_contains(m, "unterminated");

	m = parse_err("cpu{comm=x}");
	ck_assert_contains(m, "column 10");
	ck_assert_contains(m, "quoted");

	m = parse_err("cpu{comm=\"x\" pid=\"1\"}");
	ck_assert_contains(m, "column 14");
	ck_assert_contains(m, "expected ',' or '}'");

	m = parse_err("cpu{comm=\"\\q\"}");
	ck_assert_contains(m, "column");
	ck_assert_contains(m, "escape");

	m = parse_err("cpu{a=\"x\"} extra");
	ck_assert_contains(m, "column 12");
	ck_assert_contains(m, "unexpected text");

	m = parse_err("cpu}");
	ck_assert_contains(m, "column 4");

	m = parse_err("cp*u");
	ck_assert_contains(m, "column 3");
	ck_assert_contains(m, "profile type");

	m = parse_err("cpu{9a=\"x\"}");
	ck_assert_contains(m, "column 5");

	/* the end of the text inside braces */
	m = parse_err("cpu{");
	ck_assert_contains(m, "missing '}'");
	m = parse_err("cpu{a=\"1\",");
	ck_assert_contains(m, "missing '}'");
	m = parse_err("cpu{a=");
	ck_assert_contains(m, "quoted");
	m = parse_err("cpu{a=\"\\");
	ck_assert_contains(m, "column");
}
END_TEST

/* ---- matching ---- */

START_TEST(test_match_eq_ne)
{
	ck_assert(matches("{comm=\"burn\"}", "comm=burn,pid=1"));
	ck_assert(!matches("{comm=\"burn\"}", "comm=burner,pid=1"));
	ck_assert(!matches("{comm=\"burn\"}", "pid=1"));
	ck_assert(matches("{comm!=\"burn\"}", "comm=idle"));
	ck_assert(!matches("{comm!=\"burn\"}", "comm=burn"));
	ck_assert(matches("{comm!=\"burn\"}", "pid=1")); /* missing != "burn" */
	ck_assert(matches("{comm=\"burn\", pid=\"1\"}", "pid=1,comm=burn"));
	ck_assert(!matches("{comm=\"burn\", pid=\"1\"}", "pid=2,comm=burn"));
	ck_assert(matches("{}", ""));
	ck_assert(matches("{}", "a=b"));
}
END_TEST

START_TEST(test_match_regex_anchored)
{
	ck_assert(!matches("{comm=~\"bur\"}", "comm=burn"));
	ck_assert(matches("{comm=~\"bur.*\"}", "comm=burn"));
	ck_assert(!matches("{comm=~\"urn\"}", "comm=burn"));
	ck_assert(matches("{comm=~\".urn\"}", "comm=burn"));
	ck_assert(matches("{comm=~\"a|burn\"}", "comm=burn")); /* alternation inside the anchors */
	ck_assert(!matches("{comm=~\"a|bur\"}", "comm=burn"));
	ck_assert(!matches("{comm=~\"burn|a\"}", "comm=xburn"));
	ck_assert(matches("{comm!~\"bur\"}", "comm=burn"));
	ck_assert(!matches("{comm!~\"bur.*\"}", "comm=burn"));
	ck_assert(matches("{comm=~\"\"}", "pid=1"));      /* missing matches "" */
	ck_assert(matches("{comm=~\".*\"}", "pid=1"));
	ck_assert(!matches("{comm=~\".+\"}", "pid=1"));
	ck_assert(matches("{comm!~\".+\"}", "pid=1"));
	ck_assert(matches("{comm=~\"caf.\"}", "comm=caf\xc3\xa9")); /* . is one character */
	ck_assert(matches("{comm=~\"a|ab\"}", "comm=ab"));        /* the end anchor backtracks */
	ck_assert(matches("{comm=~\"^(main|run).*\"}", "comm=runner"));
	ck_assert(!matches("{comm=~\"hot_.*\"}", "comm=not_hot_x"));
	/* the pattern cannot close the anchoring group: "^(?:x)|(y)$" once matched "xz" */
	ck_assert_contains(parse_err("{comm=~\"x)|(y\"}"), "bad regex");
}
END_TEST

/* A catastrophic regex over a long value that it does not match reaches the
 * match limit: that is an error naming the label and the regex, never "no
 * match" (which !~ would turn into "match"), and the whole selector fails. */
START_TEST(test_match_regex_costly)
{
	struct cp_selector *sel = parse_ok("cpu{comm=\"x\", job=~\"(a+)+$\"}");
	const char *names[] = { "comm", "job" }, *values[2] = { "x", NULL };
	char bad[42], good[41];
	int k;

	memset(bad, 'a', 40);
	strcpy(bad + 40, "b");
	memset(good, 'a', 40);
	good[40] = '\0';
	for (k = 0; k < 2; k++) {
		cp_error_clear();
		ck_assert_int_eq(cp_matcher_match(&sel->matchers[1], bad), -CP_REGEX_ECOST);
		ck_assert_contains(cp_errmsg(CP_REGEX_ECOST), "label job: regex '(a+)+$' is too costly");
	}
	values[1] = bad;
	ck_assert_int_eq(cp_selector_match_labels(sel, names, values, 2), -CP_REGEX_ECOST);
	values[1] = good;
	ck_assert_int_eq(cp_selector_match_labels(sel, names, values, 2), 1);
	values[0] = "y"; /* the first matcher fails: the regex is not tried */
	values[1] = bad;
	ck_assert_int_eq(cp_selector_match_labels(sel, names, values, 2), 0);
	cp_selector_free(sel);

	sel = parse_ok("{job!~\"(a+)+$\"}");
	ck_assert_int_eq(cp_matcher_match(&sel->matchers[0], bad), -CP_REGEX_ECOST);
	ck_assert_int_eq(cp_matcher_match(&sel->matchers[0], "b"), 1);
	ck_assert_int_eq(cp_matcher_match(&sel->matchers[0], good), 0);
	cp_selector_free(sel);
}
END_TEST

/* ordinary regexes stay far below the limits and the budget: many matches over
 * long values, in one evaluation */
START_TEST(test_match_regex_ordinary)
{
	struct cp_selector *sel = parse_ok("{a=~\"^(main|run).*\", b=~\"hot_.*\", c!~\".*foo.*bar.*\"}");
	const char *names[] = { "a", "b", "c" }, *values[3];
	char a[4100] = "run", b[4100] = "hot_", c[4100];
	int k;

	memset(a + 3, 'x', 4000);
	a[4003] = '\0';
	memset(b + 4, '_', 4000);
	b[4004] = '\0';
	memset(c, 'f', 4000);
	strcpy(c + 4000, "oo");
	values[0] = a;
	values[1] = b;
	values[2] = c;
	cp_selector_begin(sel);
	for (k = 0; k < 1000; k++)
		ck_assert_int_eq(cp_selector_match_labels(sel, names, values, 3), 1);
	cp_selector_free(sel);
}
END_TEST

START_TEST(test_match_regex_newline)
{
	struct cp_selector *sel = parse_ok("{comm=~\"bur\"}");

	/* $ must not match before a trailing newline (RE2 semantics) */
	ck_assert(!cp_matcher_match(&sel->matchers[0], "bur\n"));
	ck_assert(cp_matcher_match(&sel->matchers[0], "bur"));
	cp_selector_free(sel);
	sel = parse_ok("{comm=~\"a.b\"}");
	ck_assert(cp_matcher_match(&sel->matchers[0], "a\nb")); /* . matches newlines */
	cp_selector_free(sel);
}
END_TEST

START_TEST(test_match_missing_label)
{
	ck_assert(matches("{x=\"\"}", "comm=a"));
	ck_assert(!matches("{x!=\"\"}", "comm=a"));
	ck_assert(!matches("{x=\"\"}", "x=1"));
	ck_assert(matches("{x!=\"\"}", "x=1"));
	ck_assert(matches("{x=\"\"}", ""));

	struct cp_selector *sel = parse_ok("{x=\"\"}");

	ck_assert(cp_matcher_match(&sel->matchers[0], NULL));
	ck_assert(cp_matcher_match(&sel->matchers[0], ""));
	ck_assert(!cp_matcher_match(&sel->matchers[0], "y"));
	ck_assert(cp_selector_match_labels(sel, NULL, NULL, 0));
	cp_selector_free(sel);
}
END_TEST

START_TEST(test_match_type)
{
	ck_assert(type_matches(FULL_CPU, FULL_CPU));
	ck_assert(type_matches("process_cpu", FULL_CPU));
	ck_assert(type_matches("process_cpu:cpu", FULL_CPU));
	ck_assert(type_matches("process_cpu:cpu:nanoseconds:cpu:nanoseconds", FULL_CPU));
	ck_assert(!type_matches("process", FULL_CPU));
	ck_assert(!type_matches("process_cpu:cp", FULL_CPU));
	ck_assert(!type_matches("process_cpu:samples", FULL_CPU));
	ck_assert(!type_matches(FULL_CPU ":x", FULL_CPU));
	ck_assert(!type_matches("memory", FULL_CPU));
	ck_assert(type_matches("", FULL_CPU));
	ck_assert(type_matches("{}", FULL_CPU));
	ck_assert(type_matches("{comm=\"x\"}", "anything:at:all"));
	/* cpu is process_cpu, either way round (cprof record's name before it took Pyroscope's) */
	ck_assert(type_matches("cpu", FULL_CPU));
	ck_assert(type_matches("cpu:cpu", FULL_CPU));
	ck_assert(type_matches("process_cpu:samples", "cpu:samples:count:cpu:nanoseconds:delta"));
	ck_assert(type_matches("cpu", "cpu:samples:count:cpu:nanoseconds:delta"));
	ck_assert(!type_matches("cpu:samples", FULL_CPU));
	ck_assert(!type_matches("cp", FULL_CPU));
	ck_assert(!type_matches("cpux", FULL_CPU));
	ck_assert(!type_matches("offcpu", FULL_CPU));
}
END_TEST

/* matchers of labels a series lacks are left to its samples */
START_TEST(test_match_series_deferred)
{
	struct cp_selector *sel = parse_ok("cpu{comm=\"a\", pid=\"7\", state=~\"S|D\"}");
	const char *names[] = { "comm", "node" }, *values[] = { "a", "h" };
	const char *sn[] = { "pid", "state" }, *sv[] = { "7", "D" }, *sv2[] = { "8", "D" };
	uint64_t d = 99;

	ck_assert_int_eq(cp_selector_match_series(sel, names, values, 2, ~(uint64_t)0, &d), 1);
	ck_assert_uint_eq(d, 6); /* pid (matcher 1) and state (2) */
	ck_assert_int_eq(cp_selector_match_sample(sel, d, sn, sv, 2), 1);
	ck_assert_int_eq(cp_selector_match_sample(sel, d, sn, sv2, 2), 0);
	ck_assert_int_eq(cp_selector_match_sample(sel, d, NULL, NULL, 0), 0); /* no pid: "" */
	values[0] = "b";
	ck_assert_int_eq(cp_selector_match_series(sel, names, values, 2, ~(uint64_t)0, &d), 0);
	cp_selector_free(sel);
}
END_TEST

/* ---- durations ---- */

START_TEST(test_duration)
{
	ck_assert_int_eq(dur("90s"), 90 * NS);
	ck_assert_int_eq(dur("1h30m"), 5400 * NS);
	ck_assert_int_eq(dur("15d"), 15 * 86400 * NS);
	ck_assert_int_eq(dur("2w"), 14 * 86400 * NS);
	ck_assert_int_eq(dur("500ms"), 500000000LL);
	ck_assert_int_eq(dur("1y"), 365 * 86400 * NS);
	ck_assert_int_eq(dur("0s"), 0);
	ck_assert_int_eq(dur("1m1ms"), 60 * NS + 1000000);
	ck_assert_int_eq(dur("1d2h3m4s5ms"), ((26 * 60 + 3) * 60 + 4) * NS + 5000000);
	ck_assert_int_eq(dur("292y"), 292LL * 365 * 86400 * NS);
}
END_TEST

START_TEST(test_duration_errors)
{
	dur_err("");
	dur_err("10");
	dur_err("h");
	dur_err("5x");
	dur_err("1h30");
	dur_err("-5m");
	dur_err("5 m");
	dur_err("1.5h");
	dur_err("300y");                  /* more than int64 nanoseconds */
	dur_err("9223372036854775807s");  /* the multiplication overflows */
	dur_err("99999999999999999999s"); /* the number itself overflows */
	dur_err("292y292y");              /* the sum overflows */
	ck_assert_contains(cp_errmsg(ERANGE), "too long");
	dur_err("99999999999999999999s");
	ck_assert_contains(cp_errmsg(ERANGE), "too long");
}
END_TEST

/* ---- times ---- */

START_TEST(test_time_relative)
{
	ck_assert_int_eq(tm_ok("now"), NOW);
	ck_assert_int_eq(tm_ok("now-30m"), NOW - 1800 * NS);
	ck_assert_int_eq(tm_ok("now+5m"), NOW + 300 * NS);
	ck_assert_int_eq(tm_ok("now-1h30m"), NOW - 5400 * NS);
	ck_assert(cp_now_ns() > 1700000000LL * NS);
}
END_TEST

START_TEST(test_time_unix)
{
	ck_assert_int_eq(tm_ok("1795000000"), 1795000000LL * NS);
	ck_assert_int_eq(tm_ok("1795000000123"), 1795000000123LL * 1000000);
	ck_assert_int_eq(tm_ok("1795000000123456"), 1795000000123456LL * 1000);
	ck_assert_int_eq(tm_ok("1795000000123456789"), 1795000000123456789LL);
	ck_assert_int_eq(tm_ok("0"), 0);
	ck_assert_int_eq(tm_ok("60"), 60 * NS);
}
END_TEST

START_TEST(test_time_rfc3339)
{
	/* 2026-11-22T10:00:00Z = 1795341600 */
	ck_assert_int_eq(tm_ok("2026-11-22T10:00:00Z"), 1795341600LL * NS);
	ck_assert_int_eq(tm_ok("2026-11-22t10:00:00z"), 1795341600LL * NS);
	ck_assert_int_eq(tm_ok("2026-11-22T12:00:00+02:00"), 1795341600LL * NS);
	ck_assert_int_eq(tm_ok("2026-11-22T05:30:00-04:30"), 1795341600LL * NS);
	ck_assert_int_eq(tm_ok("2026-11-22T10:00:00.5Z"), 1795341600LL * NS + 500000000);
	ck_assert_int_eq(tm_ok("2026-11-22T10:00:00.123456789Z"), 1795341600LL * NS + 123456789);
	ck_assert_int_eq(tm_ok("2026-11-22T12:00:00.25+02:00"), 1795341600LL * NS + 250000000);
	ck_assert_int_eq(tm_ok("2026-11-22"), 1795305600LL * NS);
	ck_assert_int_eq(tm_ok("2026-11-22 10:00:00Z"), 1795341600LL * NS);
	ck_assert_int_eq(tm_ok("1970-01-01T00:00:00Z"), 0);
}
END_TEST

START_TEST(test_time_errors)
{
	tm_err("");
	tm_err("yesterday");
	tm_err("nowish");
	tm_err("now-");
	tm_err("now-5");
	tm_err("now*5m");
	tm_err("2026-11-22T10:00");
	tm_err("2026-11-22T10:00:00Zjunk");
	tm_err("2026-11-22T10:00:00+2");
	tm_err("2026-13-01");
	tm_err("2026-11-22x");
	tm_err("12345678901234567890"); /* 20 digits */
	tm_err("9999999999");           /* seconds beyond int64 nanoseconds */
	tm_err("9999999999999");        /* milliseconds, likewise */
	tm_err("9999999999999999");     /* microseconds, likewise */
	tm_err("9999999999999999999");  /* nanoseconds beyond int64 */
	tm_err("now+300y");
	tm_err("now+292y"); /* the duration fits, the sum does not */
	tm_err("9999-12-31T23:59:59Z");
	tm_err("-5");
	tm_err("12ab");
}
END_TEST

/* Times at the ends of int64 nanoseconds: taken up to the limits, refused past them with "out of
 * range" (-ERANGE), never wrapped or clamped. */
static void tm_range(const char *s)
{
	int64_t ns = 12345;
	int r;

	cp_error_clear();
	r = cp_parse_time(s, NOW, &ns);
	ck_assert_msg(r == -ERANGE, "time '%s': %d %s", s, r, cp_errmsg(r));
	ck_assert_int_eq(ns, 12345);
	ck_assert_contains(cp_errmsg(r), "out of range");
}

START_TEST(test_time_limits)
{
	ck_assert_int_eq(tm_ok("9223372036854775807"), INT64_MAX);
	ck_assert_int_eq(tm_ok("now-292y"), NOW - 292 * 31536000LL * NS);
	ck_assert_int_eq(tm_ok("2262-04-11T23:47:15Z"), 9223372035LL * NS);
	tm_range("9223372036854775808");
	tm_range("now-300y"); /* the duration alone is too long: once "bad time" */
	tm_range("now+300y");
	tm_range("now+292y");
	tm_range("now-99999999999999999999y");
	tm_range("2262-04-12T00:00:00Z");
	tm_range("1600-01-01T00:00:00Z");
	tm_range("9999999999");
}
END_TEST

START_TEST(test_buckets)
{
	const int64_t S = 1000000000LL, M = 60 * S, Y = 365 * 86400 * S, now = 1795000000LL * S + 1234567; /* not on a minute */
	struct cp_buckets b, b2;

	/* the last 10 minutes in 1m steps: 11 buckets on the minute grid, the
	 * first holding from, the last holding to */
	ck_assert_int_eq(cp_buckets_align(now - 10 * M, now, M, &b), 0);
	ck_assert_int_eq(b.start % M, 0);
	ck_assert_int_le(b.start, now - 10 * M);
	ck_assert_int_gt(b.start + M, now - 10 * M);
	ck_assert_uint_eq(b.n, 11);
	ck_assert_int_eq(b.step, M);
	ck_assert_int_gt(cp_buckets_end(&b), now);
	ck_assert_int_eq(cp_buckets_end(&b), b.start + 11 * M);
	/* a few seconds later: the same buckets */
	ck_assert_int_eq(cp_buckets_align(now - 10 * M + 3 * S, now + 3 * S, M, &b2), 0);
	ck_assert_int_eq(b2.start, b.start);
	ck_assert_uint_eq(b2.n, b.n);
	/* a range on the grid: to is in a bucket of its own */
	ck_assert_int_eq(cp_buckets_align(10 * M, 20 * M, M, &b), 0);
	ck_assert_int_eq(b.start, 10 * M);
	ck_assert_uint_eq(b.n, 11);
	ck_assert_int_eq(cp_buckets_align(10 * M, 10 * M, M, &b), 0); /* an instant: one bucket */
	ck_assert_uint_eq(b.n, 1);
	/* which bucket holds t: [start + i*step, start + (i+1)*step) */
	ck_assert_int_eq(cp_buckets_index(&b, 10 * M - 1), -1);
	ck_assert_int_eq(cp_buckets_index(&b, 10 * M), 0);
	ck_assert_int_eq(cp_buckets_index(&b, 11 * M - 1), 0);
	ck_assert_int_eq(cp_buckets_index(&b, 11 * M), -1);
	/* before the epoch: floored, not truncated towards zero */
	ck_assert_int_eq(cp_buckets_align(-90 * S, -30 * S, M, &b), 0);
	ck_assert_int_eq(b.start, -2 * M);
	ck_assert_uint_eq(b.n, 2);
	ck_assert_int_eq(cp_buckets_index(&b, -61 * S), 0);
	ck_assert_int_eq(cp_buckets_index(&b, -60 * S), 1);
	/* errors */
	ck_assert_int_eq(cp_buckets_align(0, M, 0, &b), -EINVAL);
	ck_assert_int_eq(cp_buckets_align(0, M, -S, &b), -EINVAL);
	ck_assert_int_eq(cp_buckets_align(M, 0, S, &b), -EINVAL);
	ck_assert_int_eq(cp_buckets_align(0, CP_BUCKETS_MAX * S, S, &b), -EINVAL); /* one too many */
	ck_assert_int_eq(cp_buckets_align(0, (CP_BUCKETS_MAX - 1) * S, S, &b), 0);
	ck_assert_int_eq(cp_buckets_align(INT64_MIN, INT64_MAX, INT64_MAX, &b), -EINVAL); /* the grid starts before INT64_MIN */
	ck_assert_int_eq(cp_buckets_align(0, INT64_MAX, INT64_MAX / 4, &b), 0);
	ck_assert_int_eq(cp_buckets_end(&b), INT64_MAX); /* saturated */
	/* from 292 years back to now: n * step alone passes INT64_MAX, the end does not */
	ck_assert_int_eq(cp_buckets_align(now - 292 * Y, now, cp_buckets_default_step(now - 292 * Y, now), &b), 0);
	ck_assert_int_gt(cp_buckets_end(&b), now);
	ck_assert_int_lt(cp_buckets_end(&b), INT64_MAX);
	ck_assert_int_eq(cp_buckets_end(&b), (int64_t)((uint64_t)b.start + (uint64_t)b.n * (uint64_t)b.step));
	/* the default step: a 60th of the range in whole seconds, at least 1 s */
	ck_assert_int_eq(cp_buckets_default_step(now - 3600 * S, now), M);
	ck_assert_int_eq(cp_buckets_default_step(now - 90 * S, now), S);
	ck_assert_int_eq(cp_buckets_default_step(now - 3601 * S, now), M);
	ck_assert_int_eq(cp_buckets_default_step(now, now), S);
}
END_TEST

/* ---- matchers added without text ---- */

/* Does sel match the labels (parallel arrays)? */
static int sel_matches(const struct cp_selector *sel, const char *pid, const char *comm)
{
	const char *names[] = { "comm", "pid" }, *values[] = { comm, pid };
	int r = cp_selector_match_labels(sel, names, values, 2);

	ck_assert_msg(r == 0 || r == 1, "match gave %d", r);
	return r;
}

START_TEST(test_add_matcher)
{
	struct cp_selector *sel = parse_ok("cpu{comm=\"app\"}"), *again;

	ck_assert_int_eq(sel_matches(sel, "7", "app"), 1);
	ck_assert_int_eq(cp_selector_add_matcher(sel, "pid", CP_MATCH_EQ, "7"), 0);
	ck_assert_uint_eq(sel->n, 2);
	ck_assert_int_eq(sel_matches(sel, "7", "app"), 1);
	ck_assert_int_eq(sel_matches(sel, "8", "app"), 0);  /* the new matcher */
	ck_assert_int_eq(sel_matches(sel, "7", "db"), 0);   /* and the parsed one still */
	/* its text says the same, and parses back to the same matches */
	ck_assert_str_eq(sel->src, "cpu{comm=\"app\", pid=\"7\"}");
	again = parse_ok(sel->src);
	ck_assert_int_eq(sel_matches(again, "7", "app"), 1);
	ck_assert_int_eq(sel_matches(again, "8", "app"), 0);
	cp_selector_free(again);
	/* a regex, and a value that needs quoting in the text */
	ck_assert_int_eq(cp_selector_add_matcher(sel, "comm", CP_MATCH_NRE, "d.*"), 0);
	ck_assert_int_eq(cp_selector_add_matcher(sel, "node", CP_MATCH_NE, "a\"b\\c\n"), 0);
	ck_assert_str_eq(sel->src, "cpu{comm=\"app\", pid=\"7\", comm!~\"d.*\", node!=\"a\\\"b\\\\c\\n\"}");
	again = parse_ok(sel->src);
	ck_assert_str_eq(again->matchers[3].value, "a\"b\\c\n");
	cp_selector_free(again);
	ck_assert_int_eq(sel_matches(sel, "7", "app"), 1);
	cp_selector_free(sel);
}
END_TEST

START_TEST(test_add_matcher_errors)
{
	struct cp_selector *sel = parse_ok("cpu");

	cp_error_clear();
	ck_assert_int_eq(cp_selector_add_matcher(sel, "9pid", CP_MATCH_EQ, "1"), -EINVAL);
	ck_assert_contains(cp_errmsg(-EINVAL), "'9pid' is not a label name");
	ck_assert_int_eq(cp_selector_add_matcher(sel, "comm", CP_MATCH_RE, "a("), -EINVAL);
	ck_assert_contains(cp_errmsg(-EINVAL), "bad regex \"a(\" for label comm");
	ck_assert_int_eq(cp_selector_add_any(sel, "pid", NULL, 0), -EINVAL);
	/* nothing was added */
	ck_assert_uint_eq(sel->n, 0);
	ck_assert_str_eq(sel->src, "cpu");
	ck_assert_int_eq(sel_matches(sel, "1", "x"), 1);
	cp_selector_free(sel);
}
END_TEST

START_TEST(test_add_any)
{
	const char *pids[] = { "12", "345", "6" };
	const char *odd[] = { "a.b", "x|y", "(c)", "q\"\\" };
	struct cp_selector *sel = parse_ok("cpu"), *again;

	ck_assert_int_eq(cp_selector_add_any(sel, "pid", pids, 3), 0);
	ck_assert_int_eq(sel_matches(sel, "12", "a"), 1);
	ck_assert_int_eq(sel_matches(sel, "345", "a"), 1);
	ck_assert_int_eq(sel_matches(sel, "6", "a"), 1);
	ck_assert_int_eq(sel_matches(sel, "1", "a"), 0);    /* whole values only */
	ck_assert_int_eq(sel_matches(sel, "1234", "a"), 0);
	ck_assert_int_eq(sel_matches(sel, "66", "a"), 0);
	ck_assert_int_eq(sel_matches(sel, "", "a"), 0);
	again = parse_ok(sel->src);
	ck_assert_int_eq(sel_matches(again, "345", "a"), 1);
	ck_assert_int_eq(sel_matches(again, "34", "a"), 0);
	cp_selector_free(again);
	cp_selector_free(sel);

	/* values are literal, whatever regex characters they hold */
	sel = parse_ok("{}");
	ck_assert_int_eq(cp_selector_add_any(sel, "comm", odd, 4), 0);
	ck_assert_int_eq(sel_matches(sel, "1", "a.b"), 1);
	ck_assert_int_eq(sel_matches(sel, "1", "axb"), 0);
	ck_assert_int_eq(sel_matches(sel, "1", "x|y"), 1);
	ck_assert_int_eq(sel_matches(sel, "1", "x"), 0);
	ck_assert_int_eq(sel_matches(sel, "1", "(c)"), 1);
	ck_assert_int_eq(sel_matches(sel, "1", "c"), 0);
	ck_assert_int_eq(sel_matches(sel, "1", "q\"\\"), 1);
	again = parse_ok(sel->src);
	ck_assert_int_eq(sel_matches(again, "1", "q\"\\"), 1);
	ck_assert_int_eq(sel_matches(again, "1", "axb"), 0);
	ck_assert_ptr_null(again->type);
	cp_selector_free(again);
	cp_selector_free(sel);
}
END_TEST

static Suite *selector_suite(void)
{
	Suite *s = suite_create("selector");
	TCase *parse = tcase_create("parse"), *match = tcase_create("match"), *times = tcase_create("times");

	tcase_add_test(parse, test_parse_type_only);
	tcase_add_test(parse, test_parse_empty_braces);
	tcase_add_test(parse, test_parse_operators);
	tcase_add_test(parse, test_parse_whitespace_and_trailing_comma);
	tcase_add_test(parse, test_parse_quotes_and_escapes);
	tcase_add_test(parse, test_parse_errors);
	suite_add_tcase(s, parse);
	tcase_add_test(match, test_match_eq_ne);
	tcase_add_test(match, test_match_regex_anchored);
	tcase_add_test(match, test_match_regex_newline);
	tcase_add_test(match, test_match_regex_costly);
	tcase_add_test(match, test_match_regex_ordinary);
	tcase_add_test(match, test_match_missing_label);
	tcase_add_test(match, test_match_type);
	tcase_add_test(match, test_match_series_deferred);
	tcase_add_test(match, test_add_matcher);
	tcase_add_test(match, test_add_matcher_errors);
	tcase_add_test(match, test_add_any);
	suite_add_tcase(s, match);
	tcase_add_test(times, test_duration);
	tcase_add_test(times, test_duration_errors);
	tcase_add_test(times, test_time_relative);
	tcase_add_test(times, test_time_unix);
	tcase_add_test(times, test_time_rfc3339);
	tcase_add_test(times, test_time_errors);
	tcase_add_test(times, test_time_limits);
	tcase_add_test(times, test_buckets);
	suite_add_tcase(s, times);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(selector_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

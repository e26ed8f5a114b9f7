/* SPDX-License-Identifier: MIT */
/* lib/ingest/: the table of ingest protocols and its routes; what the
 * Pyroscope API takes: label names as Pyroscope takes them (dots become '_'),
 * pprof pushes split and named as Pyroscope names them, and speedscope JSON
 * (format=speedscope) as Pyroscope reads it. */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode_limits.h"
#include "error.h"
#include "http/api.h"
#include "ingest/protocol.h"
#include "profile.h"
#include "push/protocol.h"
#include "store/store.h"

/* ---- label names ---- */

static void name_ok(const char *in, const char *want)
{
	char buf[64];

	snprintf(buf, sizeof(buf), "%s", in);
	ck_assert_msg(cp_pyro_label_name(buf) == 0, "'%s' refused", in);
	ck_assert_str_eq(buf, want);
}

static void name_bad(const char *in)
{
	char buf[64];

	snprintf(buf, sizeof(buf), "%s", in);
	ck_assert_msg(cp_pyro_label_name(buf) == -EINVAL, "'%s' taken", in);
	ck_assert_str_eq(buf, in); /* left as it was */
}

START_TEST(test_label_names)
{
	name_ok("env", "env");
	name_ok("service_name", "service_name");
	name_ok("otel.scope.name", "otel_scope_name");
	name_ok(".lead", "_lead");
	name_ok("a.", "a_");
	name_ok(".", "_");
	name_ok("a.0", "a_0");
	name_ok("__a__", "__a__");
	name_bad("");
	name_bad("9lives");
	name_bad("0.a");
	name_bad("service-name");
	name_bad("service name");
	name_bad("a@b");
	name_bad("a.b@c");
	name_bad("\xc3\xa9t\xc3\xa9");
}
END_TEST

static const char *label(const struct cp_pyro_name *n, const char *name)
{
	size_t i;

	for (i = 0; i < n->labels.n; i++)
		if (!strcmp(n->labels.kv[i].name, name))
			return n->labels.kv[i].value;
	return NULL;
}

START_TEST(test_name_with_otel_labels)
{
	struct cp_pyro_name n;

	ck_assert_int_eq(cp_pyro_name_parse("nodeapp{otel.scope.name=com.grafana.pyroscope/nodejs,otel.scope.version=0.6.4,"
					    "process.runtime.name=nodejs,env=test}",
					    &n),
			 0);
	ck_assert_str_eq(n.app, "nodeapp");
	ck_assert_str_eq(label(&n, "otel_scope_name"), "com.grafana.pyroscope/nodejs");
	ck_assert_str_eq(label(&n, "otel_scope_version"), "0.6.4");
	ck_assert_str_eq(label(&n, "process_runtime_name"), "nodejs");
	ck_assert_str_eq(label(&n, "env"), "test");
	ck_assert_str_eq(label(&n, "service_name"), "nodeapp");
	ck_assert_ptr_null(label(&n, "otel.scope.name"));
	cp_pyro_name_release(&n);

	cp_error_clear();
	ck_assert_int_eq(cp_pyro_name_parse("a.cpu{x.y=1,x_y=2}", &n), -EINVAL);
	ck_assert_ptr_nonnull(strstr(cp_errmsg(-EINVAL), "'x_y' given twice"));
	cp_error_clear();
	ck_assert_int_eq(cp_pyro_name_parse("a.cpu{bad-label=1}", &n), -EINVAL);
	ck_assert_ptr_nonnull(strstr(cp_errmsg(-EINVAL), "bad label name 'bad-label'"));
}
END_TEST

/* the names cprof pushes to Pyroscope read back as they were sent: the
 * service (dots and all), the tags, service_name given once */
START_TEST(test_name_format)
{
	const struct cp_kv tags[] = { { "pid", "42" }, { "exe", "/usr/bin/a,b{c}" }, { "service_name", "other" } };
	struct cp_pyro_name n;
	char *s = NULL;

	ck_assert_int_eq(cp_pyro_name_format("python3.11", tags, 3, &s), 0);
	ck_assert_str_eq(s, "python3.11{service_name=python3.11,pid=42,exe=/usr/bin/a_b_c_}");
	ck_assert_int_eq(cp_pyro_name_parse(s, &n), 0);
	ck_assert_str_eq(label(&n, "service_name"), "python3.11");
	ck_assert_str_eq(label(&n, "pid"), "42");
	ck_assert_str_eq(label(&n, "exe"), "/usr/bin/a_b_c_");
	ck_assert_int_eq(n.labels.n, 3);
	cp_pyro_name_release(&n);
	free(s);
	ck_assert_int_eq(cp_pyro_name_format("a{b}", NULL, 0, &s), 0);
	ck_assert_str_eq(s, "a_b_{service_name=a_b_}");
	free(s);
}
END_TEST

/* ---- pprof pushes ---- */

/* A profile of these sample types (type/unit pairs) and period type, one
 * sample of stack main;work valued 1, 2, 3... */
static struct cp_profile *make(const char *const *types, size_t n, const char *pt, const char *pu)
{
	struct cp_profile *p = cp_profile_new();
	struct cp_function f = { 0 };
	struct cp_line line = { 0, 1, 0 };
	int64_t vals[8];
	uint32_t locs[2];
	int64_t st;
	size_t i;

	ck_assert_ptr_nonnull(p);
	for (i = 0; i < n; i++) {
		ck_assert_int_eq(cp_profile_add_sample_type(p, types[2 * i], types[2 * i + 1]), 0);
		vals[i] = (int64_t)i + 1;
	}
	ck_assert_int_eq(cp_profile_set_period_type(p, pt, pu, 10000000), 0);
	f.name = (uint32_t)cp_profile_str(p, "work");
	line.function = (uint32_t)cp_profile_function(p, &f);
	locs[0] = (uint32_t)cp_profile_location(p, 0, 0x10, &line, 1, false);
	f.name = (uint32_t)cp_profile_str(p, "main");
	line.function = (uint32_t)cp_profile_function(p, &f);
	locs[1] = (uint32_t)cp_profile_location(p, 0, 0x20, &line, 1, false);
	st = cp_profile_stack(p, locs, 2);
	ck_assert_int_ge(st, 0);
	ck_assert_int_eq(cp_profile_add_sample(p, (uint32_t)st, 0, vals), 0);
	p->duration_nanos = 10000000000LL;
	return p;
}

/* the stored type names of each part, "|"-separated, parts by ";" */
static void names(const struct cp_pyro_part *parts, size_t n, char *buf, size_t len)
{
	size_t i, k, o = 0;

	buf[0] = 0;
	for (i = 0; i < n; i++) {
		for (k = 0; k < parts[i].profile->ntypes; k++) {
			char t[256];

			ck_assert_int_eq(cp_store_type_name(parts[i].profile, (int)k, parts[i].name, t, sizeof(t)), 0);
			o += (size_t)snprintf(buf + o, len - o, "%s%s", k ? "|" : i ? ";" : "", t);
		}
	}
}

static void split_is(const char *const *types, size_t n, const char *pt, const char *pu, const char *suffix,
		     const char *want)
{
	struct cp_profile *p = make(types, n, pt, pu);
	struct cp_pyro_part *parts;
	size_t np;
	char got[1024];

	ck_assert_int_eq(cp_pyro_split(p, suffix, &parts, &np), 0);
	names(parts, np, got, sizeof(got));
	ck_assert_str_eq(got, want);
	cp_pyro_parts_free(parts, np);
}

START_TEST(test_split_node_wall)
{
	/* @datadog/pprof's time profile with collectCpuTime, as the Node.js client sends it */
	static const char *const t[] = { "sample", "count", "wall", "nanoseconds", "cpu", "nanoseconds" };
	struct cp_profile *p = make(t, 3, "wall", "nanoseconds");
	struct cp_pyro_part *parts;
	size_t np;

	split_is(t, 3, "wall", "nanoseconds", "cpu",
		 "wall:samples:count:wall:nanoseconds:delta|wall:wall:nanoseconds:wall:nanoseconds:delta;"
		 "process_cpu:cpu:nanoseconds:cpu:nanoseconds:delta");
	/* each part keeps its own values */
	ck_assert_int_eq(cp_pyro_split(p, "cpu", &parts, &np), 0);
	ck_assert_uint_eq(np, 2);
	ck_assert_int_eq(cp_profile_total(parts[0].profile, 1), 2);
	ck_assert_int_eq(cp_profile_total(parts[1].profile, 0), 3);
	ck_assert_int_eq(parts[1].profile->duration_nanos, 10000000000LL);
	cp_pyro_parts_free(parts, np);
}
END_TEST

START_TEST(test_split_others)
{
	static const char *const node_heap[] = { "objects", "count", "space", "bytes" };
	static const char *const go_cpu[] = { "samples", "count", "cpu", "nanoseconds" };
	static const char *const go_heap[] = { "alloc_objects", "count", "alloc_space", "bytes",
					       "inuse_objects", "count", "inuse_space", "bytes" };
	static const char *const go_mutex[] = { "contentions", "count", "delay", "nanoseconds" };
	static const char *const go_goroutine[] = { "goroutine", "count" };
	static const char *const other[] = { "exceptions", "count" };
	/* what cprof record --remote-api pyroscope pushes: each as it is in cprof's own store */
	static const char *const rec_cpu[] = { "cpu", "nanoseconds" };
	static const char *const rec_offcpu[] = { "offcpu", "nanoseconds" };
	static const char *const rec_wall[] = { "wall", "nanoseconds" };

	/* in-use memory is a gauge (cumulative.h): a value at a time, never :delta */
	split_is(node_heap, 2, "space", "bytes", "cpu",
		 "memory:inuse_objects:count:space:bytes|memory:inuse_space:bytes:space:bytes");
	split_is(go_cpu, 2, "cpu", "nanoseconds", "cpu",
		 "process_cpu:samples:count:cpu:nanoseconds:delta|process_cpu:cpu:nanoseconds:cpu:nanoseconds:delta");
	split_is(go_heap, 4, "space", "bytes", "cpu",
		 "memory:alloc_objects:count:space:bytes:delta|memory:alloc_space:bytes:space:bytes:delta|"
		 "memory:inuse_objects:count:space:bytes|memory:inuse_space:bytes:space:bytes");
	split_is(go_mutex, 2, "contentions", "count", "mutex",
		 "mutex:contentions:count:contentions:count:delta|mutex:delay:nanoseconds:contentions:count:delta");
	split_is(go_mutex, 2, "contentions", "count", "block_count",
		 "block:contentions:count:contentions:count:delta|block:delay:nanoseconds:contentions:count:delta");
	split_is(go_goroutine, 1, "goroutine", "count", "cpu",
		 "goroutines:goroutine:count:goroutine:count");
	split_is(rec_cpu, 1, "cpu", "nanoseconds", "cpu", "process_cpu:cpu:nanoseconds:cpu:nanoseconds:delta");
	split_is(rec_offcpu, 1, "offcpu", "nanoseconds", "cpu", "offcpu:offcpu:nanoseconds:offcpu:nanoseconds:delta");
	split_is(rec_wall, 1, "wall", "nanoseconds", "cpu", "wall:wall:nanoseconds:wall:nanoseconds:delta");
	/* no Pyroscope name: the store names it from the period type, as before */
	split_is(other, 1, "exceptions", "count", "cpu", "exceptions:exceptions:count:exceptions:count:delta");
}
END_TEST

/* ---- what one series may carry ---- */

START_TEST(test_labels_limits)
{
	struct cp_labels l = { 0 };
	char name[CP_LABEL_NAME_MAX + 2], value[CP_LABEL_VALUE_MAX + 2];
	size_t i;
	int err;

	for (i = 0; i < CP_LABELS_MAX; i++) {
		snprintf(name, sizeof(name), "l%zu", i);
		ck_assert_int_eq(cp_labels_add(&l, name, "v"), 0);
	}
	ck_assert_int_eq(cp_labels_add(&l, "one_more", "v"), -EINVAL);
	ck_assert_msg(strstr(cp_errmsg(EINVAL), "more than 64 labels"), "%s", cp_errmsg(EINVAL));
	/* the 160,000 labels of a hostile push: each refused at once, the set unchanged */
	for (i = 0; i < 160000; i++) {
		snprintf(name, sizeof(name), "m%zu", i);
		ck_assert_int_eq(cp_labels_add(&l, name, "v"), -EINVAL);
	}
	ck_assert_uint_eq(l.n, CP_LABELS_MAX);
	cp_labels_release(&l);

	memset(name, 'n', sizeof(name));
	name[CP_LABEL_NAME_MAX] = 0;
	memset(value, 'v', sizeof(value));
	value[CP_LABEL_VALUE_MAX] = 0;
	ck_assert_int_eq(cp_labels_add(&l, name, value), 0); /* at the limits */
	cp_labels_release(&l);
	name[CP_LABEL_NAME_MAX] = 'n';
	name[CP_LABEL_NAME_MAX + 1] = 0;
	err = cp_labels_add(&l, name, "v");
	ck_assert_int_eq(err, -EINVAL);
	ck_assert_msg(strstr(cp_errmsg(EINVAL), "longer than 1024 bytes"), "%s", cp_errmsg(EINVAL));
	value[CP_LABEL_VALUE_MAX] = 'v';
	value[CP_LABEL_VALUE_MAX + 1] = 0;
	err = cp_labels_add(&l, "k", value);
	ck_assert_int_eq(err, -EINVAL);
	ck_assert_msg(strstr(cp_errmsg(EINVAL), "value of label 'k' is longer than 2048"), "%s", cp_errmsg(EINVAL));
	ck_assert_uint_eq(l.n, 0);
	/* a name given twice is still refused */
	ck_assert_int_eq(cp_labels_add(&l, "k", "1"), 0);
	ck_assert_int_eq(cp_labels_add(&l, "k", "2"), -EINVAL);
	ck_assert_msg(strstr(cp_errmsg(EINVAL), "given twice"), "%s", cp_errmsg(EINVAL));
	cp_labels_release(&l);
}
END_TEST

/* ---- -l NAME=VALUE: one rule for record, scrape and import ---- */

#define ck_msg_has(text) ck_assert_msg(strstr(cp_errmsg(EINVAL), text), "%s", cp_errmsg(EINVAL))

START_TEST(test_label_arg)
{
	struct cp_labels l = { 0 }, file = { 0 };
	char arg[64];

	ck_assert_int_eq(cp_label_arg(&l, "env=prod"), 0);
	ck_assert_int_eq(cp_label_arg(&l, "_x1=a=b"), 0); /* the value is all after the first = */
	ck_assert_int_eq(cp_label_arg(&l, "empty="), 0);
	ck_assert_uint_eq(l.n, 3);
	ck_assert_str_eq(l.kv[1].name, "_x1");
	ck_assert_str_eq(l.kv[1].value, "a=b");
	ck_assert_str_eq(l.kv[2].value, "");
	/* refused, each with the reason, and the set unchanged */
	ck_assert_int_eq(cp_label_arg(&l, "novalue"), -EINVAL);
	ck_msg_has("bad label 'novalue': want NAME=VALUE");
	ck_assert_int_eq(cp_label_arg(&l, "1a=b"), -EINVAL);
	ck_assert_int_eq(cp_label_arg(&l, "bad-name=x"), -EINVAL);
	ck_assert_int_eq(cp_label_arg(&l, "=x"), -EINVAL);
	ck_assert_int_eq(cp_label_arg(&l, "__name__=x"), -EINVAL);
	ck_msg_has("reserved");
	ck_assert_int_eq(cp_label_arg(&l, "env=dev"), -EINVAL);
	ck_msg_has("label 'env' is given twice");
	ck_assert_uint_eq(l.n, 3);
	while (l.n < CP_LABEL_ARGS_MAX) {
		snprintf(arg, sizeof(arg), "l%zu=v", l.n);
		ck_assert_int_eq(cp_label_arg(&l, arg), 0);
	}
	ck_assert_int_eq(cp_label_arg(&l, "one_more=v"), -EINVAL);
	ck_msg_has("too many labels (at most 32)");
	cp_labels_release(&l);

	/* the file's labels under the options': the options win, the file's others stay first */
	ck_assert_int_eq(cp_label_arg(&file, "env=prod"), 0);
	ck_assert_int_eq(cp_label_arg(&file, "team=infra"), 0);
	ck_assert_int_eq(cp_label_arg(&l, "env=dev"), 0);
	ck_assert_int_eq(cp_labels_take_defaults(&l, &file), 0);
	ck_assert_uint_eq(file.n, 0);
	ck_assert_uint_eq(l.n, 2);
	ck_assert_str_eq(l.kv[0].name, "team");
	ck_assert_str_eq(l.kv[1].name, "env");
	ck_assert_str_eq(l.kv[1].value, "dev");
	/* more than CP_LABEL_ARGS_MAX in all: refused, both unchanged */
	for (size_t i = 0; i < CP_LABEL_ARGS_MAX; i++) {
		snprintf(arg, sizeof(arg), "f%zu=v", i);
		ck_assert_int_eq(cp_label_arg(&file, arg), 0);
	}
	ck_assert_int_eq(cp_labels_take_defaults(&l, &file), -EINVAL);
	ck_msg_has("too many labels");
	ck_assert_uint_eq(l.n, 2);
	ck_assert_uint_eq(file.n, CP_LABEL_ARGS_MAX);
	cp_labels_release(&l);
	cp_labels_release(&file);
}
END_TEST

/* a writeraw body with one series of many labels: refused with the reason */
static int count_profiles(void *ctx, const struct cp_labels *labels, const uint8_t *raw, size_t rawlen)
{
	(void)labels, (void)raw, (void)rawlen;
	++*(int *)ctx;
	return 0;
}

START_TEST(test_writeraw_many_labels)
{
	size_t n = 20000, i, len = 0;
	char *body = malloc(n * 40 + 128);
	int calls = 0, err;

	ck_assert_ptr_nonnull(body);
	len += (size_t)sprintf(body, "{\"series\":[{\"labels\":{\"labels\":[");
	for (i = 0; i < n; i++)
		len += (size_t)sprintf(body + len, "%s{\"name\":\"l%zu\",\"value\":\"v\"}", i ? "," : "", i);
	len += (size_t)sprintf(body + len, "]},\"samples\":[{\"rawProfile\":\"\"}]}]}");
	err = cp_parca_writeraw(body, len, count_profiles, &calls);
	ck_assert_int_eq(err, -EINVAL);
	ck_assert_msg(strstr(cp_errmsg(EINVAL), "series 0: more than 64 labels"), "%s", cp_errmsg(EINVAL));
	ck_assert_int_eq(calls, 0);
	free(body);
}
END_TEST

/* a writeraw body of many small JSON values: refused before jansson parses
 * it (30 MB of "{}," took 2.3 GB); what strings hold does not count */
static char *json_of(const char *head, const char *item, size_t n, const char *tail, size_t *len)
{
	size_t il = strlen(item), hl = strlen(head), tl = strlen(tail), i;
	char *b = malloc(hl + n * (il + 1) + tl + 1), *p = b;

	ck_assert_ptr_nonnull(b);
	memcpy(p, head, hl);
	p += hl;
	for (i = 0; i < n; i++) {
		if (i)
			*p++ = ',';
		memcpy(p, item, il);
		p += il;
	}
	memcpy(p, tail, tl + 1);
	*len = (size_t)(p - b) + tl;
	return b;
}

START_TEST(test_writeraw_json_bounded)
{
	size_t len;
	int calls = 0;
	char *b;

	b = json_of("{\"series\":[{\"samples\":[", "{}", 100001, "]}]}", &len);
	ck_assert_int_eq(cp_parca_writeraw(b, len, count_profiles, &calls), -EFBIG);
	ck_assert_msg(strstr(cp_errmsg(EFBIG), "over 100000 JSON objects and arrays"), "%s", cp_errmsg(EFBIG));
	free(b);
	b = json_of("{\"series\":[{\"samples\":[], \"x\":[", "1", 1000002, "]}]}", &len);
	ck_assert_int_eq(cp_parca_writeraw(b, len, count_profiles, &calls), -EFBIG);
	ck_assert_msg(strstr(cp_errmsg(EFBIG), "over 1000000 JSON values"), "%s", cp_errmsg(EFBIG));
	free(b);
	/* braces, brackets and commas in strings (escaped quotes among them) are text */
	b = json_of("{\"series\":[{\"samples\":[], \"x\":\"\\\"", "{[", 200000, "\"}]}", &len);
	ck_assert_int_eq(cp_parca_writeraw(b, len, count_profiles, &calls), 0);
	free(b);
	/* at the limit */
	b = json_of("{\"series\":[{\"samples\":[", "{}", 99996, "]}]}", &len); /* and 4 around them */
	ck_assert_int_eq(cp_parca_writeraw(b, len, count_profiles, &calls), -EINVAL); /* no rawProfile */
	ck_assert_int_eq(calls, 0);
	free(b);
}
END_TEST

/* the lines format: a line is a sample, counted before the text is copied */
START_TEST(test_lines_limit)
{
	struct cp_pyro_type t;
	struct cp_profile *p;

	cp_pyro_type("cpu", NULL, &t);
	cp_decode_limits_set(&(struct cp_decode_limits){ .max_samples = 3 });
	p = cp_pyro_decode_text("a;b\n\na;c\r\nb\n", 12, 1, &t, 100, 0, 0);
	ck_assert_ptr_nonnull(p);
	cp_profile_free(p);
	errno = 0;
	ck_assert_ptr_null(cp_pyro_decode_text("a;b\n\na;c\r\nb\nc\n", 14, 1, &t, 100, 0, 0));
	ck_assert_int_eq(errno, EFBIG);
	ck_assert_msg(strstr(cp_errmsg(EFBIG), "over 3 samples"), "%s", cp_errmsg(EFBIG));
	errno = 0;
	ck_assert_ptr_null(cp_pyro_decode_text("a 1\nb 1\nc 1\nd 1\n", 16, 0, &t, 100, 0, 0));
	ck_assert_int_eq(errno, EFBIG);
	cp_decode_limits_set(&(struct cp_decode_limits){ 0 });
}
END_TEST

/* Pyroscope's legacy trie and tree bodies as folded text */
START_TEST(test_trie_tree)
{
	/* root "", main (5) with children ";work" (30) and ";idle" (10); the tree's names are frames */
	static const uint8_t trie[] = { 0, 0, 1, 4, 'm', 'a', 'i', 'n', 5, 2, 5, ';', 'w', 'o', 'r', 'k', 30, 0,
					5, ';', 'i', 'd', 'l', 'e', 10, 0 };
	static const uint8_t tree[] = { 0, 7, 1, 4, 'm', 'a', 'i', 'n', 5, 2, 4, 'w', 'o', 'r', 'k', 30, 0,
					4, 'i', 'd', 'l', 'e', 10, 0 };
	uint8_t bad[sizeof(trie)];
	char *text;
	size_t len;

	ck_assert_int_eq(cp_pyro_nodes_folded(trie, sizeof(trie), 0, &text, &len), 0);
	ck_assert_str_eq(text, "main 5\nmain;work 30\nmain;idle 10\n");
	ck_assert_uint_eq(len, strlen(text));
	free(text);
	/* the tree's root value (7) is not a stack's */
	ck_assert_int_eq(cp_pyro_nodes_folded(tree, sizeof(tree), 1, &text, &len), 0);
	ck_assert_str_eq(text, "main 5\nmain;work 30\nmain;idle 10\n");
	free(text);
	/* cut anywhere: refused, never read past the end */
	for (size_t n = 1; n < sizeof(trie); n++)
		ck_assert_int_eq(cp_pyro_nodes_folded(trie, n, 0, &text, &len), -EINVAL);
	ck_assert_int_eq(cp_pyro_nodes_folded(trie, 0, 0, &text, &len), -EINVAL);
	ck_assert_ptr_null(text);
	memcpy(bad, trie, sizeof(trie));
	bad[6] = '\n'; /* a newline in a name would make two folded lines */
	ck_assert_int_eq(cp_pyro_nodes_folded(bad, sizeof(bad), 0, &text, &len), -EINVAL);
	ck_assert_msg(strstr(cp_errmsg(EINVAL), "trie: a name at byte 4 holds a newline"), "%s", cp_errmsg(EINVAL));
	cp_decode_limits_set(&(struct cp_decode_limits){ .max_samples = 3 });
	ck_assert_int_eq(cp_pyro_nodes_folded(trie, sizeof(trie), 0, &text, &len), -EFBIG);
	cp_decode_limits_set(&(struct cp_decode_limits){ 0 });
}
END_TEST

/* sample_type_config: a display-name decides the profile's name */
START_TEST(test_sample_type_config)
{
	static const char ok[] = "{\"contentions\":{\"display-name\":\"block_count\",\"units\":\"lock_samples\","
				 "\"cumulative\":true},\"delay\":{\"aggregation\":\"sum\"}}";
	struct cp_pyro_stc c;

	ck_assert_int_eq(cp_pyro_stc_parse(ok, strlen(ok), &c), 0);
	ck_assert_uint_eq(c.n, 2);
	ck_assert_str_eq(cp_pyro_stc_display(&c, "contentions"), "block_count");
	ck_assert_ptr_null(cp_pyro_stc_display(&c, "delay"));
	ck_assert_ptr_null(cp_pyro_stc_display(&c, "samples"));
	ck_assert_ptr_null(cp_pyro_stc_display(NULL, "samples"));
	cp_pyro_stc_free(&c);
	ck_assert_int_eq(cp_pyro_stc_parse("[]", 2, &c), -EINVAL);
	ck_assert_int_eq(cp_pyro_stc_parse("{\"a\":1}", 7, &c), -EINVAL);
	ck_assert_int_eq(cp_pyro_stc_parse("{\"a\":{\"cumulative\":\"yes\"}}", 26, &c), -EINVAL);
	ck_assert_msg(strstr(cp_errmsg(EINVAL), "'a': cumulative is not true or false"), "%s", cp_errmsg(EINVAL));
	ck_assert_int_eq(cp_pyro_stc_parse("{\"a\":{},\"a\":{}}", 15, &c), -EINVAL); /* twice */
	ck_assert_int_eq(cp_pyro_stc_parse("{", 1, &c), -EINVAL);
	ck_assert_uint_eq(c.n, 0);
}
END_TEST

/* ---- the table ---- */

/* every row is whole, named once, and served: its route is in cp_api_routes */
START_TEST(test_protocol_table)
{
	size_t n = cp_ingest_protocol_count(), nroutes, i, j, found;
	const struct cp_route *routes = cp_api_routes(&nroutes);

	ck_assert_uint_ge(n, 3);
	ck_assert_uint_le(n, CP_INGEST_PROTOCOLS_MAX);
	for (i = 0; i < n; i++) {
		const struct cp_ingest_protocol *p = &cp_ingest_protocols[i];

		ck_assert_ptr_nonnull(p->name);
		ck_assert_msg(*p->name, "row %zu has an empty name", i);
		ck_assert_ptr_nonnull(p->method);
		ck_assert_ptr_nonnull(p->path);
		ck_assert_msg(p->path[0] == '/', "%s: path '%s'", p->name, p->path);
		ck_assert_ptr_nonnull(p->route);
		ck_assert_msg(p->decode != NULL, "%s has no decoder", p->name);
		for (j = 0; j < i; j++) {
			ck_assert_msg(strcmp(p->name, cp_ingest_protocols[j].name), "%s: two rows", p->name);
			ck_assert_msg(strcmp(p->route, cp_ingest_protocols[j].route), "route %s: two rows", p->route);
			ck_assert_msg(strcmp(p->path, cp_ingest_protocols[j].path) ||
					      strcmp(p->method, cp_ingest_protocols[j].method),
				      "%s %s: two rows", p->method, p->path);
		}
		ck_assert_ptr_eq(cp_ingest_protocol_at(p->method, p->path), p);
		for (j = 0, found = 0; j < nroutes; j++) {
			if (strcmp(routes[j].path, p->path) || strcmp(routes[j].method, p->method))
				continue;
			ck_assert_str_eq(routes[j].name, p->route);
			ck_assert_ptr_nonnull(routes[j].fn);
			ck_assert(!routes[j].open);
			found++;
		}
		ck_assert_msg(found == 1, "%s %s: %zu routes", p->method, p->path, found);
	}
	ck_assert_ptr_null(cp_ingest_protocols[n].name);
	ck_assert_ptr_null(cp_ingest_protocol_at("GET", "/ingest"));
	ck_assert_ptr_null(cp_ingest_protocol_at("POST", "/ingest/"));
	/* the three of docs/API.md */
	ck_assert_str_eq(cp_ingest_protocol_at("POST", "/api/v1/push")->name, "native");
	ck_assert_str_eq(cp_ingest_protocol_at("POST", "/ingest")->name, "pyroscope");
	ck_assert_str_eq(cp_ingest_protocol_at("POST", "/api/profiles/writeraw")->name, "parca");
}
END_TEST

/* the writeraw JSON bounds are decode limits like the others */
START_TEST(test_writeraw_json_limits_set)
{
	size_t len;
	int calls = 0;
	char *b = json_of("{\"series\":[{\"samples\":[", "{}", 20, "]}]}", &len);

	ck_assert_uint_eq(cp_decode_limits()->max_json_containers, CP_DECODE_MAX_JSON_CONTAINERS);
	ck_assert_uint_eq(cp_decode_limits()->max_json_values, CP_DECODE_MAX_JSON_VALUES);
	cp_decode_limits_set(&(struct cp_decode_limits){ .max_json_containers = 10 });
	ck_assert_int_eq(cp_parca_writeraw(b, len, count_profiles, &calls), -EFBIG);
	ck_assert_msg(strstr(cp_errmsg(EFBIG), "over 10 JSON objects and arrays"), "%s", cp_errmsg(EFBIG));
	cp_decode_limits_set(&(struct cp_decode_limits){ .max_json_values = 10 });
	ck_assert_int_eq(cp_parca_writeraw(b, len, count_profiles, &calls), -EFBIG);
	ck_assert_msg(strstr(cp_errmsg(EFBIG), "over 10 JSON values"), "%s", cp_errmsg(EFBIG));
	cp_decode_limits_set(&(struct cp_decode_limits){ 0 });
	ck_assert_uint_eq(cp_decode_limits()->max_json_containers, CP_DECODE_MAX_JSON_CONTAINERS);
	ck_assert_int_eq(cp_parca_writeraw(b, len, count_profiles, &calls), -EINVAL); /* no rawProfile */
	ck_assert_int_eq(calls, 0);
	free(b);
}
END_TEST

/* ---- format=speedscope ---- */

#define SS_HEAD "{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\",\"shared\":{\"frames\":" \
		"[{\"name\":\"a\",\"file\":\"a.js\",\"line\":2},{\"name\":\"b\"},{\"name\":\"c\"}]},\"profiles\":["

/* json decoded as a push named name (rate: sampleRate) into b */
static int ss_decode(const char *json, const char *name, int64_t rate, struct cp_ingest_batch *b)
{
	struct cp_pyro_name nm;
	struct cp_pyro_type t;
	struct cp_pyro_push push = { 0 };
	int err;

	memset(b, 0, sizeof(*b));
	ck_assert_int_eq(cp_pyro_name_parse(name, &nm), 0);
	cp_pyro_type(nm.suffix, NULL, &t);
	push.name = &nm;
	push.from_ns = 1000;
	push.until_ns = 2000;
	push.sample_rate = rate;
	push.body = (const uint8_t *)json;
	push.len = strlen(json);
	err = cp_ingest_pyroscope_speedscope(&push, &t, b);
	cp_pyro_name_release(&nm);
	return err;
}

static const char *ss_label(const struct cp_store_append *a, const char *name)
{
	for (size_t i = 0; i < a->nlabels; i++)
		if (!strcmp(a->labels[i].name, name))
			return a->labels[i].value;
	return NULL;
}

static const char *ss_type_of(const struct cp_profile *p)
{
	return cp_profile_string(p, p->sample_types[0].type);
}

START_TEST(test_speedscope_sampled)
{
	struct cp_ingest_batch b;

	/* milliseconds, a fraction kept: a;b 15, a;c 2.5, a 1 */
	ck_assert_int_eq(ss_decode(SS_HEAD "{\"type\":\"sampled\",\"name\":\"p\",\"unit\":\"milliseconds\",\"startValue\":0,"
					   "\"endValue\":9,\"samples\":[[0,1],[0,1],[0,2],[0],[]],\"weights\":[10,5,2.5,1,7]}]}",
				   "app", 100, &b),
			 0);
	ck_assert_uint_eq(b.n, 1);
	ck_assert_str_eq(b.a[0].name, "process_cpu");
	ck_assert_str_eq(ss_type_of(b.a[0].profile), "cpu");
	ck_assert_int_eq(cp_profile_total(b.a[0].profile, 0), 18500000); /* the empty sample left out */
	ck_assert_uint_eq(b.a[0].profile->nsamples, 3);
	ck_assert_int_eq(b.a[0].time_ns, 1000);
	ck_assert_int_eq(b.a[0].profile->duration_nanos, 1000);
	ck_assert_str_eq(ss_label(&b.a[0], "profile_name"), "p");
	ck_assert_str_eq(ss_label(&b.a[0], "service_name"), "app");
	cp_ingest_batch_release(&b);
	/* the units: seconds, microseconds, nanoseconds; none counts samples at sampleRate */
	ck_assert_int_eq(ss_decode(SS_HEAD "{\"type\":\"sampled\",\"name\":\"p\",\"unit\":\"seconds\",\"startValue\":0,"
					   "\"endValue\":9,\"samples\":[[0,1]],\"weights\":[2]}]}",
				   "app.cpu", 100, &b),
			 0);
	ck_assert_int_eq(cp_profile_total(b.a[0].profile, 0), 2000000000);
	cp_ingest_batch_release(&b);
	ck_assert_int_eq(ss_decode(SS_HEAD "{\"type\":\"sampled\",\"name\":\"p\",\"unit\":\"microseconds\",\"startValue\":0,"
					   "\"endValue\":9,\"samples\":[[0,1]],\"weights\":[3]}]}",
				   "app", 100, &b),
			 0);
	ck_assert_int_eq(cp_profile_total(b.a[0].profile, 0), 3000);
	cp_ingest_batch_release(&b);
	ck_assert_int_eq(ss_decode(SS_HEAD "{\"type\":\"sampled\",\"name\":\"p\",\"unit\":\"nanoseconds\",\"startValue\":0,"
					   "\"endValue\":9,\"samples\":[[0,1]],\"weights\":[3]}]}",
				   "app", 100, &b),
			 0);
	ck_assert_int_eq(cp_profile_total(b.a[0].profile, 0), 3);
	cp_ingest_batch_release(&b);
	ck_assert_int_eq(ss_decode(SS_HEAD "{\"type\":\"sampled\",\"name\":\"p\",\"unit\":\"none\",\"startValue\":0,"
					   "\"endValue\":9,\"samples\":[[0,1],[2]],\"weights\":[3,1]}]}",
				   "app", 100, &b),
			 0);
	ck_assert_int_eq(cp_profile_total(b.a[0].profile, 0), 40000000); /* 4 samples of 10 ms */
	cp_ingest_batch_release(&b);
	/* bytes alone under a count type: as they are */
	ck_assert_int_eq(ss_decode(SS_HEAD "{\"type\":\"sampled\",\"name\":\"p\",\"unit\":\"bytes\",\"startValue\":0,"
					   "\"endValue\":9,\"samples\":[[0,1]],\"weights\":[4096]}]}",
				   "app.alloc_space", 100, &b),
			 0);
	ck_assert_str_eq(b.a[0].name, "memory");
	ck_assert_str_eq(ss_type_of(b.a[0].profile), "alloc_space");
	ck_assert_int_eq(cp_profile_total(b.a[0].profile, 0), 4096);
	cp_ingest_batch_release(&b);
}
END_TEST

START_TEST(test_speedscope_evented)
{
	struct cp_ingest_batch b;
	struct cp_frame *fr = NULL;
	size_t cap = 0, i;
	int64_t ab = 0;

	/* a 0..10 { b 1..4 { c 2..3 } b 6..9 }: a 4, a;b 5, a;b;c 1 (milliseconds) */
	ck_assert_int_eq(ss_decode(SS_HEAD "{\"type\":\"evented\",\"name\":\"e\",\"unit\":\"milliseconds\",\"startValue\":0,"
					   "\"endValue\":10,\"events\":[{\"type\":\"O\",\"at\":0,\"frame\":0},"
					   "{\"type\":\"O\",\"at\":1,\"frame\":1},{\"type\":\"O\",\"at\":2,\"frame\":2},"
					   "{\"type\":\"C\",\"at\":3,\"frame\":2},{\"type\":\"C\",\"at\":4,\"frame\":1},"
					   "{\"type\":\"O\",\"at\":6,\"frame\":1},{\"type\":\"C\",\"at\":9,\"frame\":1},"
					   "{\"type\":\"C\",\"at\":10,\"frame\":0}]}]}",
				   "app.wall", 100, &b),
			 0);
	ck_assert_uint_eq(b.n, 1);
	ck_assert_str_eq(b.a[0].name, "wall");
	ck_assert_int_eq(cp_profile_total(b.a[0].profile, 0), 10000000);
	ck_assert_uint_eq(b.a[0].profile->nsamples, 3);
	for (i = 0; i < b.a[0].profile->nsamples; i++) {
		const struct cp_profile *p = b.a[0].profile;
		size_t n = (size_t)cp_profile_frames(p, p->samples[i].stack, &fr, &cap);

		if (n == 2) /* leaf first */
			ab = cp_profile_values(p, (uint32_t)i)[0];
	}
	free(fr);
	ck_assert_int_eq(ab, 5000000);
	cp_ingest_batch_release(&b);
}
END_TEST

START_TEST(test_speedscope_several)
{
	struct cp_ingest_batch b;

	/* two of one key merged, one other of seconds, one of bytes: 3 profiles */
	ck_assert_int_eq(
		ss_decode(SS_HEAD
			  "{\"type\":\"sampled\",\"name\":\"one\",\"unit\":\"seconds\",\"startValue\":0,\"endValue\":1,"
			  "\"samples\":[[0]],\"weights\":[1]},"
			  "{\"type\":\"sampled\",\"name\":\"two\",\"unit\":\"seconds\",\"startValue\":0,\"endValue\":1,"
			  "\"samples\":[[0,1]],\"weights\":[1]},"
			  "{\"type\":\"evented\",\"name\":\"one\",\"unit\":\"seconds\",\"startValue\":0,\"endValue\":1,"
			  "\"events\":[{\"type\":\"O\",\"at\":0,\"frame\":2},{\"type\":\"C\",\"at\":3,\"frame\":2}]},"
			  "{\"type\":\"sampled\",\"name\":\"one\",\"unit\":\"seconds\",\"startValue\":0,\"endValue\":1,"
			  "\"samples\":[[0]],\"weights\":[2]},"
			  "{\"type\":\"sampled\",\"name\":\"heap\",\"unit\":\"bytes\",\"startValue\":0,\"endValue\":1,"
			  "\"samples\":[[0]],\"weights\":[64]}]}",
			  "app{env=x}", 100, &b),
		0);
	ck_assert_uint_eq(b.n, 4); /* heap, one (evented), one (sampled, merged), two */
	ck_assert_uint_eq(b.profiles, 4);
	for (size_t i = 0; i < b.n; i++) {
		const char *pn = ss_label(&b.a[i], "profile_name");
		int64_t tot = cp_profile_total(b.a[i].profile, 0);

		ck_assert_str_eq(ss_label(&b.a[i], "env"), "x");
		if (!strcmp(pn, "heap")) {
			ck_assert_str_eq(b.a[i].name, "memory");
			ck_assert_str_eq(ss_type_of(b.a[i].profile), "samples");
			ck_assert_int_eq(tot, 64);
		} else {
			ck_assert_str_eq(b.a[i].name, "wall");
			ck_assert_msg(tot == 3000000000 || (!strcmp(pn, "two") && tot == 1000000000), "%s %lld", pn,
				      (long long)tot);
		}
	}
	cp_ingest_batch_release(&b);
	/* unit none among several: Pyroscope has no type for it */
	ck_assert_int_eq(
		ss_decode(SS_HEAD "{\"type\":\"sampled\",\"name\":\"one\",\"unit\":\"none\",\"samples\":[[0]],\"weights\":[1]},"
				  "{\"type\":\"sampled\",\"name\":\"two\",\"unit\":\"none\",\"samples\":[[0]],\"weights\":[1]}]}",
			  "app", 100, &b),
		-EINVAL);
	ck_assert_msg(strstr(cp_errmsg(EINVAL), "unit none among several"), "%s", cp_errmsg(EINVAL));
	cp_ingest_batch_release(&b);
}
END_TEST

static void ss_bad(const char *json, int want, const char *msg)
{
	struct cp_ingest_batch b;

	ck_assert_msg(ss_decode(json, "app", 100, &b) == want, "%.300s: %s", json, cp_errmsg(EINVAL));
	ck_assert_msg(strstr(cp_errmsg(-want), msg), "'%s' not in '%s'", msg, cp_errmsg(-want));
	ck_assert_msg(!strchr(cp_errmsg(-want), '\n'), "one line: %s", cp_errmsg(-want));
	cp_ingest_batch_release(&b);
}

#define SS_SAMPLED(s, w) SS_HEAD "{\"type\":\"sampled\",\"name\":\"p\",\"unit\":\"seconds\",\"samples\":" s ",\"weights\":" w "}]}"
#define SS_EVENTS(e) SS_HEAD "{\"type\":\"evented\",\"name\":\"p\",\"unit\":\"seconds\",\"startValue\":1,\"events\":" e "}]}"

START_TEST(test_speedscope_bad)
{
	ss_bad("", -EINVAL, "empty");
	ss_bad("{\"profiles\":", -EINVAL, "not JSON");
	ss_bad("{\"profiles\":[]}", -EINVAL, "$schema");
	ss_bad(SS_HEAD "]}", -EINVAL, "\"profiles\" is empty");
	ss_bad(SS_SAMPLED("[[0,3]]", "[1]"), -EINVAL, "sample 0: frame index is not one of the 3 shared frames");
	ss_bad(SS_SAMPLED("[[0,-1]]", "[1]"), -EINVAL, "frame index");
	ss_bad(SS_SAMPLED("[[0,1.5]]", "[1]"), -EINVAL, "frame index");
	ss_bad(SS_SAMPLED("[[0,\"1\"]]", "[1]"), -EINVAL, "frame index");
	ss_bad(SS_SAMPLED("[[0],[1]]", "[1]"), -EINVAL, "2 samples but 1 weights");
	ss_bad(SS_SAMPLED("[[0]]", "[-1]"), -EINVAL, "negative");
	ss_bad(SS_SAMPLED("[[0]]", "[1e300]"), -EINVAL, "overflows");
	ss_bad(SS_SAMPLED("[[0],[1]]", "[5e9,5e9]"), -EINVAL, "total overflows"); /* 5e18 ns each */
	ss_bad(SS_HEAD "{\"type\":\"sampled\",\"unit\":\"seconds\",\"samples\":[[0]],\"weights\":[5e9]},"
		       "{\"type\":\"sampled\",\"unit\":\"seconds\",\"samples\":[[1]],\"weights\":[5e9]}]}",
	       -EINVAL, "total overflows");
	ss_bad(SS_HEAD "{\"type\":\"flame\",\"unit\":\"seconds\"}]}", -EINVAL, "neither \"sampled\" nor \"evented\"");
	ss_bad(SS_HEAD "{\"type\":\"sampled\",\"unit\":\"parsecs\"}]}", -EINVAL, "unknown \"unit\" 'parsecs'");
	ss_bad(SS_HEAD "{\"type\":\"sampled\",\"unit\":\"seconds\"}]}", -EINVAL, "\"samples\" and \"weights\"");
	ss_bad("{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\",\"shared\":{\"frames\":[{\"n\":1}]},"
	       "\"profiles\":[{\"type\":\"sampled\",\"unit\":\"seconds\",\"samples\":[[0]],\"weights\":[1]}]}",
	       -EINVAL, "shared frame 0 has no \"name\"");
	/* unbalanced events, out of order, unknown */
	ss_bad(SS_EVENTS("[{\"type\":\"C\",\"at\":1,\"frame\":0}]"), -EINVAL, "event 0: closes frame 0, which is not open");
	ss_bad(SS_EVENTS("[{\"type\":\"O\",\"at\":1,\"frame\":0},{\"type\":\"O\",\"at\":2,\"frame\":1},"
			 "{\"type\":\"C\",\"at\":3,\"frame\":0}]"),
	       -EINVAL, "event 2: closes frame 0, not the one open last");
	ss_bad(SS_EVENTS("[{\"type\":\"O\",\"at\":2,\"frame\":0},{\"type\":\"C\",\"at\":1,\"frame\":0}]"), -EINVAL,
	       "event 1: at 1 is before 2");
	ss_bad(SS_EVENTS("[{\"type\":\"O\",\"at\":0,\"frame\":0}]"), -EINVAL, "before 1 (startValue)");
	ss_bad(SS_EVENTS("[{\"type\":\"X\",\"at\":1,\"frame\":0}]"), -EINVAL, "event 0: wants");
	ss_bad(SS_EVENTS("[{\"type\":\"O\",\"at\":1,\"frame\":9}]"), -EINVAL, "event 0: frame index");
}
END_TEST

START_TEST(test_speedscope_limits)
{
	struct cp_ingest_batch b;
	size_t len;
	char *j;

	/* counted before it is parsed */
	j = json_of(SS_HEAD "{\"type\":\"sampled\",\"unit\":\"seconds\",\"weights\":[],\"samples\":[", "[]", 100001,
		    "]}]}", &len);
	ck_assert_int_eq(ss_decode(j, "app", 100, &b), -EFBIG);
	ck_assert_msg(strstr(cp_errmsg(EFBIG), "over 100000 JSON objects and arrays"), "%s", cp_errmsg(EFBIG));
	cp_ingest_batch_release(&b);
	free(j);
	j = json_of(SS_HEAD "{\"type\":\"sampled\",\"unit\":\"seconds\",\"samples\":[],\"weights\":[", "1", 1000002,
		    "]}]}", &len);
	ck_assert_int_eq(ss_decode(j, "app", 100, &b), -EFBIG);
	ck_assert_msg(strstr(cp_errmsg(EFBIG), "over 1000000 JSON values"), "%s", cp_errmsg(EFBIG));
	cp_ingest_batch_release(&b);
	free(j);
	/* samples and frames */
	cp_decode_limits_set(&(struct cp_decode_limits){ .max_samples = 2 });
	ss_bad(SS_SAMPLED("[[0],[1],[2]]", "[1,1,1]"), -EFBIG, "over 2 samples");
	ss_bad(SS_EVENTS("[{\"type\":\"O\",\"at\":1,\"frame\":0},{\"type\":\"O\",\"at\":2,\"frame\":1},"
			 "{\"type\":\"C\",\"at\":3,\"frame\":1},{\"type\":\"C\",\"at\":4,\"frame\":0}]"),
	       -EFBIG, "over 2 samples");
	cp_decode_limits_set(&(struct cp_decode_limits){ .max_locations = 2 });
	ss_bad(SS_SAMPLED("[[0]]", "[1]"), -EFBIG, "over 2 frames");
	cp_decode_limits_set(&(struct cp_decode_limits){ 0 });
}
END_TEST

static Suite *ingest_suite(void)
{
	Suite *s = suite_create("ingest");
	TCase *tc = tcase_create("pyroscope");

	tcase_add_test(tc, test_label_names);
	tcase_add_test(tc, test_name_with_otel_labels);
	tcase_add_test(tc, test_name_format);
	tcase_add_test(tc, test_split_node_wall);
	tcase_add_test(tc, test_split_others);
	tcase_add_test(tc, test_labels_limits);
	tcase_add_test(tc, test_label_arg);
	tcase_add_test(tc, test_writeraw_many_labels);
	tcase_add_test(tc, test_writeraw_json_bounded);
	tcase_add_test(tc, test_lines_limit);
	tcase_add_test(tc, test_trie_tree);
	tcase_add_test(tc, test_sample_type_config);
	tcase_add_test(tc, test_writeraw_json_limits_set);
	tcase_add_test(tc, test_speedscope_sampled);
	tcase_add_test(tc, test_speedscope_evented);
	tcase_add_test(tc, test_speedscope_several);
	tcase_add_test(tc, test_speedscope_bad);
	tcase_add_test(tc, test_speedscope_limits);
	suite_add_tcase(s, tc);
	tc = tcase_create("table");
	tcase_add_test(tc, test_protocol_table);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(ingest_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}

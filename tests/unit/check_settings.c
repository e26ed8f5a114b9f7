/* SPDX-License-Identifier: MIT */
/* lib/settings.c (cprof.yaml and Parca's scrape_configs), the scrape
 * defaults of lib/scrape.c, and cp_profile_keep_types. */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "folded.h"
#include "profile.h"
#include "settings.h"

static int parse(const char *text, struct cp_config *c)
{
	return cp_config_parse(text, strlen(text), "t.yaml", c);
}

static const struct cp_scrape_profile *prof(const struct cp_scrape_job *j, const char *name)
{
	size_t i;

	for (i = 0; i < j->nprofiles; i++)
		if (!strcmp(j->profiles[i].name, name))
			return &j->profiles[i];
	return NULL;
}

START_TEST(test_server_keys)
{
	struct cp_config c;

	ck_assert_int_eq(parse("listen: 127.0.0.1:9\nmax_body: 1M\nobject_storage: {bucket: {}}\n", &c), 0);
	ck_assert_str_eq(c.listen, "127.0.0.1:9");
	ck_assert_str_eq(c.max_body, "1M");
	ck_assert_uint_eq(c.scrape.njobs, 0);
	cp_config_release(&c);
	ck_assert_int_eq(parse("", &c), 0);
	ck_assert_ptr_null(c.listen);
	cp_config_release(&c);
}
END_TEST

START_TEST(test_scrape_defaults)
{
	struct cp_config c;
	const struct cp_scrape_job *j;
	const struct cp_scrape_profile *p;

	ck_assert_int_eq(parse("scrape_configs:\n  - job_name: api\n    static_configs:\n      - targets: ['a:1', 'b:2']\n"
			       "        labels: {env: prod}\n",
			       &c),
			 0);
	ck_assert_uint_eq(c.scrape.njobs, 1);
	j = &c.scrape.jobs[0];
	ck_assert_str_eq(j->name, "api");
	ck_assert_int_eq(j->interval, 10000000000LL);
	ck_assert_int_eq(j->timeout, 13000000000LL); /* interval + 3s */
	ck_assert_str_eq(j->scheme, "http");
	ck_assert_uint_eq(j->nstatics, 1);
	ck_assert_uint_eq(j->statics[0].ntargets, 2);
	ck_assert_str_eq(j->statics[0].targets[1], "b:2");
	ck_assert_str_eq(j->statics[0].labels[0].name, "env");
	ck_assert_str_eq(j->statics[0].labels[0].value, "prod");
	/* Parca's default profiles */
	ck_assert_uint_eq(j->nprofiles, 5);
	ck_assert_ptr_nonnull(p = prof(j, "process_cpu"));
	ck_assert(p->delta && p->enabled);
	ck_assert_str_eq(p->path, "/debug/pprof/profile");
	ck_assert_ptr_nonnull(p = prof(j, "memory"));
	ck_assert(!p->delta);
	ck_assert_str_eq(p->path, "/debug/pprof/allocs");
	ck_assert_ptr_nonnull(prof(j, "goroutine"));
	ck_assert_ptr_nonnull(prof(j, "block"));
	ck_assert_ptr_nonnull(prof(j, "mutex"));
	cp_config_release(&c);
}
END_TEST

START_TEST(test_scrape_everything)
{
	struct cp_config c;
	const struct cp_scrape_job *j;
	const struct cp_scrape_profile *p;

	ck_assert_int_eq(parse("scrape_configs:\n"
			       "  - job_name: x\n"
			       "    scrape_interval: 20s\n"
			       "    scrape_timeout: 25s\n"
			       "    scheme: https\n"
			       "    params: {debug: ['0'], tag: v}\n"
			       "    static_configs: [{targets: ['[::1]:6060']}]\n"
			       "    profiling_config:\n"
			       "      path_prefix: /app\n"
			       "      pprof_config:\n"
			       "        memory: {enabled: false}\n"
			       "        process_cpu: {seconds: 5, keep_sample_type: [{type: cpu, unit: nanoseconds}]}\n"
			       "        fgprof: {enabled: true, path: /debug/fgprof, delta: true}\n",
			       &c),
			 0);
	j = &c.scrape.jobs[0];
	ck_assert_int_eq(j->interval, 20000000000LL);
	ck_assert_int_eq(j->timeout, 25000000000LL);
	ck_assert_str_eq(j->scheme, "https");
	ck_assert_uint_eq(j->nparams, 2);
	ck_assert_str_eq(j->params[0].name, "debug");
	ck_assert_str_eq(j->params[0].value, "0");
	ck_assert_str_eq(j->path_prefix, "/app");
	ck_assert(!prof(j, "memory")->enabled);
	p = prof(j, "process_cpu");
	ck_assert_int_eq(p->seconds, 5000000000LL);
	ck_assert_uint_eq(p->nkeep, 1);
	ck_assert_str_eq(p->keep[0].type, "cpu");
	ck_assert_str_eq(p->keep[0].unit, "nanoseconds");
	ck_assert_ptr_nonnull(p = prof(j, "fgprof"));
	ck_assert(p->delta && p->enabled);
	ck_assert_uint_eq(j->nprofiles, 6);
	cp_config_release(&c);
	/* names cprof knows get their usual path */
	ck_assert_int_eq(parse("scrape_configs:\n  - job_name: y\n    static_configs: [{targets: ['h:1']}]\n"
			       "    profiling_config:\n      pprof_config: {fgprof: {}, heap: {}}\n",
			       &c),
			 0);
	p = prof(&c.scrape.jobs[0], "fgprof");
	ck_assert_str_eq(p->path, "/debug/fgprof");
	ck_assert(p->delta);
	p = prof(&c.scrape.jobs[0], "heap");
	ck_assert_str_eq(p->path, "/debug/pprof/heap");
	ck_assert(!p->delta);
	cp_config_release(&c);
}
END_TEST

static void refused(const char *yaml, const char *msg)
{
	struct cp_config c;
	int err = parse(yaml, &c);

	ck_assert_int_eq(err, -EINVAL);
	ck_assert_msg(strstr(cp_errmsg(EINVAL), msg), "'%s' does not say '%s'", cp_errmsg(EINVAL), msg);
}

START_TEST(test_scrape_refused)
{
	refused("scrape_configs:\n  - job_name: a\n    bogus: 1\n", "t.yaml:3: unknown key in a scrape config 'bogus'");
	refused("scrape_configs:\n  - job_name: a\n    scrape_timeout: 5s\n    static_configs: [{targets: ['h:1']}]\n",
		"scrape_timeout must exceed the 10s");
	refused("scrape_configs:\n  - job_name: a\n    static_configs: [{targets: [nohostport]}]\n",
		"t.yaml:3: target 'nohostport' is not HOST:PORT");
	refused("scrape_configs:\n  - job_name: a\n    static_configs: [{targets: ['h:0']}]\n", "is not HOST:PORT");
	refused("scrape_configs:\n  - job_name: a\n    static_configs: [{targets: ['http://h:1']}]\n", "is not HOST:PORT");
	refused("scrape_configs:\n  - job_name: a\n    scrape_interval: -1s\n", "not a positive duration");
	refused("scrape_configs:\n  - job_name: a\n    static_configs: [{targets: ['h:1']}]\n  - job_name: a\n", "used twice");
	refused("scrape_configs:\n  - job_name: a\n", "t.yaml:2: job a has no targets");
	refused("scrape_configs:\n  - job_name: a\n    static_configs: [{targets: ['h:1']}]\n    profiling_config:\n"
		"      pprof_config: {memory: {enabled: false}, block: {enabled: false}, goroutine: {enabled: false},"
		" mutex: {enabled: false}, process_cpu: {enabled: false}}\n",
		"every profile disabled");
	refused("scrape_configs:\n  - scrape_interval: 1s\n", "wants a job_name");
	refused("scrape_configs:\n  - job_name: a\n    scheme: ftp\n", "http or https");
	refused("scrape_configs:\n  - job_name: a\n    relabel_configs: []\n", "relabel_configs are not applied");
	refused("scrape_configs:\n  - job_name: a\n    static_configs: [{targets: ['h:1'], labels: {'bad-name': x}}]\n",
		"not a label name");
	refused("scrape_configs:\n  - job_name: a\n    profiling_config: {pprof_config: {c: {enabled: true}}}\n",
		"wants a path starting with /");
	refused("scrape_configs:\n  - job_name: a\n    profiling_config: {pprof_config: {memory: {enabled: maybe}}}\n",
		"enabled wants true or false");
	refused("scrape_configs:\n  - job_name: a\n    profiling_config: {pprof_config: {memory: {seconds: x}}}\n",
		"seconds wants a whole number");
	refused("scrape_configs: {a: 1}\n", "scrape_configs wants a list");
	refused("listen: [1, 2]\n", "listen wants a single value");
	refused("a: [unclosed\n", "t.yaml:");
	refused("scrape_configs:\n  - job_name: a\n    profiling_config: {path_prefix: app}\n", "path_prefix wants a path");
	refused("scrape_configs:\n  - job_name: a\n    scrape_interval: 500ms\n    static_configs: [{targets: ['h:1']}]\n",
		"covers whole seconds");
}
END_TEST

START_TEST(test_keep_types)
{
	struct cp_profile *p = cp_folded_decode("a;b 3\na;c 4\n", 12);
	bool keep1[2] = { false, true }, none[2] = { false, false };
	int64_t v[2];
	uint32_t i;

	ck_assert_ptr_nonnull(p);
	/* a second type: each sample's value times 10 */
	cp_profile_clear_samples(p);
	cp_profile_add_sample_type(p, "samples", "count");
	cp_profile_add_sample_type(p, "cpu", "nanoseconds");
	for (i = 1; i <= 2; i++) {
		uint32_t loc = i;

		v[0] = i;
		v[1] = i * 10;
		ck_assert_int_eq(cp_profile_add_sample(p, (uint32_t)cp_profile_stack(p, &loc, 1), 0, v), 0);
	}
	ck_assert_int_eq(cp_profile_keep_types(p, none), -EINVAL);
	ck_assert_uint_eq(p->ntypes, 2);
	ck_assert_int_eq(cp_profile_keep_types(p, keep1), 0);
	ck_assert_uint_eq(p->ntypes, 1);
	ck_assert_str_eq(cp_profile_string(p, p->sample_types[0].type), "cpu");
	ck_assert_int_eq(cp_profile_values(p, 0)[0], 10);
	ck_assert_int_eq(cp_profile_values(p, 1)[0], 20);
	cp_profile_free(p);
}
END_TEST

/* ---- every command's settings (cp_config_opts_parse) ---- */

static const char *const sections[] = { "record", "serve", "query", NULL };

static const struct cp_config_opt *opt_at(const struct cp_config_opts *o, size_t i, const char *section,
					  const char *key, const char *value)
{
	ck_assert_msg(i < o->n, "only %zu settings", o->n);
	if (section)
		ck_assert_str_eq(o->v[i].section, section);
	else
		ck_assert_ptr_null(o->v[i].section);
	ck_assert_str_eq(o->v[i].key, key);
	ck_assert_str_eq(o->v[i].value, value);
	return &o->v[i];
}

START_TEST(test_opts)
{
	static const char yaml[] = "# settings\n"
				   "data: /var/lib/x\n"
				   "log_level: warn\n"
				   "scrape_configs: []\n"
				   "record:\n"
				   "  freq: 49\n"
				   "  flush-interval: 5s\n"
				   "  label: {env: prod, team: infra}\n"
				   "  pid: [1, 2]\n"
				   "  cgroup: null\n"
				   "  idle: ~\n"
				   "  debuginfo_path: \"null\"\n"
				   "serve:\n"
				   "query:\n"
				   "  since: 2h\n"
				   "bogus: 1\n";
	struct cp_config_opts o;
	struct cp_config c;

	ck_assert_int_eq(cp_config_opts_parse(yaml, sizeof(yaml) - 1, "t.yaml", sections, &o), 0);
	ck_assert_uint_eq(o.n, 11);
	ck_assert_uint_eq(opt_at(&o, 0, NULL, "data", "/var/lib/x")->line, 2);
	opt_at(&o, 1, NULL, "log-level", "warn"); /* '_' read as '-' */
	ck_assert_uint_eq(opt_at(&o, 2, "record", "freq", "49")->line, 6);
	opt_at(&o, 3, "record", "flush-interval", "5s");
	opt_at(&o, 4, "record", "label", "env=prod"); /* a mapping: NAME=VALUE pairs */
	opt_at(&o, 5, "record", "label", "team=infra");
	opt_at(&o, 6, "record", "pid", "1"); /* a list: the option once per item */
	opt_at(&o, 7, "record", "pid", "2");
	opt_at(&o, 8, "record", "debuginfo-path", "null"); /* quoted: a string; null and ~ are not set */
	opt_at(&o, 9, "query", "since", "2h");
	opt_at(&o, 10, NULL, "bogus", "1"); /* names are the caller's to check */
	cp_config_opts_release(&o);
	cp_config_opts_release(&o); /* twice is harmless */

	/* cp_config_parse reads the same file: the server's keys, the rest left alone */
	ck_assert_int_eq(parse(yaml, &c), 0);
	ck_assert_str_eq(c.data, "/var/lib/x");
	cp_config_release(&c);
	ck_assert_int_eq(parse("token-file: /t\ntls_cert: /c\n", &c), 0); /* '-' or '_' */
	ck_assert_str_eq(c.token_file, "/t");
	ck_assert_str_eq(c.tls_cert, "/c");
	cp_config_release(&c);

	/* empty and comment-only files set nothing */
	ck_assert_int_eq(cp_config_opts_parse("", 0, "t.yaml", sections, &o), 0);
	ck_assert_uint_eq(o.n, 0);
	ck_assert_int_eq(cp_config_opts_parse("# x\n", 4, "t.yaml", sections, &o), 0);
	ck_assert_uint_eq(o.n, 0);
}
END_TEST

static void opts_refused(const char *yaml, const char *msg)
{
	struct cp_config_opts o;
	int err = cp_config_opts_parse(yaml, strlen(yaml), "t.yaml", sections, &o);

	ck_assert_int_eq(err, -EINVAL);
	ck_assert_uint_eq(o.n, 0);
	ck_assert_msg(strstr(cp_errmsg(EINVAL), msg), "'%s' does not say '%s'", cp_errmsg(EINVAL), msg);
}

START_TEST(test_opts_refused)
{
	opts_refused("- a\n- b\n", "t.yaml:1: wants a mapping");
	opts_refused("record: 3\n", "t.yaml:1: record: wants the settings of cprof record");
	opts_refused("record:\n  label: {a: [1]}\n", "t.yaml:2: label: a mapping of NAME: VALUE");
	opts_refused("record:\n  pid: [[1]]\n", "t.yaml:2: pid: a list of single values");
	opts_refused("record: {freq: 1\n", "t.yaml:");
}
END_TEST

/* ---- one scrape of a URL (cprof scrape URL): what to fetch, and as what ---- */

#define S 1000000000LL

static void request_is(const char *url, const char *profile, int64_t seconds, int64_t timeout, const char *want_url,
		       const char *want_name, const char *want_instance, int64_t want_timeout)
{
	struct cp_scrape_request q;

	ck_assert_msg(cp_scrape_request_make(url, profile, seconds, timeout, &q) == 0, "%s: %s", url, cp_errmsg(EINVAL));
	ck_assert_str_eq(q.url, want_url);
	ck_assert_str_eq(q.name, want_name);
	ck_assert_str_eq(q.instance, want_instance);
	ck_assert_int_eq(q.timeout, want_timeout);
	cp_scrape_request_release(&q);
}

START_TEST(test_scrape_request)
{
	struct cp_scrape_request q;

	/* no path: the profile's default path; process_cpu is a delta of 10 s */
	request_is("http://h:6060", NULL, 0, 0, "http://h:6060/debug/pprof/profile?seconds=10", "process_cpu", "h:6060",
		   13 * S);
	request_is("http://h:6060/", "memory", 0, 0, "http://h:6060/debug/pprof/allocs", "memory", "h:6060", 30 * S);
	request_is("https://h", "threadcreate", 0, 0, "https://h/debug/pprof/threadcreate", "threadcreate", "h", 30 * S);
	/* --seconds makes any profile a delta over that time; --timeout wins */
	request_is("http://h:1", "memory", 2 * S, 0, "http://h:1/debug/pprof/allocs?seconds=2", "memory", "h:1", 5 * S);
	request_is("http://h:1", NULL, 0, 7 * S, "http://h:1/debug/pprof/profile?seconds=10", "process_cpu", "h:1", 7 * S);
	/* a path: fetched as given, the name from its last part */
	request_is("http://h:1/debug/pprof/heap?gc=1", NULL, 0, 0, "http://h:1/debug/pprof/heap?gc=1", "heap", "h:1",
		   30 * S);
	request_is("http://h:1/debug/pprof/allocs", NULL, 0, 0, "http://h:1/debug/pprof/allocs", "memory", "h:1", 30 * S);
	request_is("http://h:1/x/my+prof", NULL, 0, 0, "http://h:1/x/my+prof", "my_prof", "h:1", 30 * S);
	request_is("http://h:1/x/", NULL, 0, 0, "http://h:1/x/", "profile", "h:1", 30 * S);
	/* a URL that says how long already: no second seconds=, its time + 3 s */
	request_is("http://h:1/debug/pprof/profile?seconds=5", NULL, 0, 0, "http://h:1/debug/pprof/profile?seconds=5",
		   "process_cpu", "h:1", 8 * S);
	request_is("http://h:1/debug/pprof/profile?x=1", NULL, 0, 0, "http://h:1/debug/pprof/profile?x=1&seconds=10",
		   "process_cpu", "h:1", 13 * S);
	/* refused, with the reason */
	ck_assert_int_eq(cp_scrape_request_make("ftp://h/x", NULL, 0, 0, &q), -EINVAL);
	ck_assert_ptr_nonnull(strstr(cp_errmsg(EINVAL), "is not an http:// or https:// URL"));
	ck_assert_int_eq(cp_scrape_request_make("http:///x", NULL, 0, 0, &q), -EINVAL);
	ck_assert_ptr_nonnull(strstr(cp_errmsg(EINVAL), "has no host"));
	ck_assert_int_eq(cp_scrape_request_make("http://h", "a b", 0, 0, &q), -EINVAL);
	ck_assert_ptr_nonnull(strstr(cp_errmsg(EINVAL), "--profile 'a b'"));
	ck_assert_int_eq(cp_scrape_request_make("http://h/x", "a/b", 0, 0, &q), -EINVAL);
	ck_assert_ptr_null(q.url);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("settings");
	TCase *tc = tcase_create("config");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_server_keys);
	tcase_add_test(tc, test_scrape_defaults);
	tcase_add_test(tc, test_scrape_everything);
	tcase_add_test(tc, test_scrape_refused);
	tcase_add_test(tc, test_scrape_request);
	tcase_add_test(tc, test_opts);
	tcase_add_test(tc, test_opts_refused);
	tcase_add_test(tc, test_keep_types);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

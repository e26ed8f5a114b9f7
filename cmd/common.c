/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../lib/error.h"
#include "../lib/load.h"
#include "../lib/pprof.h"
#include "../lib/render/render.h"
#include "../lib/http/client.h"
#include "../lib/log.h"
#include "../lib/selector.h"
#include "../lib/store/backends.h"
#include "../lib/store/remote.h"
#include "../lib/util.h"
#include "cmd.h"

static void vmsg(const char *verb, const char *fmt, va_list ap)
{
	fprintf(stderr, "cprof%s%s: ", verb ? " " : "", verb ? verb : "");
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

int fail(const char *verb, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg(verb, fmt, ap);
	va_end(ap);
	return EXIT_FAIL;
}

int usage_error(const char *verb, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg(verb, fmt, ap);
	va_end(ap);
	fprintf(stderr, "Try 'cprof %s -h' for more information.\n", verb ? verb : "help");
	return EXIT_USAGE;
}

int flush_stdout(const char *verb)
{
	int err = cp_stream_check(stdout, "standard output");

	return err ? fail(verb, "%s", cp_errmsg(err)) : EXIT_OK;
}

const char *cmd_format_names(const struct cmd *c, char *buf, size_t size)
{
	size_t n = 0;

	if (c->render_kind)
		return cp_render_format_names(c->render_kind, false, NULL, buf, size);
	while (c->formats && c->formats[n])
		n++;
	return cp_join_names(c->formats, n, buf, size);
}

int cmd_format_check(const struct cmd *c, const char *format)
{
	char names[128];

	if (c->render_kind && cp_render_format_find(format, c->render_kind))
		return EXIT_OK;
	for (size_t i = 0; !c->render_kind && c->formats && c->formats[i]; i++)
		if (!strcmp(format, c->formats[i]))
			return EXIT_OK;
	return usage_error(c->name, "unknown format '%s' (choose %s)", format, cmd_format_names(c, names, sizeof(names)));
}

bool cmd_format_binary(const struct cmd *c, const char *format)
{
	const struct cp_render_format *f = c->render_kind ? cp_render_format_find(format, c->render_kind) : NULL;

	return f && f->binary;
}

int show_usage(const struct cmd *c)
{
	const char *u = c->usage, *at;
	char names[128];

	/* "{FORMATS}": the list of the formats, from where the command takes them */
	while ((at = strstr(u, "{FORMATS}"))) {
		fwrite(u, 1, (size_t)(at - u), stdout);
		fputs(cmd_format_names(c, names, sizeof(names)), stdout);
		u = at + strlen("{FORMATS}");
	}
	fputs(u, stdout);
	return flush_stdout(c->name);
}

int next_option(const struct cmd *c, int argc, char **argv)
{
	int opt;

	opterr = 0;
	opt = getopt_long(argc, argv, c->shortopts, c->options, NULL);
	if (opt == '?') {
		if (optopt && strchr(c->shortopts, optopt))
			usage_error(c->name, "option -%c needs a value", optopt);
		else if (optopt)
			usage_error(c->name, "unknown option -%c", optopt);
		else
			usage_error(c->name, "unknown or incomplete option '%s'", argv[optind - 1]);
	} else if (opt == ':') {
		usage_error(c->name, "option '%s' needs a value", argv[optind - 1]);
		opt = '?';
	}
	return opt;
}

int parse_count(const char *verb, const char *opt, const char *s, int *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || end == s || v < 0 || v > INT_MAX)
		return usage_error(verb, "%s wants a whole number, not '%s'", opt, s);
	*out = (int)v;
	return EXIT_OK;
}

struct cp_profile *load_inputs(const char *verb, char **paths, int n)
{
	struct cp_profile *p = cp_profile_load_many(paths, n, 0);

	if (!p)
		fail(verb, "%s", cp_errmsg(errno));
	return p;
}

int pick_sample_type(const char *verb, const struct cp_profile *p, const char *name)
{
	int v = cp_profile_sample_index(p, name);

	if (v < 0)
		fail(verb, "%s", cp_errmsg(v));
	return v < 0 ? -1 : v;
}

int make_filter(const char *verb, const char *focus, const char *ignore, struct cp_filter **f)
{
	*f = NULL;
	if (!focus && !ignore)
		return EXIT_OK;
	*f = cp_filter_new(focus, ignore);
	if (!*f)
		return usage_error(verb, "%s", cp_errmsg(errno));
	return EXIT_OK;
}

int output_open(struct output *o, const char *verb, const char *path, bool binary)
{
	memset(o, 0, sizeof(*o));
	o->verb = verb;
	if (path && strcmp(path, "-")) {
		o->path = path;
		o->f = open_memstream(&o->buf, &o->len);
		if (!o->f)
			return fail(verb, "out of memory");
		return EXIT_OK;
	}
	if (binary && isatty(STDOUT_FILENO))
		return usage_error(verb, "not writing a binary pprof profile to a terminal; use -o FILE or a pipe");
	o->f = stdout;
	return EXIT_OK;
}

int output_close(struct output *o, int status)
{
	int err;

	if (!o->f)
		return status;
	if (o->f == stdout) {
		err = cp_stream_check(stdout, "standard output");
		if (err && status == EXIT_OK)
			status = fail(o->verb, "%s", cp_errmsg(err));
		return status;
	}
	err = fclose(o->f) ? -errno : 0;
	o->f = NULL;
	if (!err && status == EXIT_OK) {
		err = cp_write_file_atomic(o->path, o->buf, o->len);
		if (err)
			status = fail(o->verb, "%s", cp_errmsg(err));
	} else if (err && status == EXIT_OK) {
		status = fail(o->verb, "out of memory buffering the output");
	}
	free(o->buf);
	o->buf = NULL;
	return status;
}

bool store_option(struct store_args *a, int opt, const char *arg)
{
	switch (opt) {
	case OPT_DATA: a->data = arg; return true;
	case OPT_SINCE: a->since = arg; return true;
	case OPT_FROM: a->from = arg; return true;
	case OPT_TO: a->to = arg; return true;
	case OPT_REMOTE: a->remote = arg; return true;
	case OPT_TOKEN_FILE: a->token_file = arg; return true;
	default: return false;
	}
}

int remote_args(const char *verb, const char *data, bool no_env, const char **url, const char **token_file)
{
	const char *env;
	bool from_env = false;
	int err;

	if (*url && data)
		return usage_error(verb, "give --data or --remote, not both");
	/* the environment is a default: an explicit --data (or -o) wins */
	if (!*url && !data && !no_env && (env = getenv("CPROF_REMOTE")) && *env) {
		*url = env;
		from_env = true;
	}
	if (*token_file && !*url)
		return usage_error(verb, "--token-file goes with --remote URL (or $CPROF_REMOTE)");
	if (*url && !*token_file && (env = getenv("CPROF_TOKEN_FILE")) && *env)
		*token_file = env;
	if (*url && (err = cp_http_check_url(*url)))
		return usage_error(verb, "%s%s", from_env ? "$CPROF_REMOTE: " : "--remote: ",
				   cp_errmsg(err));
	return EXIT_OK;
}

int store_dir(const char *verb, const char *data, char *buf, size_t len)
{
	if (!data) {
		cp_store_default_dir(buf, len); /* $CPROF_DATA, else the default */
		return EXIT_OK;
	}
	if (!*data)
		return usage_error(verb, "--data wants a directory, not an empty string");
	if ((size_t)snprintf(buf, len, "%s", data) >= len)
		return usage_error(verb, "--data: the path is too long");
	return EXIT_OK;
}

int read_token(const char *verb, const char *token_file, char **token)
{
	int err;

	*token = NULL;
	if (token_file && (err = cp_read_token_file(token_file, token)))
		return fail(verb, "%s", cp_errmsg(err));
	return EXIT_OK;
}

/* The store at --remote URL, else the local one in dir (as file://DIR: a directory whose name looks
 * like a URL is still a directory), opened by the backend of its scheme (lib/store/backends.h);
 * a failure printed. */
static struct cp_store *open_store(const char *verb, const char *dir, const char *remote,
				   const struct cp_store_open_opts *o)
{
	struct cp_store *s;
	char *uri = NULL;

	if (!remote && asprintf(&uri, "file://%s", dir) < 0) {
		fail(verb, "%s", cp_errmsg(ENOMEM));
		return NULL;
	}
	if (!(s = cp_store_open_uri(remote ? remote : uri, o)))
		fail(verb, "%s", cp_errmsg(errno));
	free(uri);
	return s;
}

struct cp_store *store_open_write(const char *verb, const char *dir, const char *remote, const char *token_file,
				  const struct push_args *push, const char *spool, size_t spool_size, bool *away)
{
	struct cp_store_open_opts o = { .mode = CP_STORE_WRITE, .spool_dir = spool, .spool_max = spool_size };
	struct cp_remote_push p = { 0 };
	struct cp_store *s;
	char *token = NULL;
	int err = 0;

	if (away)
		*away = false;
	/* a token (--token-file) and push settings come only with --remote (remote_args, push_check) */
	if (read_token(verb, token_file, &token))
		return NULL;
	if (push && push->basic_user && !token) {
		fail(verb, "--basic-auth-user: give the password in --token-file");
		return NULL;
	}
	if (push) {
		p = (struct cp_remote_push){ .api = push->api,
					     .service_label = push->service_label,
					     .tenant = push->tenant,
					     .basic_user = push->basic_user };
		o.push = &p;
	}
	o.token = token;
	s = open_store(verb, dir, remote, &o);
	free(token);
	if (!s)
		return NULL;
	cp_error_clear(); /* a "try later" (1) says why only in the record: cp_error_code() */
	/* a store whose appends wait to be sent: is it there? (0 at once for the local store) */
	if (spool && (err = cp_store_remote_ping(s)) < 0) {
		fail(verb, "%s", cp_errmsg(err));
		cp_store_close(s);
		return NULL;
	}
	if (spool && err > 0 && away)
		*away = true;
	return s;
}

int store_range(const char *verb, struct store_args *a)
{
	int64_t now = cp_now_ns(), d;
	int err;

	if ((err = remote_args(verb, a->data, false, &a->remote, &a->token_file)))
		return err;
	if (!a->remote && (err = store_dir(verb, a->data, a->dir, sizeof(a->dir))))
		return err;
	if (a->since && a->from)
		return usage_error(verb, "give --since or --from, not both");
	a->t_to = now;
	if (a->to && (err = cp_parse_time(a->to, now, &a->t_to)))
		return usage_error(verb, "--to: %s", cp_errmsg(err));
	if (a->from) {
		if ((err = cp_parse_time(a->from, now, &a->t_from)))
			return usage_error(verb, "--from: %s", cp_errmsg(err));
	} else {
		if ((err = cp_parse_duration(a->since ? a->since : "1h", &d)))
			return usage_error(verb, "--since: %s", cp_errmsg(err));
		a->t_from = cp_sub_sat(a->t_to, d);
	}
	if (a->t_from > a->t_to)
		return usage_error(verb, "the time range is empty: --from is after --to");
	return EXIT_OK;
}

struct cp_store *store_get(const char *verb, struct store_args *a)
{
	struct cp_store_open_opts o = { .mode = CP_STORE_READ };
	char *token = NULL;

	if (a->store)
		return a->store;
	if (!a->remote && !a->dir[0] && store_dir(verb, a->data, a->dir, sizeof(a->dir)))
		return NULL;
	if (read_token(verb, a->token_file, &token)) /* only with --remote */
		return NULL;
	o.token = token;
	a->store = open_store(verb, a->dir, a->remote, &o);
	free(token);
	return a->store;
}

void store_args_release(struct store_args *a)
{
	cp_store_close(a->store);
	a->store = NULL;
}

bool is_file_arg(const char *arg)
{
	size_t n = strlen(arg);

	if (!strcmp(arg, "-") || access(arg, F_OK) == 0)
		return true;
	if (strchr(arg, '{')) /* a selector, whatever its label values hold */
		return false;
	if (strchr(arg, '/'))
		return true;
	/* names that look like files: better "cannot open" than "no series" */
	return (n > 3 && !strcmp(arg + n - 3, ".gz")) || (n > 3 && !strcmp(arg + n - 3, ".pb")) ||
	       (n > 7 && !strcmp(arg + n - 7, ".folded")) || (n > 4 && !strcmp(arg + n - 4, ".txt"));
}

struct cp_profile *load_selection(const char *verb, const char *arg, struct store_args *a, int64_t from, int64_t to,
				  int *status)
{
	struct cp_store_query q = { NULL, from, to, NULL, NULL, false };
	struct cp_store_result *res = NULL;
	struct cp_selector *sel = NULL;
	struct cp_profile *p = NULL;
	size_t n = 0;
	int err;

	*status = EXIT_FAIL;
	if (is_file_arg(arg))
		return load_inputs(verb, (char **)&arg, 1);
	if ((err = cp_selector_parse(arg, &sel))) {
		*status = usage_error(verb, "'%s' is neither a file nor a selector: %s", arg, cp_errmsg(err));
		return NULL;
	}
	q.sel = sel;
	if (store_get(verb, a)) {
		err = cp_store_select(a->store, &q, &res, &n);
		if (err)
			fail(verb, "%s: %s", arg, cp_errmsg(err));
		else {
			p = res[0].profile;
			res[0].profile = NULL;
		}
	}
	cp_store_results_free(res, n);
	cp_selector_free(sel);
	return p;
}

int load_intervals(const char *verb, const char *arg, struct store_args *a, int64_t from, int64_t to,
		   struct cp_store_intervals **out, size_t *n)
{
	struct cp_store_query q = { NULL, from, to, NULL, NULL, false };
	struct cp_selector *sel = NULL;
	int err, status = EXIT_FAIL;

	*out = NULL;
	*n = 0;
	if ((err = cp_selector_parse(arg, &sel)))
		return usage_error(verb, "'%s' is neither a file nor a selector: %s", arg, cp_errmsg(err));
	q.sel = sel;
	if (store_get(verb, a)) {
		err = cp_store_select_intervals(a->store, &q, CP_STORE_INTERVAL_STEP, CP_STORE_INTERVALS_MAX, out, n);
		status = err ? fail(verb, "%s: %s", arg, cp_errmsg(err)) : EXIT_OK;
	}
	cp_selector_free(sel);
	return status;
}

/* ---- logging ---- */

int parse_log_level(const char *verb, const char *arg)
{
	int level = cp_log_level_parse(arg);

	if (level < 0)
		return usage_error(verb, "bad --log-level '%s': want error, warn, info or debug", arg);
	cp_log_level = level;
	return EXIT_OK;
}

/* ---- store settings of the commands that write ---- */

int parse_size_option(const char *verb, const char *opt, const char *example, const char *arg, uint64_t max,
		      uint64_t *out)
{
	uint64_t v = 0;
	int err = cp_parse_size(arg, &v);

	if (err || !v || v > max)
		return usage_error(verb, "%s: %s", opt, err ? cp_errmsg(err) : example);
	*out = v;
	return EXIT_OK;
}

int parse_max_store_size(const char *verb, const char *arg, uint64_t *out)
{
	return parse_size_option(verb, "--max-store-size", "want a size such as 512M or 10G", arg, UINT64_MAX, out);
}

int parse_downsample(const char *verb, const char *arg, struct cp_downsample *out)
{
	int err = cp_downsample_parse(arg ? arg : CP_DOWNSAMPLE_DEFAULT, out);

	return err ? usage_error(verb, "--downsample: %s", cp_errmsg(err)) : EXIT_OK;
}

int downsample_option(const char *verb, const char *arg, bool from_file, bool remote, bool no_store,
		      struct cp_downsample *out)
{
	memset(out, 0, sizeof(*out));
	if ((remote || no_store) && arg && !from_file)
		return usage_error(verb, remote ? "--downsample is for the local store: a server downsamples its own "
						  "(cprof serve --downsample)" :
						  "--downsample is for the store, not -o/-f");
	if (remote || no_store) /* the configuration file's is for a local store */
		return EXIT_OK;
	return parse_downsample(verb, arg, out);
}

void print_store_settings(FILE *f, int64_t retention, uint64_t max_store, const struct cp_downsample *p)
{
	char b[256];

	fprintf(f, "  retention: %s\n", retention ? cp_duration_text(retention, b, sizeof(b)) : "null");
	fprintf(f, "  max-store-size: %s\n", max_store ? cp_size_text(max_store, b, sizeof(b)) : "null");
	if (p)
		fprintf(f, "  downsample: %s\n", cp_downsample_text(p, b, sizeof(b)));
}


/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../lib/error.h"
#include "../lib/load.h"
#include "../lib/pprof.h"
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

int show_usage(const struct cmd *c)
{
	fputs(c->usage, stdout);
	if (cp_stream_check(stdout, "standard output"))
		return fail(c->name, "%s", cp_errmsg(EIO));
	return EXIT_OK;
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

struct cp_profile *apply_filter(const char *verb, struct cp_profile *p, struct cp_filter *f)
{
	struct cp_merge_opts mo = { 0 };
	struct cp_profile *q;

	if (!f || !p)
		return p;
	mo.keep = cp_filter_keep;
	mo.keep_arg = f;
	q = cp_profile_copy(p, &mo);
	if (!q)
		fail(verb, "%s", cp_errmsg(errno));
	cp_profile_free(p);
	return q;
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

int write_pprof(struct output *o, const struct cp_profile *p)
{
	uint8_t *buf = NULL;
	size_t len = 0;
	int err = cp_pprof_encode(p, 1, &buf, &len);

	if (!err && fwrite(buf, 1, len, o->f) != len)
		err = cp_stream_check(o->f, o->path ? o->path : "standard output");
	free(buf);
	return err;
}

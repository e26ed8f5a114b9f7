/* SPDX-License-Identifier: MIT */
/* cprof query: select, filter and render profiles. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/error.h"
#include "../lib/folded.h"
#include "../lib/render/render.h"
#include "cmd.h"

enum { OPT_FOCUS = 256, OPT_IGNORE, OPT_INVERT, OPT_TITLE };

static const struct option options[] = {
	{ "input", required_argument, NULL, 'i' },
	{ "format", required_argument, NULL, 'f' },
	{ "sample-type", required_argument, NULL, 't' },
	{ "focus", required_argument, NULL, OPT_FOCUS },
	{ "ignore", required_argument, NULL, OPT_IGNORE },
	{ "invert", no_argument, NULL, OPT_INVERT },
	{ "limit", required_argument, NULL, 'n' },
	{ "title", required_argument, NULL, OPT_TITLE },
	{ "output", required_argument, NULL, 'o' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static int run_query(int argc, char **argv);

const struct cmd cmd_query = {
	"query", "select, filter and render profiles (top, folded, flame graph, JSON, pprof)", run_query, options,
	"i:f:t:n:o:h",
	"usage: cprof query [OPTIONS] -i FILE [-i FILE]...\n"
	"\n"
	"Render pprof or folded-stack profiles; several inputs are merged first.\n"
	"\n"
	"  -i, --input FILE      a profile: pprof (gzip or raw) or folded stacks; '-' is stdin\n"
	"  -f, --format FMT      top (default), folded, flamegraph, json or pprof\n"
	"  -t, --sample-type T   the value to show: a name (cpu, samples, alloc_space...),\n"
	"                        type/unit, or an index; default: the profile's default\n"
	"      --focus RE        keep samples with a frame matching RE (PCRE2)\n"
	"      --ignore RE       drop samples with a frame matching RE\n"
	"      --invert          leaf-first stacks (callers view) for folded, flamegraph, json\n"
	"  -n, --limit N         at most N rows in the top table\n"
	"      --title TEXT      the flame graph's title\n"
	"  -o, --output FILE     write to FILE (atomically) instead of standard output\n"
	"  -h, --help            show this help\n",
};

struct query_opts {
	char **inputs;
	int ninputs;
	const char *format, *sample_type, *focus, *ignore, *title, *output;
	bool invert;
	int limit;
};

static int render(struct output *out, const struct query_opts *o, const struct cp_profile *p, int vidx)
{
	if (!strcmp(o->format, "top")) {
		struct cp_top_opts t = { o->limit };

		return cp_render_top(out->f, p, vidx, &t);
	}
	if (!strcmp(o->format, "folded"))
		return cp_folded_write(out->f, p, vidx, o->invert);
	if (!strcmp(o->format, "json"))
		return cp_render_json(out->f, p, vidx, o->invert);
	if (!strcmp(o->format, "pprof"))
		return write_pprof(out, p);
	/* flamegraph */
	{
		struct cp_tree *t = cp_tree_new();
		struct cp_flame_opts fo = { 0 };
		int err;

		if (!t)
			return cp_error(ENOMEM, "out of memory");
		fo.title = o->title;
		fo.unit = cp_profile_string(p, p->sample_types[vidx].unit);
		fo.subtitle = cp_profile_string(p, p->sample_types[vidx].type);
		err = cp_tree_add(t, p, vidx, 0, o->invert);
		if (!err)
			err = cp_tree_sort(t);
		if (!err)
			err = cp_render_flame(out->f, t, &fo);
		cp_tree_free(t);
		return err;
	}
}

static int run_query(int argc, char **argv)
{
	static const char *formats[] = { "top", "folded", "flamegraph", "json", "pprof", NULL };
	struct query_opts o = { .format = "top" };
	struct cp_profile *p = NULL;
	struct cp_filter *filter = NULL;
	struct output out = { 0 };
	int opt, status = EXIT_OK, vidx, err;
	size_t i;

	o.inputs = calloc((size_t)argc + 1, sizeof(*o.inputs));
	if (!o.inputs)
		return fail("query", "out of memory");
	while ((opt = next_option(&cmd_query, argc, argv)) != -1) {
		switch (opt) {
		case 'i': o.inputs[o.ninputs++] = optarg; break;
		case 'f': o.format = optarg; break;
		case 't': o.sample_type = optarg; break;
		case OPT_FOCUS: o.focus = optarg; break;
		case OPT_IGNORE: o.ignore = optarg; break;
		case OPT_INVERT: o.invert = true; break;
		case OPT_TITLE: o.title = optarg; break;
		case 'o': o.output = optarg; break;
		case 'n':
			if ((status = parse_count("query", "--limit", optarg, &o.limit)))
				goto out;
			break;
		case 'h': status = show_usage(&cmd_query); goto out;
		default: status = EXIT_USAGE; goto out;
		}
	}
	for (i = 0; formats[i] && strcmp(formats[i], o.format); i++)
		;
	if (!formats[i]) {
		status = usage_error("query", "unknown format '%s' (choose top, folded, flamegraph, json or pprof)", o.format);
		goto out;
	}
	if (optind < argc) {
		status = usage_error("query", "unexpected argument '%s': give profile files with -i FILE", argv[optind]);
		goto out;
	}
	if (!o.ninputs) {
		status = usage_error("query", "no input: give a profile file with -i FILE");
		goto out;
	}
	if ((status = make_filter("query", o.focus, o.ignore, &filter)))
		goto out;
	p = load_inputs("query", o.inputs, o.ninputs);
	if (!p || (vidx = pick_sample_type("query", p, o.sample_type)) < 0 || !(p = apply_filter("query", p, filter))) {
		status = EXIT_FAIL;
		goto out;
	}
	if ((status = output_open(&out, "query", o.output, !strcmp(o.format, "pprof"))))
		goto out;
	err = render(&out, &o, p, vidx);
	if (err)
		status = fail("query", "%s", cp_errmsg(err));
	status = output_close(&out, status);
out:
	cp_filter_free(filter);
	cp_profile_free(p);
	free(o.inputs);
	return status;
}

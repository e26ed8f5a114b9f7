/* SPDX-License-Identifier: MIT */
/* cprof query: select profiles (files, or the store by selector and time),
 * filter and render them. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../lib/error.h"
#include "../lib/folded.h"
#include "../lib/render/render.h"
#include "../lib/selector.h"
#include "cmd.h"

enum { OPT_FOCUS = 256, OPT_IGNORE, OPT_INVERT, OPT_TITLE, OPT_GROUP_BY, OPT_TYPES, OPT_LABELS, OPT_VALUES,
       OPT_SERIES, OPT_OVER_TIME, OPT_STEP };

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
	STORE_OPTIONS,
	{ "group-by", required_argument, NULL, OPT_GROUP_BY },
	{ "types", no_argument, NULL, OPT_TYPES },
	{ "labels", no_argument, NULL, OPT_LABELS },
	{ "values", required_argument, NULL, OPT_VALUES },
	{ "series", no_argument, NULL, OPT_SERIES },
	{ "over-time", no_argument, NULL, OPT_OVER_TIME },
	{ "step", required_argument, NULL, OPT_STEP },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static int run_query(int argc, char **argv);

const struct cmd cmd_query = {
	"query", "select, filter and render profiles (top, folded, flame graph, JSON, pprof)", run_query, options,
	"i:f:t:n:o:h",
	"usage: cprof query [OPTIONS] [SELECTOR]\n"
	"       cprof query [OPTIONS] -i FILE [-i FILE]...\n"
	"\n"
	"Render stored profiles chosen by SELECTOR and time, TYPE{label=\"v\", l!=\"v\",\n"
	"l=~\"re\", l!~\"re\"} (TYPE may be left out when only one type matches), or\n"
	"pprof, folded-stack and JFR files; what matches is merged into one profile.\n"
	"\n"
	"  -i, --input FILE      a profile: pprof (gzip or raw), folded stacks or JFR;\n"
	"                        '-' is stdin\n"
	"  -f, --format FMT      {FORMATS} (default: top)\n"
	"  -t, --sample-type T   the value to show (files): a name (cpu, alloc_space...),\n"
	"                        type/unit, or an index; default: the profile's default\n"
	"      --focus RE        keep samples with a frame matching RE (PCRE2)\n"
	"      --ignore RE       drop samples with a frame matching RE\n"
	"      --invert          leaf-first stacks (callers view) for folded, flamegraph, json\n"
	"  -n, --limit N         at most N rows in the top table\n"
	"      --title TEXT      the flame graph's title\n"
	"  -o, --output FILE     write to FILE (atomically) instead of standard output\n"
	STORE_USAGE
	"      --group-by LABEL  one report per value of LABEL (top and folded)\n"
	"      --types           list the stored profile types\n"
	"      --labels          list the label names of the matching series\n"
	"      --values LABEL    list the values of LABEL in the matching series\n"
	"      --series          list the matching series\n"
	"      --over-time       the total per step over the range, with a sparkline\n"
	"      --step DURATION   the step for --over-time (default: the range / 60)\n"
	"  -h, --help            show this help\n",
	.render_kind = CP_RENDER_PROFILE,
};

struct query_opts {
	char **inputs;
	int ninputs;
	const char *format, *sample_type, *focus, *ignore, *title, *output, *group_by, *values, *step;
	bool invert, types, labels, series, over_time;
	int limit;
	struct store_args store;
};

/* resolution: the store's when it read downsampled data, for top and json
 * (NULL: raw data, or none said); whole: the total before --focus/--ignore (0: none) */
static int render(struct output *out, const struct query_opts *o, const struct cp_profile *p, int vidx,
		  const char *resolution, int64_t whole)
{
	char filters[1024];
	struct cp_render_opts ro = { .output = out->path, .invert = o->invert, .limit = o->limit, .title = o->title, .resolution = resolution,
				     .whole_total = whole, .filters = filters };

	snprintf(filters, sizeof(filters), "%s%s%s%s%s", o->focus ? "focus=" : "", o->focus ? o->focus : "",
		 o->focus && o->ignore ? "\n" : "", o->ignore ? "ignore=" : "", o->ignore ? o->ignore : "");

	return cp_render_profile(out->f, o->format, p, vidx, &ro);
}

static int run_lists(struct output *out, const struct query_opts *o, struct cp_store *store, const struct cp_selector *sel)
{
	struct cp_store_series *ser = NULL;
	const char **items = NULL;
	size_t n = 0, nitems = 0;
	bool json = !strcmp(o->format, "json");
	int err = cp_store_series(store, sel, &ser, &n);

	char **sv = NULL;
	size_t nsv = 0;

	if (!err && o->series)
		err = cp_render_series(out->f, ser, n, json);
	else if (!err && !(err = cp_store_distinct(ser, n, o->types ? CP_LIST_TYPES : o->labels ? CP_LIST_LABELS : CP_LIST_VALUES,
						   o->values, &items, &nitems))) {
		/* a label no series has: a sample label (an off-CPU wait's state), its values in the range */
		if (o->values && !nitems && n &&
		    !(err = cp_store_sample_values(store, sel, o->store.t_from, o->store.t_to, o->values, &sv, &nsv)))
			err = cp_render_strings(out->f, (const char **)sv, nsv, json);
		else if (!err)
			err = cp_render_strings(out->f, items, nitems, json);
	}
	cp_store_values_free(sv, nsv);
	free(items);
	cp_store_series_free(ser, n);
	return err;
}

static int run_over_time(struct output *out, const struct query_opts *o, struct cp_store *store,
			 const struct cp_selector *sel)
{
	struct cp_store_query q = { sel, o->store.t_from, o->store.t_to, NULL, NULL, false };
	struct cp_over_time ot;
	int64_t step = 0;
	int err;

	if (o->step && ((err = cp_parse_duration(o->step, &step)) || step <= 0))
		return cp_error(EINVAL, "--step: %s", err ? cp_errmsg(err) : "must be positive");
	if ((err = cp_store_over_time_build(store, &q, step, &ot)))
		return err;
	err = !strcmp(o->format, "json") ? cp_render_over_time_json(out->f, &ot) : cp_render_over_time(out->f, &ot);
	cp_over_time_release(&ot);
	return err;
}

static int run_select(struct output *out, const struct query_opts *o, struct cp_store *store,
		      const struct cp_selector *sel, struct cp_filter *filter)
{
	int64_t res = -1; /* a remote store does not say */
	struct cp_store_query q = { sel, o->store.t_from, o->store.t_to, o->group_by, &res, false };
	struct cp_store_result *r = NULL;
	size_t n = 0, i;
	char rbuf[32];
	int err = cp_store_select(store, &q, &r, &n);

	for (i = 0; !err && i < n; i++) {
		struct cp_profile *p = r[i].profile;
		int64_t whole = cp_profile_total(p, 0);

		r[i].profile = NULL;
		if (!(p = cp_profile_filter(p, filter))) { /* printed by the caller */
			err = -errno;
			break;
		}
		if (o->group_by && !strcmp(o->format, "top"))
			fprintf(out->f, "%s== %s=\"%s\"\n", i ? "\n" : "", o->group_by, r[i].group);
		if (o->group_by && !strcmp(o->format, "folded")) {
			/* the group is the root frame: a flame graph of groups */
			char root[512];

			snprintf(root, sizeof(root), "%s=%s", o->group_by, r[i].group);
			err = cp_folded_write_rooted(out->f, p, 0, o->invert, root);
		} else {
			err = render(out, o, p, 0, res > 0 ? cp_resolution_text(res, rbuf, sizeof(rbuf)) : NULL, whole);
		}
		cp_profile_free(p);
	}
	cp_store_results_free(r, n);
	return err;
}

static int run_query(int argc, char **argv)
{
	struct query_opts o = { .format = "top" };
	struct cp_selector *sel = NULL;
	struct cp_profile *p = NULL;
	struct cp_filter *filter = NULL;
	struct output out = { 0 };
	const char *selector = NULL;
	int opt, status = EXIT_OK, vidx, err, modes;
	int64_t whole;

	o.inputs = calloc((size_t)argc + 1, sizeof(*o.inputs));
	if (!o.inputs)
		return fail("query", "out of memory");
	while ((opt = next_option(&cmd_query, argc, argv)) != -1) {
		if (store_option(&o.store, opt, optarg))
			continue;
		switch (opt) {
		case 'i': o.inputs[o.ninputs++] = optarg; break;
		case 'f': o.format = optarg; break;
		case 't': o.sample_type = optarg; break;
		case OPT_FOCUS: o.focus = optarg; break;
		case OPT_IGNORE: o.ignore = optarg; break;
		case OPT_INVERT: o.invert = true; break;
		case OPT_TITLE: o.title = optarg; break;
		case 'o': o.output = optarg; break;
		case OPT_GROUP_BY: o.group_by = optarg; break;
		case OPT_TYPES: o.types = true; break;
		case OPT_LABELS: o.labels = true; break;
		case OPT_VALUES: o.values = optarg; break;
		case OPT_SERIES: o.series = true; break;
		case OPT_OVER_TIME: o.over_time = true; break;
		case OPT_STEP: o.step = optarg; break;
		case 'n':
			if ((status = parse_count("query", "--limit", optarg, &o.limit)))
				goto out;
			break;
		case 'h': status = show_usage(&cmd_query); goto out;
		default: status = EXIT_USAGE; goto out;
		}
	}
	if ((status = cmd_format_check(&cmd_query, o.format)))
		goto out;
	if (argc - optind > 1) {
		status = usage_error("query", "unexpected argument '%s': give one selector, or files with -i FILE",
				     argv[optind + 1]);
		goto out;
	}
	selector = optind < argc ? argv[optind] : NULL;
	modes = o.types + o.labels + (o.values != NULL) + o.series + o.over_time;
	if (modes > 1) {
		status = usage_error("query", "--types, --labels, --values, --series and --over-time go one at a time");
		goto out;
	}
	if (o.ninputs && (selector || modes || o.group_by || o.store.data || o.store.since || o.store.from || o.store.to ||
			  o.store.remote || o.store.token_file)) {
		status = usage_error("query", "-i FILE reads files; selectors, --group-by, --data, --remote, time ranges "
					      "and lists are for the store");
		goto out;
	}
	if (o.step && !o.over_time) {
		status = usage_error("query", "--step goes with --over-time");
		goto out;
	}
	if (modes && (o.group_by || o.focus || o.ignore || o.invert || o.limit || o.title)) {
		status = usage_error("query", "--group-by, --focus, --ignore, --invert, --limit and --title are for "
					      "profiles, not for lists or --over-time");
		goto out;
	}
	if (modes && strcmp(o.format, "top") && strcmp(o.format, "json")) {
		status = usage_error("query", "lists and --over-time print as text or -f json");
		goto out;
	}
	if (o.group_by && strcmp(o.format, "top") && strcmp(o.format, "folded")) {
		status = usage_error("query", "--group-by works with --format top or folded");
		goto out;
	}
	if (!o.ninputs && o.sample_type) {
		status = usage_error("query", "--sample-type is for files; in the store, name the type in the selector "
					      "(e.g. process_cpu:cpu)");
		goto out;
	}
	if ((status = make_filter("query", o.focus, o.ignore, &filter)))
		goto out;
	if (selector && is_file_arg(selector) && !strchr(selector, '{')) {
		/* a type's name that is also a file here (a program built as ./offcpu):
		 * the selector's parser says whether NAME{} is one */
		char braced[512];
		struct cp_selector *as_type = NULL;

		if (access(selector, F_OK) == 0 &&
		    (size_t)snprintf(braced, sizeof(braced), "%s{}", selector) < sizeof(braced) &&
		    cp_selector_parse(braced, &as_type) == 0)
			status = usage_error("query", "'%s' is a file here: read files with -i FILE, or write the stored "
						      "type as '%s'", selector, braced);
		else
			status = usage_error("query", "'%s' looks like a file: read files with -i FILE", selector);
		cp_selector_free(as_type);
		goto out;
	}
	if (selector && (err = cp_selector_parse(selector, &sel))) {
		status = usage_error("query", "%s", cp_errmsg(err));
		goto out;
	}
	if (!o.ninputs) {
		struct cp_store *store;

		if ((status = store_range("query", &o.store)))
			goto out;
		if (!(store = store_get("query", &o.store))) {
			status = EXIT_FAIL;
			goto out;
		}
		if ((status = output_open(&out, "query", o.output, cmd_format_binary(&cmd_query, o.format) && !modes)))
			goto out;
		if (modes && !o.over_time)
			err = run_lists(&out, &o, store, sel);
		else if (o.over_time)
			err = run_over_time(&out, &o, store, sel);
		else
			err = run_select(&out, &o, store, sel, filter);
		if (err)
			status = fail("query", "%s", cp_errmsg(err));
		status = output_close(&out, status);
		goto out;
	}
	p = load_inputs("query", o.inputs, o.ninputs);
	if (!p || (vidx = pick_sample_type("query", p, o.sample_type)) < 0) {
		status = EXIT_FAIL;
		goto out;
	}
	whole = cp_profile_total(p, vidx);
	if (!(p = cp_profile_filter(p, filter))) {
		status = fail("query", "%s", cp_errmsg(errno));
		goto out;
	}
	if ((status = output_open(&out, "query", o.output, cmd_format_binary(&cmd_query, o.format))))
		goto out;
	err = render(&out, &o, p, vidx, NULL, whole);
	if (err)
		status = fail("query", "%s", cp_errmsg(err));
	status = output_close(&out, status);
out:
	cp_selector_free(sel);
	cp_filter_free(filter);
	cp_profile_free(p);
	store_args_release(&o.store);
	free(o.inputs);
	return status;
}

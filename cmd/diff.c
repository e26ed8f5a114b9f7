/* SPDX-License-Identifier: MIT */
/* cprof diff: compare two profiles. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/error.h"
#include "../lib/folded.h"
#include "../lib/render/regress.h"
#include "../lib/render/render.h"
#include "cmd.h"

enum { OPT_FOCUS = 256, OPT_IGNORE, OPT_NORMALIZE, OPT_TITLE, OPT_BEFORE_RANGE, OPT_AFTER_RANGE, OPT_SIGNIFICANT,
       OPT_NO_SIGNIFICANCE, OPT_FDR, OPT_BASELINE, OPT_RANGE, OPT_BY, OPT_MIN_CHANGE };

static const struct option options[] = {
	{ "format", required_argument, NULL, 'f' },
	{ "sample-type", required_argument, NULL, 't' },
	{ "normalize", no_argument, NULL, OPT_NORMALIZE },
	{ "focus", required_argument, NULL, OPT_FOCUS },
	{ "ignore", required_argument, NULL, OPT_IGNORE },
	{ "limit", required_argument, NULL, 'n' },
	{ "title", required_argument, NULL, OPT_TITLE },
	{ "output", required_argument, NULL, 'o' },
	STORE_OPTIONS,
	{ "before-range", required_argument, NULL, OPT_BEFORE_RANGE },
	{ "after-range", required_argument, NULL, OPT_AFTER_RANGE },
	{ "significant", no_argument, NULL, OPT_SIGNIFICANT },
	{ "no-significance", no_argument, NULL, OPT_NO_SIGNIFICANCE },
	{ "fdr", required_argument, NULL, OPT_FDR },
	{ "min-change", required_argument, NULL, OPT_MIN_CHANGE },
	{ "baseline", required_argument, NULL, OPT_BASELINE },
	{ "range", required_argument, NULL, OPT_RANGE },
	{ "by", required_argument, NULL, OPT_BY },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static int run_diff(int argc, char **argv);

const struct cmd cmd_diff = {
	"diff", "compare two profiles (table, differential flame graph, pprof)", run_diff, options, "f:t:n:o:h",
	"usage: cprof diff [OPTIONS] BEFORE AFTER\n"
	"       cprof diff [OPTIONS] --before-range FROM..TO --after-range FROM..TO SELECTOR\n"
	"       cprof diff --baseline DURATION [--range DURATION] [--by LABEL] [SELECTOR]\n"
	"\n"
	"Compare two profiles function by function. BEFORE and AFTER are files\n"
	"(pprof or folded) or selectors of stored profiles, e.g.\n"
	"  cprof diff 'process_cpu:cpu{version=\"1.2\"}' 'process_cpu:cpu{version=\"1.3\"}'\n"
	"or one selector at two time ranges.\n"
	"\n"
	"Each function's change of share is tested: between stored selections with\n"
	"Welch's t test over their 10 s intervals, between files with a test of\n"
	"sample counts; q-values control the false discovery rate (docs/DIFF.md).\n"
	"\n"
	"  -f, --format FMT      {FORMATS} (default: table)\n"
	"  -t, --sample-type T   the value to compare (default: the profile's default)\n"
	"      --normalize       the plain subtraction with BEFORE scaled to AFTER's total\n"
	"                        (sorted by that delta; no test)\n"
	"      --focus RE        keep samples with a frame matching RE, in both\n"
	"      --ignore RE       drop samples with a frame matching RE, in both\n"
	"  -n, --limit N         at most N rows in the table\n"
	"      --title TEXT      the flame graph's title\n"
	"  -o, --output FILE     write to FILE (atomically) instead of standard output\n"
	STORE_USAGE
	"      --before-range R  the time range of BEFORE, FROM..TO (e.g. now-2h..now-1h)\n"
	"      --after-range R   the time range of AFTER (e.g. now-1h..now)\n"
	"      --significant     only the changes that are significant\n"
	"      --fdr Q           the false discovery rate of those (default 0.01)\n"
	"      --min-change PP   no change of share under PP points is significant\n"
	"                        (default 0.5; 0: any change)\n"
	"      --no-significance the plain subtraction, sorted by |delta|\n"
	"      --baseline DUR    regressions: the last --range of every program (SELECTOR,\n"
	"                        default cpu) against the same range DUR before (e.g. 1d, 1w):\n"
	"                        its significant growths, worst first (table or json)\n"
	"      --range DUR       the recent range of --baseline (default 1h)\n"
	"      --by LABEL        what a program is, for --baseline (default comm)\n"
	"  -h, --help            show this help\n",
	.render_kind = CP_RENDER_DIFF,
};

struct diff_opts {
	const char *format, *sample_type, *focus, *ignore, *title, *output, *before_range, *after_range, *baseline, *range,
		*by;
	bool normalize, significant, no_significance;
	double fdr, min_change; /* min_change: a share, 0..1 (negative: the default) */
	int limit;
};

/* FROM..TO -> nanoseconds; NULL keeps the store's range */
static int parse_range(const char *opt, const char *r, const struct store_args *sa, int64_t *from, int64_t *to)
{
	const char *dots;
	char a[128];
	int err;

	*from = sa->t_from;
	*to = sa->t_to;
	if (!r)
		return EXIT_OK;
	dots = strstr(r, "..");
	if (!dots || (size_t)(dots - r) >= sizeof(a))
		return usage_error("diff", "%s wants FROM..TO (e.g. now-2h..now-1h), not '%s'", opt, r);
	memcpy(a, r, (size_t)(dots - r));
	a[dots - r] = '\0';
	if ((err = cp_parse_time(a, cp_now_ns(), from)) || (err = cp_parse_time(dots + 2, cp_now_ns(), to)))
		return usage_error("diff", "%s: %s", opt, cp_errmsg(err));
	if (*from > *to)
		return usage_error("diff", "%s: the range is empty (FROM is after TO)", opt);
	return EXIT_OK;
}

/* --baseline: the regressions of every program */
static int run_baseline(const struct diff_opts *o, struct store_args *sa, int nargs, char **args)
{
	struct cp_regressions r;
	struct cp_selector *sel = NULL;
	struct output out = { 0 };
	int64_t base, range = 3600 * (int64_t)1000000000;
	const char *selarg = nargs ? args[0] : "cpu";
	int err, status;

	if (nargs > 1 || o->before_range || o->after_range)
		return usage_error("diff", "--baseline takes one selector (default cpu), not two profiles or ranges");
	if (strcmp(o->format, "table") && strcmp(o->format, "json"))
		return usage_error("diff", "--baseline prints a table or json, not %s", o->format);
	if (cp_parse_duration(o->baseline, &base) || base <= 0)
		return usage_error("diff", "bad --baseline '%s': want a duration, e.g. 1d or 1w", o->baseline);
	if (o->range && (cp_parse_duration(o->range, &range) || range <= 0))
		return usage_error("diff", "bad --range '%s': want a duration, e.g. 1h", o->range);
	if (is_file_arg(selarg))
		return usage_error("diff", "--baseline compares stored series, not the file %s", selarg);
	if ((err = cp_selector_parse(selarg, &sel)))
		return usage_error("diff", "bad selector '%s': %s", selarg, cp_errmsg(err));
	status = EXIT_FAIL;
	if (store_get("diff", sa)) {
		err = cp_regressions_find(sa->store, sel, o->by ? o->by : "comm", cp_now_ns(), range, base, o->fdr,
					  o->min_change, &r);
		if (err) {
			status = fail("diff", "%s: %s", selarg, cp_errmsg(err));
		} else {
			if (!(status = output_open(&out, "diff", o->output, false))) {
				err = cp_render_regressions(out.f, &r, !strcmp(o->format, "json"));
				status = output_close(&out, err ? fail("diff", "%s", cp_errmsg(err)) : EXIT_OK);
			}
			cp_regressions_release(&r);
		}
	}
	cp_selector_free(sel);
	store_args_release(sa);
	return status;
}

static int run_diff(int argc, char **argv)
{
	struct diff_opts o = { .format = "table", .min_change = -1 };
	struct cp_profile *before = NULL, *after = NULL;
	struct cp_store_intervals *iv[2] = { NULL, NULL }; /* one group, or none */
	size_t niv[2] = { 0, 0 };
	struct cp_filter *filter = NULL;
	struct store_args sa = { 0 };
	struct output out = { 0 };
	const char *type, *bname, *aname;
	int64_t bf, bt, af, at;
	int opt, status = EXIT_OK, vb, va, err;
	size_t i;

	while ((opt = next_option(&cmd_diff, argc, argv)) != -1) {
		if (store_option(&sa, opt, optarg))
			continue;
		switch (opt) {
		case OPT_BEFORE_RANGE: o.before_range = optarg; break;
		case OPT_AFTER_RANGE: o.after_range = optarg; break;
		case 'f': o.format = optarg; break;
		case 't': o.sample_type = optarg; break;
		case OPT_NORMALIZE: o.normalize = true; break;
		case OPT_FOCUS: o.focus = optarg; break;
		case OPT_IGNORE: o.ignore = optarg; break;
		case OPT_TITLE: o.title = optarg; break;
		case OPT_SIGNIFICANT: o.significant = true; break;
		case OPT_BASELINE: o.baseline = optarg; break;
		case OPT_RANGE: o.range = optarg; break;
		case OPT_BY: o.by = optarg; break;
		case OPT_NO_SIGNIFICANCE: o.no_significance = true; break;
		case OPT_FDR: {
			char *end;

			o.fdr = strtod(optarg, &end);
			if (end == optarg || *end || !(o.fdr > 0 && o.fdr < 1))
				return usage_error("diff", "bad --fdr '%s': want a number between 0 and 1, e.g. 0.05", optarg);
			break;
		}
		case OPT_MIN_CHANGE: {
			char *end;
			double pp = strtod(optarg, &end);

			if (end == optarg || *end || !(pp >= 0 && pp < 100))
				return usage_error("diff", "bad --min-change '%s': want percentage points from 0 to 100, e.g. 0.5",
						   optarg);
			o.min_change = pp / 100;
			break;
		}
		case 'o': o.output = optarg; break;
		case 'n':
			if ((status = parse_count("diff", "--limit", optarg, &o.limit)))
				return status;
			break;
		case 'h': return show_usage(&cmd_diff);
		default: return EXIT_USAGE;
		}
	}
	if ((status = cmd_format_check(&cmd_diff, o.format)))
		return status;
	if (o.baseline)
		return run_baseline(&o, &sa, argc - optind, argv + optind);
	if (o.range || o.by)
		return usage_error("diff", "--range and --by go with --baseline");
	if (argc - optind == 1 && o.before_range && o.after_range) {
		bname = aname = argv[optind]; /* one selector at two times */
		if (is_file_arg(bname))
			return usage_error("diff", "time ranges compare a stored selector, not the file %s", bname);
	} else if (argc - optind == 2) {
		bname = argv[optind];
		aname = argv[optind + 1];
		if ((o.before_range && is_file_arg(bname)) || (o.after_range && is_file_arg(aname)))
			return usage_error("diff", "--before-range and --after-range select stored profiles, not files");
	} else {
		return usage_error("diff", "give two profiles: BEFORE AFTER (or one selector with --before-range and "
					   "--after-range)");
	}
	if ((status = store_range("diff", &sa)) || (status = parse_range("--before-range", o.before_range, &sa, &bf, &bt)) ||
	    (status = parse_range("--after-range", o.after_range, &sa, &af, &at)))
		return status;
	if (o.normalize && !o.significant)
		o.no_significance = true; /* shares are normalised already: the plain table's option */
	if (o.significant && o.no_significance)
		return usage_error("diff", "--significant cannot go with --no-significance");
	if ((status = make_filter("diff", o.focus, o.ignore, &filter)))
		return status;
	/* stored selections: their intervals, for the test of each change */
	if (!o.no_significance && !is_file_arg(bname) && !is_file_arg(aname) &&
	    ((status = load_intervals("diff", bname, &sa, bf, bt, &iv[0], &niv[0])) ||
	     (status = load_intervals("diff", aname, &sa, af, at, &iv[1], &niv[1]))))
		goto out;
	for (int s = 0; s < 2; s++)
		for (i = 0; niv[s] && i < iv[s]->n; i++)
			if (!(iv[s]->iv[i] = cp_profile_filter(iv[s]->iv[i], filter))) {
				status = fail("diff", "%s", cp_errmsg(errno));
				goto out;
			}
	if (!(before = load_selection("diff", bname, &sa, bf, bt, &status)) ||
	    !(after = load_selection("diff", aname, &sa, af, at, &status)))
		goto out;
	status = EXIT_FAIL;
	if ((va = cp_profile_sample_index(after, o.sample_type)) < 0) {
		fail("diff", "%s: %s", aname, cp_errmsg(va));
		goto out;
	}
	/* compare like with like: the before value of the same type as after's */
	type = o.sample_type ? o.sample_type : cp_profile_string(after, after->sample_types[va].type);
	if ((vb = cp_profile_sample_index(before, type)) < 0) {
		fail("diff", "%s: %s", bname, cp_errmsg(vb));
		goto out;
	}
	if (!(before = cp_profile_filter(before, filter)) || !(after = cp_profile_filter(after, filter))) {
		fail("diff", "%s", cp_errmsg(errno));
		goto out;
	}
	if ((status = output_open(&out, "diff", o.output, cmd_format_binary(&cmd_diff, o.format))))
		goto out;
	{
		struct cp_render_diff_opts ro = { o.limit, o.normalize, o.title, false, false, 0, !o.no_significance,
						  o.significant, o.fdr, { niv[0] ? iv[0]->iv : NULL, niv[1] ? iv[1]->iv : NULL },
						  { niv[0] ? iv[0]->n : 0, niv[1] ? iv[1]->n : 0 }, o.min_change };

		err = cp_render_diff(out.f, o.format, before, vb, after, va, &ro);
	}
	status = err ? fail("diff", "%s", cp_errmsg(err)) : EXIT_OK;
	status = output_close(&out, status);
out:
	cp_store_intervals_free(iv[0], niv[0]);
	cp_store_intervals_free(iv[1], niv[1]);
	cp_filter_free(filter);
	cp_profile_free(before);
	cp_profile_free(after);
	store_args_release(&sa);
	return status;
}

/* SPDX-License-Identifier: MIT */
/* cprof merge: merge profiles with pprof semantics. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../lib/error.h"
#include "../lib/folded.h"
#include "../lib/render/render.h"
#include "cmd.h"

static const struct option options[] = {
	{ "output", required_argument, NULL, 'o' },
	{ "format", required_argument, NULL, 'f' },
	{ "sample-type", required_argument, NULL, 't' },
	STORE_OPTIONS,
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static int run_merge(int argc, char **argv);

const struct cmd cmd_merge = {
	"merge", "merge profiles with pprof semantics", run_merge, options, "o:f:t:h",
	"usage: cprof merge [OPTIONS] FILE|SELECTOR...\n"
	"\n"
	"Merge pprof or folded profiles (as go tool pprof -proto A B does): same\n"
	"period and sample types required; values of identical samples are summed.\n"
	"An argument that is not a file is a selector of stored profiles, merged\n"
	"over the time range.\n"
	"\n"
	"  -o, --output FILE     write to FILE (atomically); default: standard output\n"
	"  -f, --format FMT      {FORMATS} (default: pprof)\n"
	"  -t, --sample-type T   the value for folded, json, top and flamegraph\n"
	STORE_USAGE
	"  -h, --help            show this help\n",
	.render_kind = CP_RENDER_PROFILE,
};

static int run_merge(int argc, char **argv)
{
	const char *output = NULL, *format = "pprof", *sample_type = NULL;
	struct store_args sa = { 0 };
	struct cp_profile *p = NULL, *q;
	struct output out = { 0 };
	int opt, status, vidx, err = 0, i;

	while ((opt = next_option(&cmd_merge, argc, argv)) != -1) {
		if (store_option(&sa, opt, optarg))
			continue;
		switch (opt) {
		case 'o': output = optarg; break;
		case 'f': format = optarg; break;
		case 't': sample_type = optarg; break;
		case 'h': return show_usage(&cmd_merge);
		default: return EXIT_USAGE;
		}
	}
	if ((status = cmd_format_check(&cmd_merge, format)))
		return status;
	if (optind >= argc)
		return usage_error("merge", "no input: give the profile files or stored selectors to merge");
	if ((status = store_range("merge", &sa)))
		return status;
	for (i = optind; i < argc; i++)
		if (!is_file_arg(argv[i]))
			break;
	if (i == argc) { /* files only: all cores */
		p = load_inputs("merge", argv + optind, argc - optind);
		status = EXIT_FAIL;
	} else {
		for (i = optind; i < argc; i++) {
			if (!(q = load_selection("merge", argv[i], &sa, sa.t_from, sa.t_to, &status)))
				break;
			if (!p) {
				p = q;
				continue;
			}
			err = cp_profile_merge(p, q, NULL);
			cp_profile_free(q);
			if (err) {
				status = fail("merge", "cannot merge %s with %s: %s", argv[i], argv[optind], cp_errmsg(err));
				break;
			}
		}
		if (i < argc) {
			cp_profile_free(p);
			p = NULL;
		}
	}
	if (!p)
		goto out;
	if ((vidx = pick_sample_type("merge", p, sample_type)) < 0) {
		status = EXIT_FAIL;
		goto out;
	}
	if ((status = output_open(&out, "merge", output, cmd_format_binary(&cmd_merge, format))))
		goto out;
	err = cp_render_profile(out.f, format, p, vidx, &(struct cp_render_opts){ .output = out.path });
	if (err)
		status = fail("merge", "%s", cp_errmsg(err));
	status = output_close(&out, status);
out:
	cp_profile_free(p);
	store_args_release(&sa);
	return status;
}

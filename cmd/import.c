/* SPDX-License-Identifier: MIT */
/* cprof import: load pprof, folded and JFR files into the store. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/error.h"
#include "../lib/labels.h"
#include "../lib/load.h"
#include "../lib/selector.h"
#include "../lib/util.h"
#include "../lib/store/remote.h"
#include "cmd.h"

enum { OPT_LABEL = 300, OPT_TIME, OPT_NAME, OPT_RETENTION, OPT_MAX_STORE, OPT_DOWNSAMPLE, OPT_FROM_STORE };

static const struct option options[] = {
	{ "data", required_argument, NULL, OPT_DATA },
	{ "label", required_argument, NULL, OPT_LABEL },
	{ "time", required_argument, NULL, OPT_TIME },
	{ "name", required_argument, NULL, OPT_NAME },
	{ "retention", required_argument, NULL, OPT_RETENTION },
	{ "max-store-size", required_argument, NULL, OPT_MAX_STORE },
	{ "downsample", required_argument, NULL, OPT_DOWNSAMPLE },
	{ "from-store", required_argument, NULL, OPT_FROM_STORE },
	REMOTE_OPTIONS,
	PUSH_OPTIONS,
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static int run_import(int argc, char **argv);

const struct cmd cmd_import = {
	"import", "load pprof, folded and JFR profiles into the store", run_import, options, "l:h",
	"usage: cprof import [OPTIONS] FILE...\n"
	"       cprof import [OPTIONS] --from-store DIR\n"
	"       cprof import [--data DIR] [--retention DUR] [--max-store-size SIZE]\n"
	"                    [--downsample POLICY]\n"
	"\n"
	"Store profiles (pprof, gzip or raw, folded stacks, and Java Flight Recorder\n"
	"files, each event type as its own profile type) so that query,\n"
	"merge and diff can select them by type, labels and time. All files are\n"
	"stored in one transaction: if one cannot be read, none is stored.\n"
	"With --remote, they are pushed to a cprof server instead, one by one.\n"
	"\n"
	"      --data DIR        the store (default: $CPROF_DATA, /var/lib/cprof as root,\n"
	"                        else $XDG_DATA_HOME/cprof or ~/.local/share/cprof)\n"
	"  -l, --label K=V       a series label for every file (repeatable)\n"
	"      --time TIME       the profiles' time (default: each file's own, else now)\n"
	"      --name NAME       the profile type's name (default: from the profile:\n"
	"                        process_cpu, memory, goroutine...)\n"
	"      --retention DUR   then delete stored data older than DUR (e.g. 15d)\n"
	"      --max-store-size SIZE  then delete the oldest data to keep the store\n"
	"                        under SIZE (e.g. 10G)\n"
	"      --downsample POLICY  then merge older days into coarser steps, e.g.\n"
	"                        raw=2d,5m=10d,1h (off: none)\n"
	"                        (without FILE, these three alone: store upkeep)\n"
	"      --from-store DIR  every sample of the store in DIR (this cprof's, or an\n"
	"                        earlier one's, which is read as it is), with its series\n"
	"                        and times, instead of files\n"
	REMOTE_USAGE
	PUSH_USAGE
	"  -h, --help            show this help\n",
	.formats = NULL, /* no --format */
};

static int run_import(int argc, char **argv)
{
	const char *data = NULL, *when = NULL, *name = NULL, *retention = NULL, *remote = NULL, *token_file = NULL,
		   *from = NULL;
	struct cp_labels labels = { 0 }, cfg_labels = { 0 }; /* -l: the options', the file's */
	struct cp_store_append *batch = NULL;
	struct cp_store *store = NULL;
	struct push_args push = { 0 };
	int64_t t = 0, keep = 0;
	uint64_t max_store = 0;
	bool cfg_retention = false, cfg_max_store = false, cfg_downsample = false, upkeep_only;
	const char *downsample = NULL;
	struct cp_downsample policy = { 0 };
	struct cp_upkeep upkeep = { .verb = "import" };
	struct cp_upkeep_report done;
	size_t nfiles = 0, nbatch = 0, i;
	int opt, status = EXIT_OK, err;
	char dir[4096];

	while ((opt = next_option(&cmd_import, argc, argv)) != -1) {
		switch (opt) {
		case OPT_DATA: data = optarg; break;
		case 'l':
		case OPT_LABEL:
			if ((err = cp_label_arg(from_config() ? &cfg_labels : &labels, optarg))) {
				status = err == -ENOMEM ? fail("import", "out of memory") :
							  usage_error("import", "%s", cp_errmsg(err));
				goto out;
			}
			break;
		case OPT_TIME: when = optarg; break;
		case OPT_NAME: name = optarg; break;
		case OPT_RETENTION:
			retention = optarg;
			cfg_retention = from_config();
			break;
		case OPT_MAX_STORE:
			if ((status = parse_max_store_size("import", optarg, &max_store)) != EXIT_OK)
				goto out;
			cfg_max_store = from_config();
			break;
		case OPT_DOWNSAMPLE:
			downsample = optarg;
			cfg_downsample = from_config();
			break;
		case OPT_FROM_STORE: from = optarg; break;
		case OPT_REMOTE: remote = optarg; break;
		case OPT_TOKEN_FILE: token_file = optarg; break;
		case 'h': status = show_usage(&cmd_import); goto out;
		default:
			if (push_option(&push, opt, optarg))
				break;
			status = EXIT_USAGE;
			goto out;
		}
	}
	if ((err = cp_labels_take_defaults(&labels, &cfg_labels))) {
		status = err == -ENOMEM ? fail("import", "out of memory") : usage_error("import", "%s", cp_errmsg(err));
		goto out;
	}
	if (when && (err = cp_parse_time(when, cp_now_ns(), &t))) {
		status = usage_error("import", "--time: %s", cp_errmsg(err));
		goto out;
	}
	if (retention && (err = cp_parse_duration(retention, &keep))) {
		status = usage_error("import", "--retention: %s", cp_errmsg(err));
		goto out;
	}
	if (name && !cp_type_name_valid(name)) {
		status = usage_error("import", "bad --name '%s': use letters, digits, '_', '.' and '-'", name);
		goto out;
	}
	if (downsample && (err = cp_downsample_parse(downsample, &policy))) {
		status = usage_error("import", "--downsample: %s", cp_errmsg(err));
		goto out;
	}
	/* --retention, --max-store-size or --downsample alone (not the configuration file's: those
	 * apply to imports) is store upkeep */
	if (from && (optind < argc || when || name || labels.n)) {
		status = usage_error("import", "--from-store copies a store as it is: no FILE, --time, --name or -l with it");
		goto out;
	}
	upkeep_only = (downsample && !cfg_downsample) || (retention && !cfg_retention) || (max_store && !cfg_max_store);
	if (optind >= argc && !from && !upkeep_only) {
		status = usage_error("import", "no input: give the profile files to import");
		goto out;
	}
	if ((status = remote_args("import", data, false, &remote, &token_file)) ||
	    (status = push_check("import", remote, &push)))
		goto out;
	if (!remote && (status = store_dir("import", data, dir, sizeof(dir))))
		goto out;
	if (remote) { /* the configuration file's store settings are for a local store */
		if (cfg_retention)
			retention = NULL;
		if (cfg_max_store)
			max_store = 0;
		if (cfg_downsample)
			downsample = NULL;
	}
	if (remote && downsample) {
		status = usage_error("import", "--downsample is for the local store: a server downsamples its own "
					       "(cprof serve --downsample)");
		goto out;
	}
	if (remote && max_store) {
		status = usage_error("import", "--max-store-size is for the local store: a server applies its own "
					       "(cprof serve --max-store-size)");
		goto out;
	}
	if (remote && retention) {
		status = usage_error("import", "--retention is for the local store: a server applies its own "
					       "(cprof serve --retention)");
		goto out;
	}
	upkeep.retention = retention ? keep : 0;
	upkeep.max_size = max_store;
	if (downsample)
		upkeep.downsample = policy;
	/* read everything first: a bad file stores nothing */
	nfiles = (size_t)(argc - optind);
	for (i = 0; i < nfiles; i++) {
		/* a file may hold several profile types (a JFR recording: cpu, memory, mutex...) */
		struct cp_load_part *parts = NULL;
		struct cp_store_append *more;
		size_t nparts = 0, k;

		if ((err = cp_profile_load_parts(argv[optind + (int)i], &parts, &nparts))) {
			status = fail("import", "%s (nothing was imported)", cp_errmsg(err));
			goto out;
		}
		if (!(more = realloc(batch, (nbatch + nparts + 1) * sizeof(*batch)))) {
			cp_load_parts_free(parts, nparts);
			status = fail("import", "out of memory");
			goto out;
		}
		batch = more;
		for (k = 0; k < nparts; k++) {
			memset(&batch[nbatch], 0, sizeof(*batch));
			batch[nbatch].profile = parts[k].profile;
			batch[nbatch].name = name ? name : parts[k].name;
			batch[nbatch].labels = labels.kv;
			batch[nbatch].nlabels = labels.n;
			batch[nbatch].time_ns = t;
			nbatch++;
			parts[k].profile = NULL;
		}
		cp_load_parts_free(parts, nparts);
	}
	data = remote ? remote : dir;
	if (!(store = store_open_write("import", dir, remote, token_file, &push, NULL, 0, NULL))) {
		status = EXIT_FAIL;
		goto out;
	}
	if (from) {
		char a[4096], b[4096];

		if (!remote && realpath(from, a) && realpath(dir, b) && !strcmp(a, b)) {
			status = usage_error("import", "--from-store %s is the store it would copy into", from);
			goto out;
		}
		if ((err = cp_store_copy(from, store, 0))) {
			status = fail("import", "%s", cp_errmsg(err));
			goto out;
		}
	} else if (!nfiles) { /* store upkeep alone: what the options ask, and what went */
		if ((err = cp_upkeep_once(&upkeep, store, 0, &done))) {
			status = fail("import", "%s", cp_errmsg(err));
			goto out;
		}
		if (retention)
			printf("deleted %d day%s older than %s from %s\n", done.retained_days,
			       done.retained_days == 1 ? "" : "s", retention, dir);
		if (max_store)
			printf("deleted %" PRId64 " bytes of the oldest data from %s: it takes %" PRIu64 " bytes%s\n", done.freed,
			       dir, done.size,
			       done.size > upkeep.max_size ? ", still over --max-store-size (the newest day alone is)" : "");
		if (downsample)
			printf("downsampled %d day%s in %s: %" PRId64 " blocks of %" PRId64 " entries into %" PRId64
			       " blocks of %" PRId64 " entries\n", done.compacted_days, done.compacted_days == 1 ? "" : "s",
			       dir, done.compact.blocks_before, done.compact.entries_before, done.compact.blocks_after,
			       done.compact.entries_after);
		status = output_close(&(struct output){ "import", NULL, stdout, NULL, 0 }, status);
		goto out;
	}
	if (!from && (err = cp_store_append(store, batch, nbatch)) < 0) {
		/* a server takes the files one by one: the message says how many went */
		status = fail("import", "%s%s", cp_errmsg(err), remote ? "" : " (nothing was imported)");
		goto out;
	}
	if ((err = cp_upkeep_once(&upkeep, store, 0, &done))) {
		status = fail("import", "imported, but %s", cp_errmsg(err));
		goto out;
	}
	if (from)
		printf("copied the store at %s into %s\n", from, data);
	else
		printf("imported %zu profile%s into %s\n", nfiles, nfiles == 1 ? "" : "s", data);
	status = output_close(&(struct output){ "import", NULL, stdout, NULL, 0 }, status);
out:
	for (i = 0; batch && i < nbatch; i++)
		cp_profile_free((struct cp_profile *)batch[i].profile);
	free(batch);
	cp_store_close(store);
	cp_labels_release(&labels);
	cp_labels_release(&cfg_labels);
	return status;
}

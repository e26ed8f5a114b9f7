/* SPDX-License-Identifier: MIT */
/* cprof scrape: pull pprof profiles from HTTP endpoints, continuously from a
 * Parca-style config, or once from a URL; and show the targets' state. */
#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../lib/error.h"
#include "../lib/http/client.h"
#include "../lib/labels.h"
#include "../lib/render/render.h"
#include "../lib/scrape.h"
#include "../lib/selector.h"
#include "../lib/settings.h"
#include "../lib/http/push.h"
#include "../lib/util.h"
#include "cmd.h"

enum { OPT_ONCE = 256, OPT_SECONDS, OPT_TIMEOUT, OPT_TARGETS, OPT_RETENTION, OPT_MAX_STORE, OPT_LOG_LEVEL,
       OPT_DOWNSAMPLE };

static const struct option options[] = {
	{ "config", required_argument, NULL, 'c' },
	{ "once", no_argument, NULL, OPT_ONCE },
	{ "profile", required_argument, NULL, 'p' },
	{ "seconds", required_argument, NULL, OPT_SECONDS },
	{ "timeout", required_argument, NULL, OPT_TIMEOUT },
	{ "label", required_argument, NULL, 'l' },
	{ "output", required_argument, NULL, 'o' },
	{ "targets", no_argument, NULL, OPT_TARGETS },
	{ "format", required_argument, NULL, 'f' },
	{ "data", required_argument, NULL, OPT_DATA },
	REMOTE_OPTIONS,
	PUSH_OPTIONS,
	{ "retention", required_argument, NULL, OPT_RETENTION },
	{ "max-store-size", required_argument, NULL, OPT_MAX_STORE },
	{ "downsample", required_argument, NULL, OPT_DOWNSAMPLE },
	{ "log-level", required_argument, NULL, OPT_LOG_LEVEL },
	{ "quiet", no_argument, NULL, 'q' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static int run_scrape(int argc, char **argv);

/* --targets' formats */
static const char *const targets_formats[] = { "table", "json", NULL };

const struct cmd cmd_scrape = {
	"scrape", "pull pprof profiles from HTTP endpoints (Parca-compatible config)", run_scrape, options,
	"c:p:l:o:f:qh",
	"usage: cprof scrape --config FILE [--once] [--data DIR | --remote URL]\n"
	"       cprof scrape [--profile NAME] [--seconds N] [-o FILE] URL\n"
	"       cprof scrape --targets [--data DIR | --remote URL]\n"
	"\n"
	"Pull pprof profiles from HTTP endpoints such as Go's net/http/pprof.  With\n"
	"--config, run the scrape_configs jobs of a Parca-style YAML file (parca.yaml\n"
	"or cprof.yaml) into the store until SIGINT/SIGTERM: every target and profile\n"
	"on its interval, concurrently; series carry job, instance and the static\n"
	"labels.  With a URL, scrape once.\n"
	"\n"
	"  -c, --config FILE     the scrape_configs to run\n"
	"      --once            with --config: every target once, then exit\n"
	"                        (status 1 when a target failed)\n"
	"  -p, --profile NAME    one scrape: process_cpu (default), memory, heap, block,\n"
	"                        mutex, goroutine, fgprof; for URL without a path\n"
	"      --seconds N       one scrape: how long a delta profile (process_cpu,\n"
	"                        fgprof) covers (default 10)\n"
	"      --timeout DUR     one scrape: give up after DUR (default: N + 3s, or 30s)\n"
	"  -l, --label K=V       one scrape: a series label (repeatable)\n"
	"  -o, --output FILE     one scrape: write the profile (gzipped pprof) to FILE\n"
	"                        instead of the store\n"
	"      --targets         the state of the targets of a running scraper (or,\n"
	"                        with --remote, of the server's scrape jobs)\n"
	"  -f, --format FMT      --targets: {FORMATS} (default: table)\n"
	"      --data DIR        the store (default: $CPROF_DATA, /var/lib/cprof as root,\n"
	"                        else $XDG_DATA_HOME/cprof or ~/.local/share/cprof)\n"
	REMOTE_USAGE
	PUSH_USAGE
	"      --retention DUR   delete stored data older than DUR as it goes\n"
	"      --max-store-size SIZE  keep the store under SIZE (e.g. 10G), deleting its\n"
	"                        oldest data, checked every minute\n"
	"      --downsample POLICY  keep older days at coarser steps, merged hourly\n"
	"                        (default " CP_DOWNSAMPLE_DEFAULT "; off: all raw)\n"
	"      --log-level LEVEL error, warn, info (default) or debug\n"
	"  -q, --quiet           no messages about targets going up and down\n"
	"                        (--log-level warn)\n"
	"  -h, --help            show this help\n",
	.formats = targets_formats,
};

#define STATE_FILE "scrape-targets.json"

struct scrape_opts {
	const char *config, *profile, *output, *format, *data, *remote, *token_file, *retention, *downsample;
	struct cp_downsample policy;
	int64_t seconds, timeout, keep;
	uint64_t max_store;
	bool once, targets, quiet;
	struct cp_labels labels, cfg_labels; /* -l: the options', the configuration file's */
	bool cfg_retention, cfg_max_store, cfg_downsample;
	struct push_args push;
};

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig)
{
	(void)sig;
	stop_flag = 1;
}

/* ---- the sink: the store (local or a server) ---- */

struct sink {
	struct cp_store *store;
	struct cp_upkeep upkeep; /* --retention, --max-store-size */
};

static int to_store(void *ctx, const struct cp_store_append *a, size_t n)
{
	struct sink *k = ctx;
	int64_t now = cp_now_ns();
	int err = cp_store_append(k->store, a, n);

	if (err >= 0) /* stored, or CP_STORE_SPOOLED: the server is away, kept in the spool */
		cp_upkeep_run(&k->upkeep, k->store, now);
	return err < 0 ? err : 0;
}

static void log_target(void *ctx, const struct cp_target_state *t)
{
	char line[1280];

	cp_log("scrape", CP_LOG_INFO, "%s", cp_target_state_line(t, !*(const bool *)ctx, line, sizeof(line)));
}

static int write_state(struct cp_scraper *s, const char *dir)
{
	struct cp_target_state *t = NULL;
	char path[4096], *buf = NULL;
	size_t n = 0, len = 0;
	FILE *f;
	int err;

	if ((err = cp_scraper_targets(s, &t, &n)))
		return err;
	if (!(f = open_memstream(&buf, &len))) {
		cp_target_states_free(t, n);
		return -ENOMEM;
	}
	err = cp_target_states_json(f, t, n);
	if (fclose(f) && !err)
		err = -ENOMEM;
	snprintf(path, sizeof(path), "%s/" STATE_FILE, dir);
	if (!err)
		err = cp_write_file_atomic(path, buf, len);
	free(buf);
	cp_target_states_free(t, n);
	return err;
}

struct runner {
	struct cp_scraper *s;
	int err;
};

static void *run_thread(void *arg)
{
	struct runner *r = arg;

	r->err = cp_scraper_run(r->s, NULL);
	return NULL;
}

static int open_sink(const struct scrape_opts *o, struct sink *k, char *dir, size_t dlen)
{
	char spool[4200];
	int status, err;

	/* with --remote: the targets' state where --targets looks, the spool beside it */
	if ((status = store_dir("scrape", o->remote ? NULL : o->data, dir, dlen)))
		return status;
	snprintf(spool, sizeof(spool), "%s/spool-scrape", dir);
	if (o->remote && (err = cp_mkdirs(dir, 0755)))
		return fail("scrape", "%s", cp_errmsg(err));
	/* a refused token or not a cprof server: said now, not as failing targets */
	if (!(k->store = store_open_write("scrape", dir, o->remote, o->token_file, &o->push, spool, 256u << 20, NULL)))
		return EXIT_FAIL;
	k->upkeep.verb = "scrape";
	k->upkeep.retention = o->keep;
	k->upkeep.max_size = o->max_store;
	if (!o->remote)
		k->upkeep.downsample = o->policy;
	return EXIT_OK;
}

static int run_config(const struct scrape_opts *o)
{
	struct cp_config cfg = { 0 };
	struct cp_scraper *s = NULL;
	struct sink k = { 0 };
	struct runner r = { 0 };
	char dir[4096];
	pthread_t th;
	int status, err;

	if ((err = cp_config_load(o->config, &cfg)))
		return usage_error("scrape", "--config: %s", cp_errmsg(-err));
	if (!cfg.scrape.njobs) {
		cp_config_release(&cfg);
		return usage_error("scrape", "--config %s has no scrape_configs", o->config);
	}
	if ((status = open_sink(o, &k, dir, sizeof(dir))))
		goto out;
	/* the last cumulative scrapes beside the targets' state: a next run (cron, --once) goes on from them */
	if (!(s = cp_scraper_new(&cfg.scrape, to_store, &k)) || (errno = -cp_scraper_set_state_dir(s, dir))) {
		status = fail("scrape", "%s", cp_errmsg(errno));
		goto out;
	}
	if (!o->quiet)
		cp_scraper_set_log(s, log_target, (void *)&o->once);
	if (o->once) {
		struct cp_target_state *t = NULL;
		size_t n = 0, i, failed = 0;

		cp_scraper_round(s);
		if (!cp_scraper_targets(s, &t, &n))
			for (i = 0; i < n; i++)
				failed += !t[i].up;
		cp_target_states_free(t, n);
		write_state(s, dir);
		status = failed ? fail("scrape", "%zu of %zu targets failed", failed, n) : EXIT_OK;
		goto out;
	}
	r.s = s;
	if ((err = pthread_create(&th, NULL, run_thread, &r))) {
		status = fail("scrape", "cannot start: %s", strerror(err));
		goto out;
	}
	while (!stop_flag) {
		struct timespec ts = { 1, 0 };

		nanosleep(&ts, NULL);
		write_state(s, dir);
	}
	cp_scraper_stop(s);
	pthread_join(th, NULL);
	write_state(s, dir);
	status = r.err ? fail("scrape", "%s", cp_errmsg(-r.err)) : EXIT_OK;
out:
	if (k.store) /* a server's: what the spool holds */
		cp_store_flush(k.store, true);
	cp_scraper_free(s);
	cp_store_close(k.store);
	cp_config_release(&cfg);
	return status;
}

/* ---- one scrape ---- */

static int run_once(const struct scrape_opts *o, const char *url_arg)
{
	struct cp_scrape_request q;
	struct cp_profile *p = NULL;
	struct cp_kv labels[CP_LABEL_ARGS_MAX + 2];
	size_t bytes = 0, n = 0, i;
	int status = EXIT_OK, err;

	if ((err = cp_scrape_request_make(url_arg, o->profile, o->seconds, o->timeout, &q)))
		return err == -ENOMEM ? fail("scrape", "out of memory") : usage_error("scrape", "%s", cp_errmsg(err));
	if (!(p = cp_scrape_once(q.url, q.timeout, &bytes))) {
		status = fail("scrape", "%s", cp_errmsg(errno));
		goto out;
	}
	if (o->output) {
		struct output out = { 0 };

		if ((status = output_open(&out, "scrape", o->output, true)))
			goto out;
		err = cp_render_profile(out.f, "pprof", p, 0, &(struct cp_render_opts){ .output = o->output });
		status = output_close(&out, err ? fail("scrape", "%s", cp_errmsg(err)) : EXIT_OK);
	} else {
		struct sink k = { 0 };
		struct cp_store_append a = { 0 };
		char dir[4096];

		labels[n++] = (struct cp_kv){ "job", "scrape" };
		labels[n++] = (struct cp_kv){ "instance", q.instance };
		for (i = 0; i < o->labels.n; i++) {
			size_t j;

			for (j = 0; j < n && strcmp(labels[j].name, o->labels.kv[i].name); j++)
				;
			labels[j] = o->labels.kv[i];
			n += j == n;
		}
		if ((status = open_sink(o, &k, dir, sizeof(dir))))
			goto out;
		/* a cumulative profile is stored as what happened since the last run's scrape */
		if ((err = cp_scrape_request_since_last(&q, dir, &p))) {
			cp_store_close(k.store);
			status = fail("scrape", "%s", cp_errmsg(err));
			goto out;
		}
		a.profile = p;
		a.name = q.name;
		a.labels = labels;
		a.nlabels = n;
		a.time_ns = p->time_nanos ? p->time_nanos : cp_now_ns();
		err = cp_store_append(k.store, &a, 1);
		if (err >= 0)
			cp_upkeep_run(&k.upkeep, k.store, 0);
		if (err < 0)
			status = fail("scrape", "%s", cp_errmsg(err));
		else if (!o->quiet)
			cp_log("scrape", CP_LOG_INFO, "%s: %u samples (%zu bytes) stored as %s{job=\"scrape\", instance=\"%s\"}%s",
				q.url, p->nsamples, bytes, q.name, q.instance, err == CP_STORE_SPOOLED ? " (spooled: the server is away)" : "");
		cp_store_close(k.store);
	}
out:
	cp_profile_free(p);
	cp_scrape_request_release(&q);
	return status;
}

/* ---- --targets ---- */

static int show_targets(const struct scrape_opts *o)
{
	char path[4200], dir[4096], *text = NULL;
	json_t *arr = NULL, *t;
	json_error_t je;
	size_t len = 0, i;
	int status = EXIT_OK, err;
	int64_t now = cp_now_ns();

	if (o->remote) {
		struct cp_http_client *c;
		struct cp_http_response r = { 0 };
		char *token = NULL;

		if ((status = read_token("scrape", o->token_file, &token)))
			return status;
		c = cp_http_client_new(o->remote, token, 30000);
		free(token);
		if (!c)
			return fail("scrape", "%s", cp_errmsg(errno));
		err = cp_http_request(c, "GET", "/api/v1/targets", NULL, NULL, 0, &r);
		if (!err && (err = cp_http_error_message(&r)))
			cp_http_response_release(&r);
		cp_http_client_free(c);
		if (err)
			return fail("scrape", "%s", cp_errmsg(err));
		text = r.body;
		len = r.len;
		r.body = NULL;
		cp_http_response_release(&r);
	} else {
		if ((status = store_dir("scrape", o->data, dir, sizeof(dir))))
			return status;
		snprintf(path, sizeof(path), "%s/" STATE_FILE, dir);
		if ((err = cp_read_file(path, 64u << 20, (uint8_t **)&text, &len))) {
			if (err == -ENOENT)
				return fail("scrape", "no scraper has written its targets in %s (is cprof scrape --config "
						      "running with this --data?)",
					    path);
			return fail("scrape", "%s", cp_errmsg(err));
		}
	}
	arr = json_loadb(text, len, 0, &je);
	free(text);
	if (!json_is_array(arr)) {
		json_decref(arr);
		return fail("scrape", "the targets' state is not a JSON array (%s)", je.text);
	}
	if (o->format && !strcmp(o->format, "json")) {
		status = json_dumpf(arr, stdout, JSON_INDENT(1)) || putchar('\n') == EOF ? fail("scrape", "cannot write")
											 : EXIT_OK;
		json_decref(arr);
		return status;
	}
	printf("%-16s %-22s %-12s %-7s %10s %9s  %s\n", "JOB", "INSTANCE", "PROFILE", "HEALTH", "LAST", "DURATION",
	       "ERROR");
	json_array_foreach(arr, i, t) {
		int64_t last = json_integer_value(json_object_get(t, "last_scrape"));
		const char *e = json_string_value(json_object_get(t, "last_error"));
		char ago[32];

		if (last)
			snprintf(ago, sizeof(ago), "%.1fs ago", (double)(now - last) / 1e9);
		else
			snprintf(ago, sizeof(ago), "never");
		printf("%-16s %-22s %-12s %-7s %10s %8.3fs  %s\n", json_string_value(json_object_get(t, "job")),
		       json_string_value(json_object_get(t, "instance")), json_string_value(json_object_get(t, "profile")),
		       json_string_value(json_object_get(t, "health")), ago,
		       json_real_value(json_object_get(t, "last_duration_seconds")), e ? e : "");
	}
	json_decref(arr);
	return flush_stdout("scrape");
}

static int scrape_main(struct scrape_opts *o, int argc, char **argv)
{
	struct sigaction sa = { 0 };
	int opt, status, err;

	while ((opt = next_option(&cmd_scrape, argc, argv)) != -1) {
		switch (opt) {
		case 'c': o->config = optarg; break;
		case OPT_ONCE: o->once = true; break;
		case 'p': o->profile = optarg; break;
		case OPT_SECONDS: {
			int secs;

			if ((status = parse_count("scrape", "--seconds", optarg, &secs)))
				return status;
			if (secs <= 0)
				return usage_error("scrape", "--seconds wants a whole number of seconds above 0");
			o->seconds = secs * 1000000000LL;
			break;
		}
		case OPT_TIMEOUT:
			if ((err = cp_parse_duration(optarg, &o->timeout)) || o->timeout <= 0)
				return usage_error("scrape", "--timeout: %s", err ? cp_errmsg(err) : "must be above 0");
			break;
		case 'l':
			if ((err = cp_label_arg(from_config() ? &o->cfg_labels : &o->labels, optarg)))
				return err == -ENOMEM ? fail("scrape", "out of memory") :
							usage_error("scrape", "%s", cp_errmsg(err));
			break;
		case 'o': o->output = optarg; break;
		case OPT_TARGETS: o->targets = true; break;
		case 'f': o->format = optarg; break;
		case OPT_DATA: o->data = optarg; break;
		case OPT_REMOTE: o->remote = optarg; break;
		case OPT_TOKEN_FILE: o->token_file = optarg; break;
		case OPT_RETENTION:
			o->retention = optarg;
			o->cfg_retention = from_config();
			break;
		case OPT_MAX_STORE:
			if ((err = parse_max_store_size("scrape", optarg, &o->max_store)) != EXIT_OK)
				return err;
			o->cfg_max_store = from_config();
			break;
		case OPT_DOWNSAMPLE:
			o->downsample = optarg;
			o->cfg_downsample = from_config();
			break;
		case OPT_LOG_LEVEL:
			if ((err = parse_log_level("scrape", optarg)) != EXIT_OK)
				return err;
			break;
		case 'q':
			o->quiet = true;
			cp_log_level = CP_LOG_WARN;
			break;
		case 'h': return show_usage(&cmd_scrape);
		default:
			if (!push_option(&o->push, opt, optarg))
				return EXIT_USAGE;
		}
	}
	/* the configuration file's store settings and labels, where they do not apply */
	if (o->output || o->targets) {
		if (o->cfg_retention)
			o->retention = NULL;
		if (o->cfg_max_store)
			o->max_store = 0;
	}
	if (o->config || o->targets)
		cp_labels_release(&o->cfg_labels);
	else if ((err = cp_labels_take_defaults(&o->labels, &o->cfg_labels)))
		return err == -ENOMEM ? fail("scrape", "out of memory") : usage_error("scrape", "%s", cp_errmsg(err));
	if (o->output && o->max_store)
		return usage_error("scrape", "-o writes the profile to a file: --max-store-size is for the store");
	if (o->format && (err = cmd_format_check(&cmd_scrape, o->format)))
		return err;
	if (o->retention && (err = cp_parse_duration(o->retention, &o->keep)))
		return usage_error("scrape", "--retention: %s", cp_errmsg(err));
	if (o->output && (o->data || o->remote || o->retention))
		return usage_error("scrape", "-o writes the profile to a file: --data, --remote and --retention are "
					     "for the store");
	if (o->format && !o->targets)
		return usage_error("scrape", "--format goes with --targets");
	if (o->once && o->targets)
		return usage_error("scrape", "--once goes with --config, not --targets");
	if ((status = remote_args("scrape", o->data ? o->data : o->output, o->targets, &o->remote, &o->token_file)) ||
	    (status = push_check("scrape", o->targets ? NULL : o->remote, &o->push)))
		return status;
	if (o->remote) { /* the file's store settings are for a local store */
		if (o->cfg_retention)
			o->retention = NULL;
		if (o->cfg_max_store)
			o->max_store = 0;
	}
	if (o->remote && o->cfg_downsample)
		o->downsample = NULL;
	if (o->remote && o->downsample)
		return usage_error("scrape", "--downsample applies to the local store; the server downsamples its own");
	if ((status = parse_downsample("scrape", o->downsample, &o->policy)))
		return status;
	if (o->remote && o->retention)
		return usage_error("scrape", "--retention applies to the local store; the server keeps its own");
	if (o->remote && o->max_store)
		return usage_error("scrape", "--max-store-size applies to the local store; the server keeps its own");
	if (o->targets) {
		if (o->config || optind < argc)
			return usage_error("scrape", "--targets takes no config and no URL");
		return show_targets(o);
	}
	if (o->config) {
		if (optind < argc)
			return usage_error("scrape", "give --config or a URL, not both");
		if (o->profile || o->seconds || o->timeout || o->labels.n || o->output)
			return usage_error("scrape", "--profile, --seconds, --timeout, --label and --output are for one "
						     "scrape of a URL; with --config, the file says");
		sa.sa_handler = on_signal;
		sigaction(SIGINT, &sa, NULL);
		sigaction(SIGTERM, &sa, NULL);
		sigaction(SIGHUP, &sa, NULL);
		return run_config(o);
	}
	if (o->once)
		return usage_error("scrape", "--once goes with --config");
	if (argc - optind != 1)
		return usage_error("scrape", "give --config FILE, one URL, or --targets");
	return run_once(o, argv[optind]);
}

static int run_scrape(int argc, char **argv)
{
	struct scrape_opts o = { 0 };
	int status = scrape_main(&o, argc, argv);

	cp_labels_release(&o.labels);
	cp_labels_release(&o.cfg_labels);
	return status;
}

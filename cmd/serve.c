/* SPDX-License-Identifier: MIT */
/* cprof serve: the central server.  Options and start-up only: the store
 * shared by the server's threads is lib/store/shared.h (group commit, read
 * pool, retention), the endpoints lib/http/api.h (docs/API.md), the HTTP
 * server lib/http/server.h, scrape jobs lib/scrape.h. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/decode_limits.h"
#include "../lib/error.h"
#include "../lib/http/api.h"
#include "../lib/http/server.h"
#include "../lib/scrape.h"
#include "../lib/settings.h"
#include "../lib/store/shared.h"
#include "../lib/util.h"
#include "cmd.h"

enum { OPT_LISTEN = 256, OPT_CONFIG, OPT_TLS_CERT, OPT_TLS_KEY, OPT_MAX_BODY, OPT_RETENTION, OPT_MAX_STORE,
       OPT_LOG_LEVEL, OPT_HEADER_TIMEOUT, OPT_MAX_DECOMPRESSED, OPT_DOWNSAMPLE };

static const struct option options[] = {
	{ "listen", required_argument, NULL, OPT_LISTEN },
	{ "data", required_argument, NULL, OPT_DATA },
	{ "config", required_argument, NULL, OPT_CONFIG },
	{ "token-file", required_argument, NULL, OPT_TOKEN_FILE },
	{ "tls-cert", required_argument, NULL, OPT_TLS_CERT },
	{ "tls-key", required_argument, NULL, OPT_TLS_KEY },
	{ "max-body", required_argument, NULL, OPT_MAX_BODY },
	{ "max-decompressed", required_argument, NULL, OPT_MAX_DECOMPRESSED },
	{ "retention", required_argument, NULL, OPT_RETENTION },
	{ "max-store-size", required_argument, NULL, OPT_MAX_STORE },
	{ "downsample", required_argument, NULL, OPT_DOWNSAMPLE },
	{ "log-level", required_argument, NULL, OPT_LOG_LEVEL },
	{ "header-timeout", required_argument, NULL, OPT_HEADER_TIMEOUT },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static int run_serve(int argc, char **argv);

const struct cmd cmd_serve = {
	"serve", "HTTP server: push ingest, query API, web view", run_serve, options, "h",
	"usage: cprof serve [OPTIONS]\n"
	"\n"
	"Serve the store over HTTP: profiles pushed by cprof record --remote,\n"
	"Pyroscope clients (/ingest) and Parca agents (/api/profiles/writeraw);\n"
	"the query API that cprof query|merge|diff --remote read; a web view at /;\n"
	"/metrics and /healthz.  Stops at SIGINT or SIGTERM.\n"
	"\n"
	"      --listen ADDR      HOST:PORT to listen on (default 127.0.0.1:7070;\n"
	"                         0.0.0.0:7070 for every interface, port 0 picks one)\n"
	"      --data DIR         the store (default: $CPROF_DATA, /var/lib/cprof as root,\n"
	"                         else $XDG_DATA_HOME/cprof or ~/.local/share/cprof)\n"
	"      --config FILE      settings from a YAML file (options given here win), and\n"
	"                         scrape_configs (as Parca's) to scrape into the store\n"
	"                         (default: $CPROF_CONFIG, else " CP_SYSCONFDIR "/cprof/cprof.yaml\n"
	"                         if present)\n"
	"      --token-file FILE  require 'Authorization: Bearer TOKEN' on every endpoint\n"
	"      --tls-cert FILE    serve HTTPS with this PEM certificate (and --tls-key)\n"
	"      --tls-key FILE     the PEM private key of --tls-cert\n"
	"      --max-body SIZE    refuse larger request bodies with 413 (default 32M)\n"
	"      --max-decompressed SIZE  refuse with 413 a body that inflates to more,\n"
	"                         or a profile that would take twice SIZE to decode\n"
	"                         (default 4 x --max-body, at least 64M)\n"
	"      --retention DUR    delete stored data older than DUR (e.g. 30d), hourly\n"
	"      --max-store-size SIZE  keep the store under SIZE (e.g. 50G), deleting its\n"
	"                         oldest data, checked every minute\n"
	"      --downsample POLICY  keep older days at coarser steps, merged hourly\n"
	"                         (default " CP_DOWNSAMPLE_DEFAULT "; off: all raw)\n"
	"      --log-level LEVEL  error, warn, info (default) or debug\n"
	"      --header-timeout DUR  close a connection whose request headers are not\n"
	"                         in DUR after it opened (default 15s)\n"
	"  -h, --help             show this help\n",
	.formats = NULL, /* no --format */
};

/* scrape jobs in the server (--config with scrape_configs) */
static void scrape_log(void *ctx, const struct cp_target_state *t)
{
	char line[1280];

	(void)ctx;
	cp_log("serve", CP_LOG_INFO, "scrape %s", cp_target_state_line(t, false, line, sizeof(line)));
}

static void *scrape_main(void *arg)
{
	int err = cp_scraper_run(arg, NULL);

	if (err)
		cp_log("serve", CP_LOG_ERROR, "scraping stopped: %s", cp_errmsg(-err));
	return NULL;
}

/* ---- the command ---- */

static int read_pem(const char *opt, const char *path, char **out)
{
	uint8_t *d = NULL;
	size_t len = 0;
	int err = cp_read_file(path, 1 << 20, &d, &len);

	if (err)
		return fail("serve", "%s: %s", opt, cp_errmsg(-err));
	*out = realloc(d, len + 1);
	if (!*out) {
		free(d);
		return fail("serve", "out of memory");
	}
	(*out)[len] = 0;
	return EXIT_OK;
}

static const char *pick(const char *opt, const char *cfg)
{
	return opt ? opt : cfg;
}

static int run_serve(int argc, char **argv)
{
	const char *listen_o = NULL, *data_o = NULL, *config = NULL, *token_o = NULL, *cert_o = NULL, *key_o = NULL,
		   *maxb_o = NULL, *ret_o = NULL, *maxd_o = NULL, *ht_o = NULL, *ds_o = NULL, *listen, *v;
	struct cp_config cfg = { 0 };
	struct cp_upkeep upkeep = { .verb = "serve" };
	struct cp_server_opts so = { 0 };
	struct cp_shared *store = NULL;
	struct cp_api *api = NULL;
	struct cp_server *http = NULL;
	struct cp_listener lsn = { -1, 0, false };
	struct cp_scraper *scraper = NULL;
	char dir[4096], host[300];
	char *token = NULL, *cert = NULL, *key = NULL;
	uint64_t max_body = 32u << 20, max_dec = 0;
	sigset_t sigs;
	int opt, status = EXIT_OK, err, sig;
	bool scraping = false;
	pthread_t scrape_thread;

	while ((opt = next_option(&cmd_serve, argc, argv)) != -1) {
		switch (opt) {
		case OPT_LISTEN: listen_o = optarg; break;
		case OPT_DATA: data_o = optarg; break;
		case OPT_CONFIG: config = optarg; break;
		case OPT_TOKEN_FILE: token_o = optarg; break;
		case OPT_TLS_CERT: cert_o = optarg; break;
		case OPT_TLS_KEY: key_o = optarg; break;
		case OPT_MAX_BODY: maxb_o = optarg; break;
		case OPT_MAX_DECOMPRESSED: maxd_o = optarg; break;
		case OPT_RETENTION: ret_o = optarg; break;
		case OPT_DOWNSAMPLE: ds_o = optarg; break;
		case OPT_MAX_STORE:
			if ((err = parse_max_store_size("serve", optarg, &upkeep.max_size)) != EXIT_OK)
				return err;
			break;
		case OPT_HEADER_TIMEOUT: ht_o = optarg; break;
		case OPT_LOG_LEVEL:
			if ((err = parse_log_level("serve", optarg)) != EXIT_OK)
				return err;
			break;
		case 'h': return show_usage(&cmd_serve);
		default: return EXIT_USAGE;
		}
	}
	if (optind < argc)
		return usage_error("serve", "unexpected argument '%s'", argv[optind]);
	if (config && (err = cp_config_load(config, &cfg)))
		return usage_error("serve", "--config: %s", cp_errmsg(-err));
	listen = pick(listen_o, cfg.listen) ? pick(listen_o, cfg.listen) : "127.0.0.1:7070";
	if ((err = cp_listen_check(listen))) {
		status = usage_error("serve", "%s", cp_errmsg(-err));
		goto out;
	}
	if ((v = pick(maxb_o, cfg.max_body)) && ((err = cp_parse_size(v, &max_body)) || !max_body)) {
		status = usage_error("serve", "--max-body: %s", err ? cp_errmsg(-err) : "must be more than 0");
		goto out;
	}
	if ((v = pick(maxd_o, cfg.max_decompressed)) && ((err = cp_parse_size(v, &max_dec)) || !max_dec)) {
		status = usage_error("serve", "--max-decompressed: %s", err ? cp_errmsg(-err) : "must be more than 0");
		goto out;
	}
	if (!max_dec) /* 4 x --max-body, at least 64M */
		max_dec = 4 * max_body > 64u << 20 ? 4 * max_body : 64u << 20;
	cp_decode_limits_set(&(struct cp_decode_limits){ .max_decompressed = max_dec, .setting = "--max-decompressed" });
	if ((v = pick(ht_o, cfg.header_timeout))) {
		int64_t ns;

		if ((err = cp_parse_duration(v, &ns)) || ns < 1000000000 || ns > 3600 * 1000000000LL) {
			status = usage_error("serve", "--header-timeout: %s", err ? cp_errmsg(-err) : "want 1s to 1h");
			goto out;
		}
		so.header_timeout = (unsigned)(ns / 1000000000);
	}
	if ((v = pick(ret_o, cfg.retention)) && (err = cp_parse_duration(v, &upkeep.retention))) {
		status = usage_error("serve", "--retention: %s", cp_errmsg(-err));
		goto out;
	}
	if ((status = parse_downsample("serve", pick(ds_o, cfg.downsample), &upkeep.downsample)))
		goto out;
	if (!pick(cert_o, cfg.tls_cert) != !pick(key_o, cfg.tls_key)) {
		status = usage_error("serve", "HTTPS wants both --tls-cert and --tls-key");
		goto out;
	}
	if ((v = pick(token_o, cfg.token_file)) && (status = read_token("serve", v, &token)))
		goto out;
	if ((v = pick(cert_o, cfg.tls_cert)) &&
	    ((status = read_pem("--tls-cert", v, &cert)) || (status = read_pem("--tls-key", pick(key_o, cfg.tls_key), &key))))
		goto out;
	/* the file's data: is serve's own setting, so it wins over $CPROF_DATA (an empty one counts as unset) */
	if ((status = store_dir("serve", pick(data_o, cfg.data && *cfg.data ? cfg.data : NULL), dir, sizeof(dir))))
		goto out;
	/* signals go to sigwait below, not to the server's threads */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);
	/* the port first: a port in use must fail before the store is made */
	if ((err = cp_listener_open(listen, &lsn))) {
		status = fail("serve", "%s", cp_errmsg(err));
		goto out;
	}
	if (!(store = cp_shared_open(dir, &upkeep)) || !(api = cp_api_new(store))) {
		status = fail("serve", "%s", cp_errmsg(errno));
		goto out;
	}
	so.listen = listen;
	so.listener = &lsn;
	so.token = token;
	so.tls_cert_pem = cert;
	so.tls_key_pem = key;
	so.max_body = (size_t)max_body;
	so.routes = cp_api_routes(&so.nroutes);
	so.arg = api;
	if (!(http = cp_server_start(&so))) {
		status = fail("serve", "%s", cp_errmsg(errno));
		goto out;
	}
	cp_api_set_server(api, http);
	if (cfg.scrape.njobs) {
		if (!(scraper = cp_scraper_new(&cfg.scrape, cp_api_scrape_sink, api)) ||
		    (errno = -cp_scraper_set_state_dir(scraper, dir))) {
			status = fail("serve", "%s", cp_errmsg(errno));
			goto out;
		}
		cp_scraper_set_log(scraper, scrape_log, NULL);
		cp_api_set_scraper(api, scraper);
		if ((err = pthread_create(&scrape_thread, NULL, scrape_main, scraper))) {
			status = fail("serve", "cannot start scraping: %s", strerror(err));
			goto out;
		}
		scraping = true;
	}
	snprintf(host, sizeof(host), "%.*s", (int)(strrchr(listen, ':') - listen), listen);
	printf("listening on %s://%s:%d\n", cert ? "https" : "http", *host ? host : "0.0.0.0", cp_server_port(http));
	fflush(stdout);
	cp_log("serve", CP_LOG_INFO, "store %s%s%s", dir, token ? ", token required" : "", scraping ? ", scraping" : "");
	sigwait(&sigs, &sig);
	cp_log("serve", CP_LOG_INFO, "stopping (%s)", strsignal(sig));
out:
	if (scraping) { /* first: it feeds the writer */
		cp_scraper_stop(scraper);
		pthread_join(scrape_thread, NULL);
	}
	cp_server_stop(http); /* waits for the requests in flight */
	cp_api_free(api);     /* after the handlers: it logs the rejected pushes left */
	cp_scraper_free(scraper);
	cp_shared_close(store);
	cp_listener_close(&lsn);
	free(token);
	free(cert);
	free(key);
	cp_config_release(&cfg);
	return status;
}

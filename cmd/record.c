/* SPDX-License-Identifier: MIT */
/* cprof record: sample the CPU with eBPF (the whole system, processes, a
 * cgroup or a command), unwind and symbolize the stacks, and write profiles
 * to the store, a pprof file or folded stacks. */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../lib/error.h"
#include "../lib/render/render.h"
#include "../lib/labels.h"
#include "../lib/sampling/launch.h"
#include "../lib/sampling/recorder.h"
#include "../lib/sampling/recording.h"
#include "../lib/selector.h"
#include "../lib/settings.h"
#include "../lib/util.h"
#include "cmd.h"

enum { OPT_FLUSH = 300, OPT_LABEL, OPT_RETENTION, OPT_SPOOL, OPT_SPOOL_SIZE, OPT_CONFIG, OPT_PRINT_CONFIG,
       OPT_LOG_LEVEL, OPT_MAX_STORE, OPT_OFFCPU_MIN, OPT_OFFCPU_PERIOD, OPT_DOWNSAMPLE };

static const struct option options[] = {
	SAMPLING_OPTIONS,
	{ "duration", required_argument, NULL, 'd' },
	{ "flush-interval", required_argument, NULL, OPT_FLUSH },
	{ "output", required_argument, NULL, 'o' },
	{ "format", required_argument, NULL, 'f' },
	{ "data", required_argument, NULL, OPT_DATA },
	{ "label", required_argument, NULL, OPT_LABEL },
	{ "retention", required_argument, NULL, OPT_RETENTION },
	REMOTE_OPTIONS,
	PUSH_OPTIONS,
	{ "spool", required_argument, NULL, OPT_SPOOL },
	{ "spool-size", required_argument, NULL, OPT_SPOOL_SIZE },
	{ "off-cpu-min", required_argument, NULL, OPT_OFFCPU_MIN },
	{ "off-cpu-period", required_argument, NULL, OPT_OFFCPU_PERIOD },
	{ "max-store-size", required_argument, NULL, OPT_MAX_STORE },
	{ "downsample", required_argument, NULL, OPT_DOWNSAMPLE },
	{ "log-level", required_argument, NULL, OPT_LOG_LEVEL },
	{ "quiet", no_argument, NULL, 'q' },
	{ "config", required_argument, NULL, OPT_CONFIG },
	{ "print-config", no_argument, NULL, OPT_PRINT_CONFIG },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static int run_record(int argc, char **argv);

/* -o FILE's formats */
static const char *const record_formats[] = { "pprof", "folded", NULL };

const struct cmd cmd_record = {
	"record", "sample the CPU with eBPF: whole system, a process, or a command", run_record, options,
	"+ap:F:d:o:f:l:qh",
	"usage: cprof record [OPTIONS] (--all | -p PID[,PID...] | --cgroup PATH | -- CMD [ARGS...])\n"
	"\n"
	"Sample on-CPU stacks (kernel and user, unwound with DWARF CFI, so complete\n"
	"also for code built without frame pointers) at F Hz on every CPU, and\n"
	"write profiles of type process_cpu:cpu:nanoseconds:cpu:nanoseconds:delta\n"
	"to the store (a series per program: comm, exe, node, container, unit, pod;\n"
	"pid and thread_id label its samples), to a file, or to a cprof server\n"
	"(--remote).  Needs root, or CAP_BPF and CAP_PERFMON.\n"
	"\n"
	"  -a, --all               the whole system (idle left out)\n"
	"  -p, --pid PID[,PID]     these processes (all their threads)\n"
	"      --cgroup PATH       tasks in this cgroup v2 directory and below\n"
	"  -- CMD [ARGS]           run CMD, profile it and its children, stop when it exits\n"
	"  -F, --freq HZ           samples per second per CPU (default 19)\n"
	"  -d, --duration DUR      stop after DUR (e.g. 30s, 5m); default: at SIGINT/SIGTERM\n"
	"      --flush-interval DUR  write to the store every DUR (default 10s)\n"
	"  -o, --output FILE       write one pprof (or -f folded) file at the end\n"
	"  -f, --format FMT        {FORMATS} (folded goes to stdout without -o)\n"
	"      --data DIR          the store (default: $CPROF_DATA, /var/lib/cprof as root)\n"
	"  -l, --label K=V         an extra series label (repeatable)\n"
	"      --retention DUR     delete stored data older than DUR as it goes\n"
	"      --remote URL        push each interval to a cprof server, http(s)://HOST:PORT\n"
	"                          (default: $CPROF_REMOTE), instead of the local store\n"
	"      --token-file FILE   the server's token (default: $CPROF_TOKEN_FILE)\n"
	"      --remote-api API    cprof (default); pyroscope: push to Pyroscope's /ingest;\n"
	"                          otlp: push OTLP profiles to /v1development/profiles\n"
	"      --service-label L   pyroscope, otlp: the label naming the service (default comm)\n"
	"      --tenant ID         pyroscope, otlp: the tenant (X-Scope-OrgID header)\n"
	"      --basic-auth-user USER  send --token-file's secret as USER's password\n"
	"                          (HTTP basic auth) instead of as a bearer token\n"
	"      --spool DIR         keep what the server cannot take here and send it\n"
	"                          later (default: the store's directory + /spool)\n"
	"      --spool-size SIZE   the spool's bound, e.g. 64M, 1G; beyond it the\n"
	"                          oldest is dropped (default 256M)\n"
	"      --idle              keep samples of the idle task (swapper)\n"
	"      --no-kernel         leave kernel frames out\n"
	"      --no-runtimes       name no Python, JavaScript, Java or Ruby frame\n"
	"                          from the process's memory (JIT code: perf maps only)\n"
	"      --off-cpu           also where threads wait off the CPU (type offcpu, state\n"
	"                          S sleep, D disk/uninterruptible, R waiting for a CPU)\n"
	"      --off-cpu-min DUR   leave out waits shorter than DUR (default 0s)\n"
	"      --off-cpu-period DUR  sample shorter waits in proportion (default 1/-F: 52ms)\n"
	"      --debuginfo-path P  where separate debug files are looked for\n"
	"                          (default: libdw's, /usr/lib/debug/.build-id)\n"
	"      --debuginfod URLS   fetch missing debug files from these debuginfod servers\n"
	"                          (default: $DEBUGINFOD_URLS); --no-debuginfod: none\n"
	"      --max-store-size SIZE  keep the store under SIZE (e.g. 10G), deleting\n"
	"                          its oldest data as it goes\n"
	"      --downsample POLICY older days at coarser steps (" CP_DOWNSAMPLE_DEFAULT "; off)\n"
	"      --max-memory SIZE   keep cprof's resident memory under SIZE by evicting\n"
	"                          cached binaries and symbols (default 64M)\n"
	"      --log-level LEVEL   error, warn, info (default) or debug\n"
	"  -q, --quiet             only warnings and errors on stderr (--log-level warn)\n"
	"      --config FILE       settings from FILE (default: $CPROF_CONFIG, else\n"
	"                          " CP_SYSCONFDIR "/cprof/cprof.yaml if present); options win\n"
	"      --print-config      print the settings in effect (file and options) as\n"
	"                          YAML, and exit\n"
	"  -h, --help              show this help\n",
	.formats = record_formats,
};

struct rec {
	/* options */
	struct sampling_args s; /* what to sample and how (shared with top) */
	bool print_config;
	int64_t offcpu_min, offcpu_period;
	const char *output, *format, *data;
	const char *remote, *token_file, *spool; /* --remote: push to a server */
	struct push_args push;
	size_t spool_size;
	int64_t duration, flush, retention;
	const char *downsample;      /* --downsample (NULL: the default), parsed into policy */
	struct cp_downsample policy;
	uint64_t max_store_size;
	struct cp_labels labels, cfg_labels; /* -l: the options', the file's */
	unsigned cfg_store;         /* store settings the file gave (CFG_*) */
	/* state */
	struct cp_recorder *rec;
	struct cp_store *store;
	struct cp_recording g; /* into the store */
	char node[256];
	int64_t wall_offset; /* realtime - monotonic */
};

enum { CFG_FLUSH = 1, CFG_RETENTION = 2, CFG_SPOOL = 4, CFG_SPOOL_SIZE = 8, CFG_MAX_STORE = 16, CFG_DOWNSAMPLE = 32 };

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
	stop_signal = sig;
}

/* ---- options ---- */

/* a store setting from the configuration file, or from the command line */
static void cfg_mark(struct rec *r, unsigned bit)
{
	if (from_config())
		r->cfg_store |= bit;
	else
		r->cfg_store &= ~bit;
}

static int parse_options(struct rec *r, int argc, char **argv)
{
	int opt, err;

	while ((opt = next_option(&cmd_record, argc, argv)) != -1) {
		if (sampling_option("record", &r->s, opt, optarg, &err)) {
			if (err)
				return err;
			continue;
		}
		switch (opt) {
		case OPT_CONFIG: break; /* read before the options (cmd/util_config.c) */
		case OPT_PRINT_CONFIG: r->print_config = true; break;
		case OPT_LOG_LEVEL:
			if ((err = parse_log_level("record", optarg)) != EXIT_OK)
				return err;
			break;
		case OPT_MAX_STORE:
			if ((err = parse_max_store_size("record", optarg, &r->max_store_size)))
				return err;
			cfg_mark(r, CFG_MAX_STORE);
			break;
		case 'd':
			if (optarg[0] && strspn(optarg, "0123456789") == strlen(optarg) && strlen(optarg) < 10)
				r->duration = atoll(optarg) * 1000000000LL; /* plain seconds, as timeout(1) takes */
			else if ((err = cp_parse_duration(optarg, &r->duration)))
				r->duration = 0;
			if (r->duration <= 0)
				return usage_error("record", "bad --duration '%s': want e.g. 30s or 5m", optarg);
			break;
		case OPT_FLUSH:
			if ((err = cp_parse_duration(optarg, &r->flush)) || r->flush < 100000000)
				return usage_error("record", "bad --flush-interval '%s': want 100ms or more, e.g. 10s",
						   optarg);
			cfg_mark(r, CFG_FLUSH);
			break;
		case OPT_DOWNSAMPLE: r->downsample = optarg; cfg_mark(r, CFG_DOWNSAMPLE); break;
		case OPT_RETENTION:
			if ((err = cp_parse_duration(optarg, &r->retention)) || r->retention <= 0)
				return usage_error("record", "bad --retention '%s': want e.g. 15d", optarg);
			cfg_mark(r, CFG_RETENTION);
			break;
		case 'o': r->output = optarg; break;
		case 'f': r->format = optarg; break;
		case OPT_DATA: r->data = optarg; break;
		case OPT_REMOTE: r->remote = optarg; break;
		case OPT_TOKEN_FILE: r->token_file = optarg; break;
		case OPT_SPOOL:
			r->spool = optarg;
			cfg_mark(r, CFG_SPOOL);
			break;
		case OPT_SPOOL_SIZE: {
			uint64_t v = 0;

			if ((err = parse_size_option("record", "--spool-size", "want a size such as 64M or 1G", optarg,
						     SIZE_MAX, &v)))
				return err;
			r->spool_size = (size_t)v;
			cfg_mark(r, CFG_SPOOL_SIZE);
			break;
		}
		case 'l':
		case OPT_LABEL:
			if ((err = cp_label_arg(from_config() ? &r->cfg_labels : &r->labels, optarg)))
				return err == -ENOMEM ? fail("record", "out of memory") :
							usage_error("record", "%s", cp_errmsg(err));
			break;
		case OPT_OFFCPU_MIN:
		case OPT_OFFCPU_PERIOD:
			if ((err = parse_offcpu_duration("record", opt == OPT_OFFCPU_PERIOD, optarg,
							 opt == OPT_OFFCPU_PERIOD ? &r->offcpu_period : &r->offcpu_min)))
				return err;
			break;
		case 'q': cp_log_level = CP_LOG_WARN; break;
		case 'h': return show_usage(&cmd_record) == EXIT_OK ? -1 : EXIT_FAIL;
		default:
			if (!push_option(&r->push, opt, optarg))
				return EXIT_USAGE;
		}
	}
	if ((err = sampling_finish("record", &r->s, optind < argc ? argv + optind : NULL)))
		return err;
	if (r->output || r->format) {
		/* a file: the configuration's store settings do not apply */
		if (r->cfg_store & CFG_FLUSH)
			r->flush = 0;
		if (r->cfg_store & CFG_RETENTION)
			r->retention = 0;
		if (r->cfg_store & CFG_SPOOL)
			r->spool = NULL;
		if (r->cfg_store & CFG_SPOOL_SIZE)
			r->spool_size = 0;
		if (r->cfg_store & CFG_MAX_STORE)
			r->max_store_size = 0;
		cp_labels_release(&r->cfg_labels);
	} else if ((err = cp_labels_take_defaults(&r->labels, &r->cfg_labels))) {
		return err == -ENOMEM ? fail("record", "out of memory") : usage_error("record", "%s", cp_errmsg(err));
	}
	if (!r->s.all && !r->s.npids && !r->s.cmd && !r->s.cgroup && !r->print_config)
		return usage_error("record", "say what to record: --all, -p PID, --cgroup PATH or -- CMD");
	if (r->format && (err = cmd_format_check(&cmd_record, r->format)))
		return err;
	if ((r->output || r->format) && r->data)
		return usage_error("record", "--data is for the store; with -o/-f the profile goes to a file or stdout");
	if (r->format && !r->output && !strcmp(r->format, "pprof"))
		return usage_error("record", "-f pprof needs -o FILE (pprof is binary)");
	if ((r->output || r->format) && (r->flush || r->retention))
		return usage_error("record", "--flush-interval and --retention are for the store, not -o/-f");
	if (r->labels.n && (r->output || r->format))
		return usage_error("record", "--label is for the store's series; not with -o/-f");
	if (r->remote && (r->output || r->format))
		return usage_error("record", "--remote pushes to a server; with -o/-f the profile goes to a file or stdout");
	if ((err = remote_args("record", r->data, r->output || r->format, &r->remote, &r->token_file)) ||
	    (err = push_check("record", r->remote, &r->push)))
		return err;
	if (r->remote) { /* the file's store settings are for a local store */
		if (r->cfg_store & CFG_RETENTION)
			r->retention = 0;
		if (r->cfg_store & CFG_MAX_STORE)
			r->max_store_size = 0;
	} else { /* and its spool for a server */
		if (r->cfg_store & CFG_SPOOL)
			r->spool = NULL;
		if (r->cfg_store & CFG_SPOOL_SIZE)
			r->spool_size = 0;
	}
	if (r->remote && r->retention)
		return usage_error("record", "--retention is for the local store: a server applies its own "
					     "(cprof serve --retention)");
	if ((err = downsample_option("record", r->downsample, r->cfg_store & CFG_DOWNSAMPLE, r->remote, r->output || r->format, &r->policy)))
		return err;
	if (r->remote && r->max_store_size)
		return usage_error("record", "--max-store-size is for the local store: a server applies its own "
					     "(cprof serve --max-store-size)");
	if ((r->output || r->format) && r->max_store_size)
		return usage_error("record", "--max-store-size is for the store, not -o/-f");
	if (!r->remote && (r->spool || r->spool_size))
		return usage_error("record", "--spool and --spool-size go with --remote URL");
	for (size_t i = 0; r->remote && i < r->labels.n; i++)
		if (!strcmp(r->labels.kv[i].name, "name") || !strcmp(r->labels.kv[i].name, "time"))
			return usage_error("record", "label '%s': with --remote, 'name' and 'time' are the push API's, "
						     "not labels", r->labels.kv[i].name);
	if ((err = check_pids_exist("record", r->s.pids, r->s.npids)) != EXIT_OK)
		return err;
	return EXIT_OK;
}

/* ---- --print-config ---- */

/* The settings in effect, as the record: section of a configuration file. */
static int print_config(const struct rec *r)
{
	char b[64];
	int64_t p = r->offcpu_period ? r->offcpu_period : (int64_t)cp_recorder_offcpu_period(r->s.freq); /* 0: 1/freq */
	FILE *f = stdout;

	fprintf(f, "# cprof record: the settings in effect (the configuration file: %s; then the options)\n",
		config_file ? config_file : "none");
	fprintf(f, "record:\n");
	if (r->s.cmd) {
		fprintf(f, "  # the command:");
		for (char **a = r->s.cmd; *a; a++)
			fprintf(f, " %s", *a);
		fputc('\n', f);
	}
	fprintf(f, "  all: %s\n", r->s.all ? "true" : "false");
	fprintf(f, "  pid: [");
	for (size_t i = 0; i < r->s.npids; i++)
		fprintf(f, "%s%u", i ? ", " : "", r->s.pids[i]);
	fprintf(f, "]\n  cgroup: ");
	cp_yaml_str(f, r->s.cgroup);
	fprintf(f, "\n  freq: %d\n", r->s.freq);
	fprintf(f, "  duration: %s\n", r->duration ? cp_duration_text(r->duration, b, sizeof(b)) : "null");
	if (r->output || r->format) {
		fprintf(f, "  output: ");
		cp_yaml_str(f, r->output);
		fprintf(f, "\n  format: %s\n", r->format ? r->format : "pprof");
	} else {
		fprintf(f, "  data: ");
		cp_yaml_str(f, r->remote ? NULL : r->data);
		print_remote_config(f, r->remote, r->token_file, &r->push, r->spool, r->spool_size, r->data);
		fprintf(f, "  flush-interval: %s\n", cp_duration_text(r->flush, b, sizeof(b)));
		print_store_settings(f, r->retention, r->max_store_size, r->remote ? NULL : &r->policy);
		fprintf(f, "  label: {");
		for (size_t i = 0; i < r->labels.n; i++) {
			fprintf(f, "%s%s: ", i ? ", " : "", r->labels.kv[i].name);
			cp_yaml_str(f, r->labels.kv[i].value);
		}
		fprintf(f, "}\n");
	}
	fprintf(f, "  idle: %s\n  no-kernel: %s\n", r->s.idle ? "true" : "false", r->s.no_kernel ? "true" : "false");
	fprintf(f, "  off-cpu: %s\n  off-cpu-min: %s\n", r->s.offcpu ? "true" : "false",
		r->offcpu_min ? cp_duration_text(r->offcpu_min, b, sizeof(b)) : "0s");
	fprintf(f, "  off-cpu-period: %s\n", cp_duration_text(p, b, sizeof(b)));
	fprintf(f, "  debuginfo-path: ");
	cp_yaml_str(f, r->s.debuginfo);
	fprintf(f, "\n  max-memory: %s", cp_size_text(r->s.max_memory, b, sizeof(b)));
	fprintf(f, "\n  log-level: %s\n", cp_log_level_name(cp_log_level));
	return flush_stdout("record");
}

/* ---- the command ---- */

static int run_record(int argc, char **argv)
{
	struct rec r;
	struct cp_recorder_opts ro;
	struct cp_profile *file_prof = NULL;
	struct sigaction sa;
	char dir[4096], spool[4200];
	int status = EXIT_OK, err;
	struct cp_launch child;
	int64_t t0, t1 = 0, deadline = 0, next_flush = 0, next_prune = 0;
	struct timespec rt;

	memset(&r, 0, sizeof(r));
	cp_launch_init(&child);
	sampling_init(&r.s, 19, CP_RECORD_MAX_MEMORY);
	status = parse_options(&r, argc, argv);
	if (status != EXIT_OK) {
		sampling_release(&r.s);
		cp_labels_release(&r.labels);
		cp_labels_release(&r.cfg_labels);
		return status < 0 ? EXIT_OK : status;
	}
	if (gethostname(r.node, sizeof(r.node) - 1) != 0)
		snprintf(r.node, sizeof(r.node), "localhost");
	if (r.output && (err = cp_check_creatable(r.output))) { /* fail now, not after a long recording */
		status = fail("record", "%s", cp_errmsg(err));
		goto out;
	}
	if (!r.output && !r.format) {
		if ((status = store_dir("record", r.data, dir, sizeof(dir))))
			goto out;
		r.data = dir;
		if (!r.flush)
			r.flush = 10000000000LL;
	}
	if (r.print_config) {
		status = print_config(&r);
		goto out;
	}
	if (r.remote) {
		bool away;

		if (!r.spool) {
			snprintf(spool, sizeof(spool), "%s/spool", r.data);
			r.spool = spool;
		}
		if (!r.spool_size)
			r.spool_size = (size_t)256 << 20;
		r.data = r.remote; /* where the profiles go, in messages */
		/* a wrong token or URL fails now, not at the first flush; a
		 * server that is down only delays the pushes */
		if (!(r.store = store_open_write("record", NULL, r.remote, r.token_file, &r.push, r.spool, r.spool_size, &away))) {
			status = EXIT_FAIL;
			goto out;
		}
		if (away)
			cp_log("record", CP_LOG_WARN, "%s; recording anyway: the profiles wait in %s until it answers",
				cp_error_code() ? cp_errmsg(cp_error_code()) : "the server does not answer", r.spool);
	}

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);

	sampling_recorder_opts("record", &r.s, &ro);
	ro.offcpu_min_ns = (uint64_t)r.offcpu_min;
	ro.offcpu_period_ns = (uint64_t)r.offcpu_period;
	ro.for_store = !r.output && !r.format;
	ro.with_time = true;
	if (!(r.rec = cp_recorder_start(&ro, r.s.cmd, &child))) { /* -- CMD: held until the store is ready */
		status = fail("record", "%s", cp_errmsg(errno));
		goto out;
	}
	/* the store after the sampler: a run that cannot sample creates nothing */
	if (!r.remote && ro.for_store && !(r.store = store_open_write("record", r.data, NULL, NULL, NULL, NULL, 0, NULL))) {
		status = EXIT_FAIL;
		goto out;
	}
	r.g = (struct cp_recording){ .rec = r.rec, .store = r.store, .verb = "record", .node = r.node,
				     .labels = r.labels.kv, .nlabels = r.labels.n, .retention = r.retention,
				     .max_store_size = r.max_store_size, .max_memory = r.s.max_memory, .downsample = r.policy, .spool = r.spool, .spool_size = r.spool_size };
	if (r.store && (err = cp_recording_start(&r.g))) {
		status = fail("record", "%s", cp_errmsg(err));
		goto out;
	}
	clock_gettime(CLOCK_REALTIME, &rt);
	t0 = cp_mono_ns();
	r.wall_offset = (int64_t)rt.tv_sec * 1000000000 + rt.tv_nsec - t0;
	r.g.interval_start = t0 + r.wall_offset;
	if (r.duration)
		deadline = t0 + r.duration;
	if (r.flush)
		next_flush = t0 + r.flush;
	if (r.s.cmd && (err = cp_launch_release(&child))) {
		status = fail("record", "%s", cp_errmsg(err));
		goto out;
	}
	cp_log("record", CP_LOG_INFO, "sampling %s at %d Hz%s",
	       r.s.cmd ? r.s.cmd[0] : r.s.npids ? "the given processes" : r.s.all ? "the whole system" : r.s.cgroup,
			r.s.freq, r.duration || r.s.cmd ? "" : "; Ctrl-C to stop");

	for (;;) {
		int64_t now = cp_mono_ns();

		err = cp_recorder_poll(r.rec, cp_recording_wait_ms(now, deadline, next_flush, r.s.cmd || r.s.npids));
		if (err < 0 && err != -EINTR) {
			status = fail("record", "%s", cp_errmsg(err));
			break;
		}
		now = cp_mono_ns();
		if (stop_signal || cp_launch_poll(&child) || (deadline && now >= deadline))
			break;
		if (r.s.npids && !pids_alive(r.s.pids, r.s.npids))
			break; /* as perf record -p: the processes are gone */
		if (!next_flush && now >= next_prune) {
			cp_recorder_prune(r.rec); /* file output: no flushes, but exited processes go */
			next_prune = now + 10000000000LL;
		}
		if (next_flush && now >= next_flush) {
			if ((err = cp_recording_flush(&r.g, now + r.wall_offset))) {
				status = fail("record", "writing to %s: %s", r.data, cp_errmsg(err));
				break;
			}
			next_flush = now + r.flush;
		}
	}
	/* what is still in flight */
	if (status == EXIT_OK) {
		/* stop sampling, then take everything still in the ring */
		if ((err = cp_recorder_finish(r.rec)))
			status = fail("record", "%s", cp_errmsg(err));
	}
	if (status == EXIT_OK) {
		int64_t now = t1 = cp_mono_ns(); /* the end of sampling (debug files may still land) */

		if (r.store) {
			if ((err = cp_recording_flush(&r.g, now + r.wall_offset)))
				status = fail("record", "writing to %s: %s", r.data, cp_errmsg(err));
			else if ((err = cp_recording_end(&r.g)))
				status = fail("record", "%s", cp_errmsg(err));
		} else {
			const char *fmt = r.format ? r.format : "pprof";
			const struct cp_render_format *rf = cp_render_format_find(fmt, CP_RENDER_PROFILE);
			struct cp_render_opts ro = { .output = r.output };
			struct output o;

			if (!(file_prof = cp_recorder_take(r.rec))) {
				status = fail("record", "out of memory");
				goto out;
			}
			file_prof->time_nanos = t0 + r.wall_offset;
			file_prof->duration_nanos = now - t0;
			status = output_open(&o, "record", r.output, rf && rf->binary);
			if (status == EXIT_OK) {
				err = cp_render_profile(o.f, fmt, file_prof, 0, &ro);
				if (err)
					cp_log("record", CP_LOG_ERROR, "%s", cp_errmsg(err));
				status = output_close(&o, err ? EXIT_FAIL : EXIT_OK);
			}
		}
	}
	if (status == EXIT_OK)
		cp_recording_log_summary(&r.g, (t1 ? t1 : cp_mono_ns()) - t0, r.remote, r.store ? r.data : NULL, r.output);
	if (child.exited && WIFEXITED(child.status) && WEXITSTATUS(child.status))
		cp_log("record", CP_LOG_INFO, "%s exited with status %d", r.s.cmd[0], WEXITSTATUS(child.status));
out:
	cp_launch_end(&child); /* stops it when the recording ended first */
	cp_recorder_free(r.rec);
	cp_profile_free(file_prof);
	cp_store_close(r.store);
	sampling_release(&r.s);
	cp_labels_release(&r.labels);
	cp_labels_release(&r.cfg_labels);
	return status;
}

/* SPDX-License-Identifier: MIT */
/* What the subcommands share: the command table, error printing with exit
 * codes, loading inputs and writing outputs. */
#ifndef CPROF_CMD_H
#define CPROF_CMD_H

#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "../lib/log.h"
#include "../lib/profile.h"
#include "../lib/store/store.h"
#include "../lib/store/upkeep.h"

enum { EXIT_OK = 0, EXIT_FAIL = 1, EXIT_USAGE = 2 };

struct cmd {
	const char *name;
	const char *summary;
	int (*run)(int argc, char **argv);
	const struct option *options;
	const char *shortopts;
	const char *usage; /* "{FORMATS}" in it: the names of its formats (cmd_formats) */
	/* the values of its --format: the formats of lib/render's table of this kind (CP_RENDER_PROFILE
	 * or CP_RENDER_DIFF), or its own list (NULL-terminated); neither: no --format */
	unsigned render_kind;
	const char *const *formats;
};

/* NULL-terminated, in the order help lists them */
extern const struct cmd *const commands[];
const struct cmd *find_cmd(const char *name);
extern const struct cmd cmd_query, cmd_merge, cmd_diff, cmd_import, cmd_record, cmd_serve, cmd_scrape, cmd_top,
	cmd_sql;

/* "cprof VERB: message" on stderr; return EXIT_FAIL. */
int fail(const char *verb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* the same plus a hint to -h; return EXIT_USAGE. */
int usage_error(const char *verb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* print a command's usage to stdout (for -h); returns EXIT_OK unless stdout fails */
int show_usage(const struct cmd *c);
/* Flush standard output: EXIT_OK, or EXIT_FAIL after printing the write error
 * (with the code the write returned, e.g. "No space left on device"). */
int flush_stdout(const char *verb);
/* getopt_long over a command's table; handles -h and unknown options.
 * Returns the option, -1 at the end, or 'h'/'?' handled as documented: on '?'
 * the caller returns EXIT_USAGE; on 'h' EXIT_OK. */
int next_option(const struct cmd *c, int argc, char **argv);

int parse_count(const char *verb, const char *opt, const char *s, int *out);
/* The names of c's formats, "a, b or c", into buf (cut to its size). */
const char *cmd_format_names(const struct cmd *c, char *buf, size_t size);
/* Is format one of c's?  EXIT_OK, or EXIT_USAGE after naming them. */
int cmd_format_check(const struct cmd *c, const char *format);
/* Is it a binary format of c's table (never written to a terminal)? */
bool cmd_format_binary(const struct cmd *c, const char *format);

/* Load and merge several inputs (pprof or folded); NULL after printing the error. */
struct cp_profile *load_inputs(const char *verb, char **paths, int n);
/* The value index for --sample-type (NULL: default); -1 after printing. */
int pick_sample_type(const char *verb, const struct cp_profile *p, const char *name);
/* Compile --focus/--ignore (either may be NULL): EXIT_OK with *f set (NULL
 * when neither is given), or EXIT_USAGE after printing. */
int make_filter(const char *verb, const char *focus, const char *ignore, struct cp_filter **f);

/* Output: standard output, or -o FILE written atomically at the end. */
struct output {
	const char *verb;
	const char *path; /* NULL = stdout */
	FILE *f;
	char *buf;
	size_t len;
};
int output_open(struct output *o, const char *verb, const char *path, bool binary);
/* Finish: checks for write errors and renames into place. Returns an exit code. */
int output_close(struct output *o, int status);

/* The store: --data DIR (or a server: --remote URL) and a time range,
 * shared by the commands that read it. */
enum { OPT_DATA = 1000, OPT_SINCE, OPT_FROM, OPT_TO, OPT_REMOTE, OPT_TOKEN_FILE };
#define STORE_OPTIONS                                          \
	{ "data", required_argument, NULL, OPT_DATA },         \
	{ "since", required_argument, NULL, OPT_SINCE },       \
	{ "from", required_argument, NULL, OPT_FROM },         \
	{ "to", required_argument, NULL, OPT_TO },             \
	REMOTE_OPTIONS
#define REMOTE_OPTIONS                                         \
	{ "remote", required_argument, NULL, OPT_REMOTE },     \
	{ "token-file", required_argument, NULL, OPT_TOKEN_FILE }
#define STORE_USAGE                                                                              \
	"      --data DIR        the store (default: $CPROF_DATA, /var/lib/cprof as root,\n"      \
	"                        else $XDG_DATA_HOME/cprof or ~/.local/share/cprof)\n"            \
	"      --since DURATION  stored data of the last DURATION (default 1h)\n"                \
	"      --from TIME       from TIME: RFC 3339, unix seconds, or now-30m\n"                 \
	"      --to TIME         until TIME, excluded (default: now)\n"                           \
	REMOTE_USAGE
#define REMOTE_USAGE                                                                             \
	"      --remote URL      the store of a cprof server, http(s)://HOST:PORT, instead\n"     \
	"                        of the local one (default: $CPROF_REMOTE)\n"                      \
	"      --token-file FILE the server's token (default: $CPROF_TOKEN_FILE)\n"

/* How record, scrape and import push to a server (--remote): cprof's API
 * or Pyroscope's /ingest (lib/store/remote.h, cp_store_remote_set_push). */
enum { OPT_REMOTE_API = 1100, OPT_TENANT, OPT_BASIC_USER, OPT_SERVICE_LABEL };
#define PUSH_OPTIONS                                                   \
	{ "remote-api", required_argument, NULL, OPT_REMOTE_API },     \
	{ "tenant", required_argument, NULL, OPT_TENANT },             \
	{ "basic-auth-user", required_argument, NULL, OPT_BASIC_USER }, \
	{ "service-label", required_argument, NULL, OPT_SERVICE_LABEL }
#define PUSH_USAGE                                                                                 \
	"      --remote-api API  cprof (default); pyroscope: push to Pyroscope's /ingest;\n"        \
	"                        otlp: push OTLP profiles to /v1development/profiles\n"        \
	"      --service-label L pyroscope, otlp: the label naming the service (default comm)\n"  \
	"      --tenant ID       pyroscope, otlp: the tenant (X-Scope-OrgID header)\n"               \
	"      --basic-auth-user USER  send --token-file's secret as USER's password\n"             \
	"                        (HTTP basic auth) instead of as a bearer token\n"
struct push_args {
	const char *api, *tenant, *basic_user, *service_label;
	bool given; /* one of them on the command line (not only in the configuration file) */
};
/* Takes OPT_REMOTE_API..OPT_SERVICE_LABEL; true when opt was one of them. */
bool push_option(struct push_args *a, int opt, const char *arg);
/* Checks them against --remote (url, NULL: none; then the configuration
 * file's are dropped, the command line's are an error): EXIT_OK or a usage
 * error (printed). */
int push_check(const char *verb, const char *url, struct push_args *a);
/* The server settings in effect, for --print-config: remote, token-file,
 * push's, and (with a remote) spool and spool-size, the spool's default in
 * data/spool. */
void print_remote_config(FILE *f, const char *remote, const char *token_file, const struct push_args *push,
			 const char *spool, size_t spool_size, const char *data);

struct store_args {
	const char *data, *since, *from, *to, *remote, *token_file;
	struct cp_store *store; /* opened on first use */
	int64_t t_from, t_to;
	char dir[4096]; /* the local store's directory (store_range) */
};
/* The directory of the local store, chosen the same way by every command
 * that opens one: --data DIR (data); else $CPROF_DATA, set and not empty;
 * else the configuration file's data: (the command's section over the top
 * level; config_apply makes it $CPROF_DATA where the environment has none);
 * else /var/lib/cprof as root, $XDG_DATA_HOME/cprof or ~/.local/share/cprof
 * (cp_store_default_dir).  cprof serve passes the file's data: as data, as
 * it reads the file itself (its documented exception: the file wins over
 * $CPROF_DATA).  Writes the directory into buf: EXIT_OK, or a usage error
 * (printed) for an empty or too long --data. */
int store_dir(const char *verb, const char *data, char *buf, size_t len);
/* Takes OPT_DATA..OPT_TOKEN_FILE; returns true when opt was one of them. */
bool store_option(struct store_args *a, int opt, const char *arg);
/* Checks the range and --remote options (taking $CPROF_REMOTE and
 * $CPROF_TOKEN_FILE as defaults): EXIT_OK or a usage error (printed). */
int store_range(const char *verb, struct store_args *a);
/* --remote and --token-file (given, else from the environment unless
 * --data or no_env): *url NULL for the local store.  EXIT_OK or a usage
 * error (printed). */
int remote_args(const char *verb, const char *data, bool no_env, const char **url, const char **token_file);
/* The token of a --token-file (NULL: none): EXIT_OK with *token malloc'ed
 * (or NULL), or EXIT_FAIL after printing. */
int read_token(const char *verb, const char *token_file, char **token);
/* Opens the store to write to, as record, scrape and import do: the local
 * one in dir (remote NULL), or a server's (--remote URL, its token read
 * from token_file).  For a server, spool is where pushes wait while it is
 * away (at most spool_size bytes; NULL: none, a push that cannot be
 * delivered fails), and with a spool the server is asked now (GET /healthz)
 * so that a wrong URL or token fails at once: *away (may be NULL) tells
 * that it did not answer yet, which only delays the pushes.  push (may be
 * NULL: cprof's API) says how to push.  NULL after
 * printing the error. */
struct cp_store *store_open_write(const char *verb, const char *dir, const char *remote, const char *token_file,
				  const struct push_args *push, const char *spool, size_t spool_size, bool *away);
/* Opens the store for reading (once), the local one or a server's; NULL
 * after printing the error. */
struct cp_store *store_get(const char *verb, struct store_args *a);
void store_args_release(struct store_args *a);
/* A FILE (pprof or folded) or a stored SELECTOR over the range, merged into
 * one profile; NULL after printing, with *status the exit code. */
struct cp_profile *load_selection(const char *verb, const char *arg, struct store_args *a, int64_t from, int64_t to,
				  int *status);
/* A stored selector's samples as one profile per interval over [from,
 * to): cp_store_select_intervals, whose one group *out is (*n = 0 when
 * none holds samples).  Returns the status (EXIT_OK, else the error said). */
int load_intervals(const char *verb, const char *arg, struct store_args *a, int64_t from, int64_t to,
		   struct cp_store_intervals **out, size_t *n);
/* Is arg a profile file rather than a selector? */
bool is_file_arg(const char *arg);

/* A size option (--max-store-size, --spool-size): more than 0, at most max;
 * EXIT_OK or a usage error naming opt, with example (printed). */
int parse_size_option(const char *verb, const char *opt, const char *example, const char *arg, uint64_t max,
		      uint64_t *out);
/* --max-store-size SIZE: parse_size_option's, for every command that has it. */
int parse_max_store_size(const char *verb, const char *arg, uint64_t *out);
/* --downsample POLICY (NULL: CP_DOWNSAMPLE_DEFAULT) for the commands that
 * write to a store: EXIT_OK or a usage error (printed). */
int parse_downsample(const char *verb, const char *arg, struct cp_downsample *out);
/* --downsample of a command that may also write to a server (remote) or a
 * file (no_store): there, none (an arg from the command line, not from_file,
 * is a usage error); else parse_downsample's. */
int downsample_option(const char *verb, const char *arg, bool from_file, bool remote, bool no_store,
		      struct cp_downsample *out);
/* The local store's settings as lines of a --print-config section (p NULL:
 * no downsample line). */
void print_store_settings(FILE *f, int64_t retention, uint64_t max_store, const struct cp_downsample *p);
/* --off-cpu-min DUR (0 or more) or, period set, --off-cpu-period DUR (1ms to
 * 1s), for the commands that sample: EXIT_OK or a usage error (printed). */
int parse_offcpu_duration(const char *verb, bool period, const char *arg, int64_t *out);
/* Each pid has a /proc entry: EXIT_OK, or EXIT_FAIL naming the first that has not. */
int check_pids_exist(const char *verb, const uint32_t *pids, size_t n);
/* ---- the configuration file (cmd/util_config.c) ---- */
/* The file in effect (NULL: none): --config FILE, else $CPROF_CONFIG (empty:
 * none), else SYSCONFDIR/cprof/cprof.yaml when it exists. */
extern const char *config_file;
/* argv index of the first argument from the command line; before it, the
 * file's settings as options */
extern int config_end;
/* Puts the file's settings for command c before its arguments (argv[0]
 * stays first).  EXIT_OK, or an exit code after printing (a setting that is
 * no option, a file that is not YAML). */
int config_apply(const struct cmd *c, int *argc, char ***argv);
/* Did the option getopt just returned come from the file? */
bool from_config(void);

/* ---- logging: lib/log.h (cp_log, cp_log_level) ---- */
/* --log-level error|warn|info|debug: EXIT_OK or a usage error (printed). */
int parse_log_level(const char *verb, const char *arg);

/* record and top: the debuginfod servers to fetch debug files from (cmd/util_sampling.c: $DEBUGINFOD_URLS is taken
 * out of the environment at start-up, as libdw must not fetch on the sampling path). */
struct debuginfod_opt {
	const char *urls; /* --debuginfod */
	bool off;         /* --no-debuginfod */
	const char *env;  /* $DEBUGINFOD_URLS (a copy kept for the process; NULL: unset or empty) */
};

/* Is any of these processes alive? */
bool pids_alive(const uint32_t *pids, size_t n);

/* ---- the sampling options that record and top share (perf's record_opts) ----
 * What to sample (the target: --all, -p PID, --cgroup PATH, -- CMD) and how (-F, --idle,
 * --off-cpu, --no-kernel, --no-runtimes, --debuginfo-path, --max-memory, --debuginfod, --no-debuginfod).  The
 * configuration file's target applies only when the command line names none. */
enum { OPT_S_CGROUP = 1200, OPT_S_IDLE, OPT_S_OFFCPU, OPT_S_NO_KERNEL, OPT_S_DEBUGINFO, OPT_S_MAX_MEMORY,
       OPT_S_DEBUGINFOD, OPT_S_NO_DEBUGINFOD, OPT_S_NO_RUNTIMES };
#define SAMPLING_OPTIONS                                                    \
	{ "all", no_argument, NULL, 'a' },                                  \
	{ "pid", required_argument, NULL, 'p' },                            \
	{ "cgroup", required_argument, NULL, OPT_S_CGROUP },                \
	{ "freq", required_argument, NULL, 'F' },                           \
	{ "idle", no_argument, NULL, OPT_S_IDLE },                          \
	{ "off-cpu", no_argument, NULL, OPT_S_OFFCPU },                      \
	{ "no-kernel", no_argument, NULL, OPT_S_NO_KERNEL },                \
	{ "no-runtimes", no_argument, NULL, OPT_S_NO_RUNTIMES },            \
	{ "debuginfo-path", required_argument, NULL, OPT_S_DEBUGINFO },     \
	{ "max-memory", required_argument, NULL, OPT_S_MAX_MEMORY },        \
	{ "debuginfod", required_argument, NULL, OPT_S_DEBUGINFOD },        \
	{ "no-debuginfod", no_argument, NULL, OPT_S_NO_DEBUGINFOD }
struct sampling_args {
	bool all, idle, offcpu, no_kernel, no_runtimes;
	int freq;                  /* Hz */
	const char *cgroup, *debuginfo;
	uint32_t *pids;            /* -p (malloc'ed) */
	size_t npids;
	char **cmd;                /* -- CMD ARGS (NULL: none) */
	uint64_t max_memory;
	struct debuginfod_opt dbgd;
	bool tuned;                /* how to sample was given on the command line (-F, --cgroup, --idle, ...) */
	/* the configuration file's target */
	bool cfg_all;
	const char *cfg_cgroup;
	uint32_t *cfg_pids;
	size_t cfg_npids;
};
/* The defaults: freq Hz, max_memory bytes, $DEBUGINFOD_URLS taken (debuginfod_env_take). */
void sampling_init(struct sampling_args *s, int freq, uint64_t max_memory);
/* Takes opt when it is one of SAMPLING_OPTIONS: true, with *status EXIT_OK or the usage error's
 * (printed); false when it is not one. */
bool sampling_option(const char *verb, struct sampling_args *s, int opt, char *arg, int *status);
/* After the options: cmd (NULL: none) as the target -- CMD, the file's target when the command
 * line names none, and at most one of --all, -p and -- CMD: EXIT_OK or a usage error (printed). */
int sampling_finish(const char *verb, struct sampling_args *s, char **cmd);
/* The recorder's options for them (*ro zeroed first; the caller adds its own). */
struct cp_recorder_opts;
void sampling_recorder_opts(const char *verb, const struct sampling_args *s, struct cp_recorder_opts *ro);
void sampling_release(struct sampling_args *s);

#endif

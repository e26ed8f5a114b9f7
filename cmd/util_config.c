/* SPDX-License-Identifier: MIT */
/* The configuration file (by default SYSCONFDIR/cprof/cprof.yaml) applied to
 * a command: its settings become options placed before the command line's,
 * so that the command line wins; data, remote and token-file become the
 * defaults $CPROF_DATA, $CPROF_REMOTE and $CPROF_TOKEN_FILE give (unless
 * the environment has them), as they are defaults rather than choices. */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../lib/error.h"
#include "../lib/settings.h"
#include "../lib/util.h"
#include "cmd.h"

const char *config_file;
int config_end = 1;
static char config_path[4096];
static char **config_argv; /* the arguments config_apply made */

/* not settings: what a file cannot mean */
static bool excluded(const char *key)
{
	return !strcmp(key, "help") || !strcmp(key, "config") || !strcmp(key, "print-config");
}

static const struct option *find_opt_any(const struct cmd *c, const char *key)
{
	for (const struct option *o = c->options; o && o->name; o++)
		if (!strcmp(o->name, key))
			return o;
	return NULL;
}

static const struct option *find_opt(const struct cmd *c, const char *key)
{
	if (excluded(key))
		return NULL;
	for (const struct option *o = c->options; o && o->name; o++)
		if (!strcmp(o->name, key))
			return o;
	return NULL;
}

/* the settings cprof serve reads itself from the file it is given */
static bool serve_reads(const char *key)
{
	static const char *const keys[] = { "listen", "data", "retention", "token-file", "tls-cert", "tls-key",
					    "max-body", "max-decompressed", "header-timeout", "downsample", NULL };

	for (size_t i = 0; keys[i]; i++)
		if (!strcmp(keys[i], key))
			return true;
	return false;
}

static bool is_true(const char *v, bool *out)
{
	static const char *const yes[] = { "true", "yes", "on", "1", NULL }, *const no[] = { "false", "no", "off", "0", NULL };

	for (size_t i = 0; yes[i]; i++)
		if (!strcasecmp(v, yes[i]))
			return *out = true;
	for (size_t i = 0; no[i]; i++)
		if (!strcasecmp(v, no[i]))
			return !(*out = false);
	return false;
}

/* --config FILE on the command line (before any "--"; -c FILE where the
 * command has it), else NULL */
static const char *config_arg(const struct cmd *c, int argc, char **argv)
{
	const struct option *o = find_opt_any(c, "config");
	char sh = o && o->val > ' ' && o->val < 127 ? (char)o->val : 0;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--"))
			break;
		if (!strcmp(argv[i], "--config") && i + 1 < argc)
			return argv[i + 1];
		if (!strncmp(argv[i], "--config=", 9))
			return argv[i] + 9;
		if (sh && argv[i][0] == '-' && argv[i][1] == sh)
			return argv[i][2] ? argv[i] + 2 : i + 1 < argc ? argv[i + 1] : NULL;
	}
	return NULL;
}

static char *dupf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *dupf(const char *fmt, ...)
{
	va_list ap;
	char *s = NULL;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&s, fmt, ap);
	va_end(ap);
	return n < 0 ? NULL : s;
}

/* $CPROF_DATA, $CPROF_REMOTE, $CPROF_TOKEN_FILE from the file: the
 * environment wins (an empty variable counts as unset), and a command's
 * section over the top level. */
static const char *env_vars[] = { "CPROF_DATA", "CPROF_REMOTE", "CPROF_TOKEN_FILE" };
static bool env_from_file[3];

static int env_default(int which, const char *value)
{
	const char *now = getenv(env_vars[which]);

	if (now && *now && !env_from_file[which])
		return 0;
	env_from_file[which] = true;
	return setenv(env_vars[which], value, 1) ? -errno : 0;
}

int config_apply(const struct cmd *c, int *argc, char ***argv)
{
	const char *sections[32], *path, *env = getenv("CPROF_CONFIG");
	struct cp_config_opts o = { NULL, 0 };
	char **nargv = NULL, *text = NULL;
	size_t ns = 0, len = 0, nadd = 0;
	bool explicit_arg;
	int err, status = EXIT_OK;

	config_end = 1;
	config_file = NULL;
	path = config_arg(c, *argc, *argv);
	explicit_arg = path != NULL;
	if (!path && env)
		path = env[0] ? env : NULL; /* CPROF_CONFIG= : no file */
	if (!path && !env) {
		snprintf(config_path, sizeof(config_path), "%s/cprof/cprof.yaml", CP_SYSCONFDIR);
		if (access(config_path, F_OK) != 0)
			return EXIT_OK; /* none installed */
		if (access(config_path, R_OK) != 0 && errno == EACCES)
			return EXIT_OK; /* root's (mode 0600): not for this user */
		path = config_path;
	}
	if (!path)
		return EXIT_OK;
	if ((err = cp_read_file(path, 1 << 20, (uint8_t **)&text, &len)))
		return fail(c->name, "configuration %s: %s", path, cp_errmsg(err));
	for (size_t i = 0; commands[i] && ns + 1 < sizeof(sections) / sizeof(*sections); i++)
		sections[ns++] = commands[i]->name;
	sections[ns] = NULL;
	err = cp_config_opts_parse(text, len, path, sections, &o);
	free(text);
	if (err)
		return usage_error(c->name, "%s", cp_errmsg(err));
	/* every setting is an option of its command, or of some command */
	for (size_t i = 0; i < o.n; i++) {
		const struct cp_config_opt *e = &o.v[i];
		bool known = false;

		if (e->section) {
			const struct cmd *sc = find_cmd(e->section);

			known = sc && find_opt(sc, e->key);
			if (!known) {
				status = usage_error(c->name, "%s:%zu: unknown setting '%s' in %s: not an option of cprof %s "
							      "(cprof %s -h)",
						     path, e->line, e->key, e->section, e->section, e->section);
				goto out;
			}
			continue;
		}
		for (size_t k = 0; commands[k] && !known; k++)
			known = find_opt(commands[k], e->key) != NULL;
		if (!known) {
			status = usage_error(c->name, "%s:%zu: unknown setting '%s': not an option of any cprof command",
					     path, e->line, e->key);
			goto out;
		}
	}
	config_file = path;
	/* argv[0], the file's settings (the top level first, then the
	 * command's section, so the section wins), then the command line */
	nargv = calloc((size_t)*argc + 2 * o.n + 2, sizeof(*nargv));
	if (!nargv) {
		status = fail(c->name, "out of memory");
		goto out;
	}
	nargv[0] = (*argv)[0];
	nadd = 1;
	if (!strcmp(c->name, "serve") && !explicit_arg) {
		/* serve reads the file itself too: its scrape jobs and settings */
		if (!(nargv[nadd++] = dupf("--config=%s", path)))
			goto nomem;
	}
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < o.n; i++) {
			const struct cp_config_opt *e = &o.v[i];
			const struct option *op;
			bool on;

			if (pass == 0 ? e->section != NULL : !e->section || strcmp(e->section, c->name))
				continue;
			if (!(op = find_opt(c, e->key)))
				continue; /* another command's */
			if (!strcmp(c->name, "serve") && !e->section && serve_reads(e->key))
				continue;
			if (strcmp(c->name, "serve") && (!strcmp(e->key, "data") || !strcmp(e->key, "remote") ||
							 !strcmp(e->key, "token-file"))) {
				if (env_default(e->key[0] == 'd' ? 0 : e->key[0] == 'r' ? 1 : 2, e->value))
					goto nomem;
				continue;
			}
			if (op->has_arg == no_argument) {
				if (!is_true(e->value, &on)) {
					status = usage_error(c->name, "%s:%zu: %s wants true or false, not '%s'", path,
							     e->line, e->key, e->value);
					goto out;
				}
				if (on && !(nargv[nadd++] = dupf("--%s", e->key)))
					goto nomem;
				continue;
			}
			if (!(nargv[nadd++] = dupf("--%s=%s", e->key, e->value)))
				goto nomem;
		}
	}
	config_end = (int)nadd;
	for (int i = 1; i < *argc; i++)
		nargv[nadd++] = (*argv)[i];
	nargv[nadd] = NULL;
	*argc = (int)nadd;
	*argv = nargv; /* lives as long as the process (reachable from here) */
	config_argv = nargv;
	nargv = NULL;
	goto out;
nomem:
	status = fail(c->name, "out of memory");
out:
	if (nargv) /* failed: only the file's settings are in it */
		for (size_t i = 1; i < nadd; i++)
			free(nargv[i]);
	free(nargv);
	cp_config_opts_release(&o);
	return status;
}

bool from_config(void)
{
	return optind <= config_end;
}

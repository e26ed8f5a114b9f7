/* SPDX-License-Identifier: MIT */
/* cprof: global options, the command table, dispatch, help, exit codes. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../lib/error.h"
#include "../lib/render/render.h"
#include "../lib/util.h"
#include "cmd.h"

static int run_help(int argc, char **argv);
static const struct option help_options[] = { { "help", no_argument, NULL, 'h' }, { NULL, 0, NULL, 0 } };
static const struct cmd cmd_help = {
	"help", "show help for cprof or a command", run_help, help_options, "h",
	"usage: cprof help [COMMAND]\n"
	"\n"
	"Without a command, list the commands. With one, show its manual page\n"
	"(man cprof-COMMAND) on a terminal, or its usage otherwise.\n",
	.formats = NULL, /* no --format */
};

const struct cmd *const commands[] = {
	&cmd_record, &cmd_serve, &cmd_scrape, &cmd_import, &cmd_query, &cmd_merge, &cmd_diff, &cmd_sql, &cmd_top, &cmd_help, NULL,
};

static const char main_usage[] =
	"usage: cprof [--version] [-h | --help] COMMAND [ARGS]\n"
	"\n"
	"cprof is a continuous profiler: it records, stores, merges and compares\n"
	"CPU and memory profiles in the pprof format.\n"
	"\n"
	"Commands:\n";

const struct cmd *find_cmd(const char *name)
{
	size_t i;

	for (i = 0; commands[i]; i++)
		if (!strcmp(commands[i]->name, name))
			return commands[i];
	return NULL;
}

static size_t edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), i, j, prev[64], cur[64];

	if (la >= 63 || lb >= 63)
		return 64;
	for (j = 0; j <= lb; j++)
		prev[j] = j;
	for (i = 1; i <= la; i++) {
		cur[0] = i;
		for (j = 1; j <= lb; j++) {
			size_t sub = prev[j - 1] + (a[i - 1] != b[j - 1]), del = prev[j] + 1, ins = cur[j - 1] + 1;

			cur[j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
		}
		memcpy(prev, cur, (lb + 1) * sizeof(*prev));
	}
	return prev[lb];
}

static int unknown_command(const char *name)
{
	const struct cmd *best = NULL;
	size_t bestd = 3, i;

	for (i = 0; commands[i]; i++) {
		size_t d = edit_distance(name, commands[i]->name);

		if (!strncmp(name, commands[i]->name, strlen(name)) && strlen(name) >= 2)
			d = 1;
		if (d < bestd) {
			bestd = d;
			best = commands[i];
		}
	}
	if (best)
		fprintf(stderr, "cprof: '%s' is not a cprof command. Did you mean '%s'?\n", name, best->name);
	else
		fprintf(stderr, "cprof: '%s' is not a cprof command. See 'cprof help'.\n", name);
	return EXIT_USAGE;
}

static int list_commands(void)
{
	size_t i;

	fputs(main_usage, stdout);
	for (i = 0; commands[i]; i++)
		printf("   %-8s %s\n", commands[i]->name, commands[i]->summary);
	printf("\nSee 'cprof help COMMAND' or 'cprof COMMAND -h' for a command's options.\n");
	return flush_stdout(NULL);
}

static int list_options(const char *name)
{
	const struct cmd *c = find_cmd(name);
	const struct option *o;
	const char *s;

	if (!c)
		return unknown_command(name);
	for (o = c->options; o->name; o++)
		printf("--%s\n", o->name);
	for (s = c->shortopts; *s; s++)
		if (*s != ':' && *s != '+')
			printf("-%c\n", *s);
	return flush_stdout(NULL);
}

/* the values of a command's --format, one a line (for completion) */
static int list_formats(const char *name)
{
	const struct cmd *c = find_cmd(name);

	if (!c)
		return unknown_command(name);
	for (const struct cp_render_format *f = cp_render_formats; c->render_kind && f->name; f++)
		if (cp_render_format_find(f->name, c->render_kind))
			printf("%s\n", f->name);
	for (size_t i = 0; !c->render_kind && c->formats && c->formats[i]; i++)
		printf("%s\n", c->formats[i]);
	return flush_stdout(NULL);
}

static int run_help(int argc, char **argv)
{
	const struct cmd *c;
	char page[64];
	int opt;

	optind = 1;
	while ((opt = next_option(&cmd_help, argc, argv)) != -1) {
		if (opt == 'h')
			return show_usage(&cmd_help);
		return EXIT_USAGE;
	}
	if (optind >= argc)
		return list_commands();
	if (argc - optind > 1)
		return usage_error("help", "too many arguments: give one command");
	c = find_cmd(argv[optind]);
	if (!c)
		return unknown_command(argv[optind]);
	if (isatty(STDOUT_FILENO)) {
		snprintf(page, sizeof(page), "cprof-%s", c->name);
		fflush(stdout);
		execlp("man", "man", page, (char *)NULL);
		/* no man, or no page installed: fall back to the usage text */
	}
	return show_usage(c);
}

/* -h or --help among a command's options: its usage, whatever the file says */
static bool wants_help(int argc, char **argv)
{
	for (int i = 1; i < argc && strcmp(argv[i], "--"); i++)
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))
			return true;
	return false;
}

int main(int argc, char **argv)
{
	const struct cmd *c;

	if (argc < 2) {
		list_commands();
		return EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")) {
		printf("cprof %s\n", PACKAGE_VERSION);
		return flush_stdout(NULL);
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))
		return list_commands();
	if (!strcmp(argv[1], "--list-commands")) {
		for (size_t i = 0; commands[i]; i++)
			printf("%s\n", commands[i]->name);
		return flush_stdout(NULL);
	}
	if (!strcmp(argv[1], "--list-formats")) {
		if (argc != 3)
			return usage_error(NULL, "--list-formats wants one command name");
		return list_formats(argv[2]);
	}
	if (!strcmp(argv[1], "--list-options")) {
		if (argc != 3)
			return usage_error(NULL, "--list-options wants one command name");
		return list_options(argv[2]);
	}
	if (argv[1][0] == '-')
		return usage_error(NULL, "unknown option '%s'", argv[1]);
	c = find_cmd(argv[1]);
	if (!c)
		return unknown_command(argv[1]);
	argc--;
	argv++;
	if (c->run != run_help && !wants_help(argc, argv)) {
		int status = config_apply(c, &argc, &argv);

		if (status != EXIT_OK)
			return status;
	}
	optind = 1;
	return c->run(argc, argv);
}

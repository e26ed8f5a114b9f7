/* SPDX-License-Identifier: MIT */
/* cprof sql: SQL over the stored profiles (lib/store/sql.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/error.h"
#include "../lib/store/sql.h"
#include "../lib/util.h"
#include "cmd.h"

static const struct option options[] = {
	{ "data", required_argument, NULL, OPT_DATA },
	{ "format", required_argument, NULL, 'f' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static int run_sql(int argc, char **argv);

const struct cmd cmd_sql = {
	"sql", "query the stored samples and stacks with SQL", run_sql, options, "f:h",
	"usage: cprof sql [OPTIONS] SQL\n"
	"       cprof sql [OPTIONS] -        (the SQL from standard input)\n"
	"\n"
	"Run SQLite SQL over the local store.  Tables: samples (time, type, series,\n"
	"labels, comm, pid, node, exe, container, pod, stack, function, value, unit,\n"
	"sample_labels; hidden column selector) and frames (stack, depth, function,\n"
	"file, line, inlined, mapping, address); now() is the time in nanoseconds.\n"
	"Conditions on time, type, selector and the label columns are read through\n"
	"the store's indexes, e.g.:\n"
	"  cprof sql \"SELECT comm, sum(value) FROM samples\n"
	"             WHERE time > now() - 3600e9 GROUP BY comm\"\n"
	"\n"
	"      --data DIR        the store (default: $CPROF_DATA, /var/lib/cprof as root,\n"
	"                        else $XDG_DATA_HOME/cprof or ~/.local/share/cprof)\n"
	"  -f, --format FMT      {FORMATS} (default: table)\n"
	"  -h, --help            show this help\n"
	"\n"
	"Exit status: 0, 1 when the store cannot be read, 2 for a usage error or\n"
	"SQL that SQLite refuses.\n",
	.formats = cp_sql_formats,
};

#define SQL_MAX (16 << 20)

static int run_sql(int argc, char **argv)
{
	const char *data = NULL, *format = "table";
	enum cp_sql_format fmt;
	char dir[4096], *sql = NULL;
	uint8_t *buf = NULL;
	size_t len = 0;
	int opt, status, err;

	while ((opt = next_option(&cmd_sql, argc, argv)) != -1) {
		switch (opt) {
		case OPT_DATA: data = optarg; break;
		case 'f': format = optarg; break;
		case 'h': return show_usage(&cmd_sql);
		default: return EXIT_USAGE;
		}
	}
	if ((status = cmd_format_check(&cmd_sql, format)) || cp_sql_format_parse(format, &fmt))
		return status ? status : EXIT_USAGE;
	if (optind >= argc)
		return usage_error("sql", "no SQL: give a statement, e.g. \"SELECT count(*) FROM samples\", or - to read stdin");
	if (argc - optind > 1)
		return usage_error("sql", "too many arguments: give the SQL as one argument (quote it)");
	if ((status = store_dir("sql", data, dir, sizeof(dir))))
		return status;
	if (!strcmp(argv[optind], "-")) {
		if ((err = cp_read_file("-", SQL_MAX, &buf, &len)))
			return fail("sql", "cannot read the SQL from standard input: %s", cp_errmsg(err));
		if (!(sql = malloc(len + 1))) {
			free(buf);
			return fail("sql", "out of memory");
		}
		memcpy(sql, buf, len);
		sql[len] = 0;
		free(buf);
	} else if (!(sql = strdup(argv[optind]))) {
		return fail("sql", "out of memory");
	}
	if (!sql[strspn(sql, " \t\r\n;")]) {
		free(sql);
		return usage_error("sql", "no SQL: the statement is empty");
	}
	err = cp_sql_run(dir, sql, fmt, stdout);
	free(sql);
	if (err == -EINVAL) {
		fflush(stdout);
		fprintf(stderr, "cprof sql: %s\n", cp_errmsg(err));
		return EXIT_USAGE;
	}
	if (err) {
		fflush(stdout);
		return fail("sql", "%s", cp_errmsg(err));
	}
	return flush_stdout("sql");
}

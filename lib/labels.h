/* SPDX-License-Identifier: MIT */
/* A series' labels as they come in, checked: from a push (lib/ingest/,
 * lib/http/api.c) or from -l NAME=VALUE on the command line (cprof record,
 * scrape and import: one rule for all three). */
#ifndef CP_LABELS_H
#define CP_LABELS_H

#include <stddef.h>

/* One label, name=value (a series', a sample's, a scrape target's): the strings are borrowed, or
 * owned where the holder says so. */
struct cp_kv {
	const char *name, *value;
};

/* Labels with owned strings; { 0 } is an empty set. */
struct cp_labels {
	struct cp_kv *kv; /* name and value malloc'ed */
	size_t n, cap;
};
/* What one series may carry (Pyroscope takes 30 labels by default, names of
 * 1024 bytes and values of 2048): more is refused, not cut. */
#define CP_LABELS_MAX 64
#define CP_LABEL_NAME_MAX 1024
#define CP_LABEL_VALUE_MAX 2048
/* Adds name=value (copied); -EINVAL with a message for a bad label name, a
 * name given twice, a name or value over its length limit, or a series
 * over CP_LABELS_MAX labels; -ENOMEM. */
int cp_labels_add(struct cp_labels *l, const char *name, const char *value);
void cp_labels_release(struct cp_labels *l);

/* ---- -l NAME=VALUE ---- */

/* How many -l labels a command takes (it adds labels of its own: record's
 * comm, pid, exe...; scrape's job and instance). */
#define CP_LABEL_ARGS_MAX 32
/* Adds one -l NAME=VALUE (arg is not changed).  The rule, for every
 * command: NAME is a Prometheus label name, [A-Za-z_][A-Za-z0-9_]*, and
 * not one of the reserved __NAME (Prometheus keeps them for itself); VALUE
 * is any text up to CP_LABEL_VALUE_MAX bytes, empty too; one NAME at most
 * once; at most CP_LABEL_ARGS_MAX labels.  0, or -EINVAL with a message
 * that quotes arg; -ENOMEM. */
int cp_label_arg(struct cp_labels *l, const char *arg);
/* The configuration file's -l labels (defaults) under the command line's
 * (l): l becomes defaults' labels that l does not name, in their order,
 * then l's own.  0 (defaults is then released), or -EINVAL (more than
 * CP_LABEL_ARGS_MAX in all, with a message) or -ENOMEM, both unchanged. */
int cp_labels_take_defaults(struct cp_labels *l, struct cp_labels *defaults);

#endif
